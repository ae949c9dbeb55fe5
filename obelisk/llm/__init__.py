"""LLM adapters: the protocol an agent asks for solutions through, and the adapters
obelisk ships (scripted; OpenAI and Anthropic through their optional SDKs, imported only
when such an adapter is made)."""

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
from obelisk.llm.retry import RetryPolicy
from obelisk.llm.scripted import ScriptedLLM, ScriptExhausted

__all__ = [
    "LLM",
    "AnthropicLLM",
    "Failure",
    "LLMError",
    "OpenAILLM",
    "Refusal",
    "Reply",
    "RetryPolicy",
    "ScriptExhausted",
    "ScriptedLLM",
    "StreamItem",
    "StreamedCall",
    "StreamedOutput",
    "Usage",
]
