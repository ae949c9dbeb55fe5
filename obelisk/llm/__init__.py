"""LLM adapters: the protocol an agent asks for solutions through, and the adapters
obelisk ships (scripted; OpenAI and Anthropic through their optional SDKs, imported only
when such an adapter is made)."""

from obelisk.llm.answers import MAX_ANSWER_DEPTH, Unusable
from obelisk.llm.anthropic import AnthropicLLM
from obelisk.llm.base import (
    LLM,
    Failure,
    LLMError,
    Refusal,
    Reply,
    StreamedCall,
    StreamedOutput,
    StreamItem,
    Usage,
)
from obelisk.llm.openai import OpenAILLM
from obelisk.llm.request import TEMPLATE_VERSION, Request, Role, Turn
from obelisk.llm.retry import RetryPolicy
from obelisk.llm.scripted import ScriptedLLM, ScriptExhausted
from obelisk.llm.strict import drop_forced_nulls, strict_schema

__all__ = [
    "LLM",
    "MAX_ANSWER_DEPTH",
    "TEMPLATE_VERSION",
    "AnthropicLLM",
    "Failure",
    "LLMError",
    "OpenAILLM",
    "Refusal",
    "Reply",
    "Request",
    "RetryPolicy",
    "Role",
    "ScriptExhausted",
    "ScriptedLLM",
    "StreamItem",
    "StreamedCall",
    "StreamedOutput",
    "Turn",
    "Unusable",
    "Usage",
    "drop_forced_nulls",
    "strict_schema",
]
