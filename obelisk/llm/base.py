"""The LLM adapter protocol, its reply value and its errors.

An adapter turns a :class:`obelisk.llm.request.Request` into a :class:`Reply`: the
answer as JSON (a solution, or a latent call's result for a sub-request) and the tokens
it cost. ``solve`` answers a tick's request, ``latent`` a latent sub-request; ``stream``
(optional) yields complete call objects, then the output. Adapters raise
:class:`LLMError` when the provider failed after the adapter's retries, and
:class:`Refusal` when the model declined to answer.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from attrs import frozen

from obelisk.core.errors import ObeliskError
from obelisk.core.values import MISSING
from obelisk.llm.request import Request

if TYPE_CHECKING:
    from obelisk.llm.answers import Unusable

__all__ = [
    "LLM",
    "Failure",
    "LLMError",
    "Refusal",
    "Reply",
    "StreamItem",
    "StreamedCall",
    "StreamedOutput",
    "Usage",
    "redact",
]


@frozen
class Usage:
    """Tokens a reply cost, as the provider counted them (or as the scripted adapter does)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens)


@frozen
class Reply:
    """An adapter's answer: ``value`` the JSON answer (plain), ``usage`` its cost."""

    value: Any
    usage: Usage = Usage()


@frozen
class StreamedCall:
    """One complete call object of a streamed solution, in the order it was generated."""

    call: Any


@frozen
class StreamedOutput:
    """The end of a streamed solution: its ``output`` (None for null) and the usage.

    ``solution`` is the answer as a whole when the adapter has it (its calls as streamed),
    so that it is judged as a whole answer is (a missing ``output`` or ``calls``, another
    key); ``MISSING`` (the default) judges ``{"calls": <the calls>, "output": output}``.
    ``unusable`` says why the answer stopped being usable (text that is not JSON, a
    stream that ended before the solution closed, a refusal): the loop feeds it back as an
    ``InvalidSolution`` (:class:`obelisk.llm.answers.Unusable`).
    """

    output: Any
    usage: Usage = Usage()
    solution: Any = MISSING
    unusable: Unusable | None = None


#: What :meth:`LLM.stream` yields: calls, then exactly one output.
StreamItem = StreamedCall | StreamedOutput


class Failure(str, enum.Enum):
    """Why an adapter gave up."""

    RATE_LIMITED = "rate_limited"
    SERVER = "server"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    CLIENT = "client"
    MALFORMED = "malformed"
    EXHAUSTED = "exhausted"


class LLMError(ObeliskError):
    """The adapter failed after its retries; the agent loop ends the run as ``failed``.

    ``provider`` names the adapter (``openai``, ``anthropic``, ``scripted``), ``status``
    the last HTTP status (None without one), ``failure`` why, ``attempts`` how many
    requests were made, ``detail`` the message without the provider in front. The message never contains an API key: adapters pass every
    provider text through :func:`redact` first.
    """

    def __init__(self, message: str, *, provider: str, status: int | None = None,
                 failure: Failure = Failure.CLIENT, attempts: int = 1) -> None:
        self.provider = provider
        self.status = status
        self.failure = failure
        self.attempts = attempts
        self.detail = message  # what went wrong, without the provider in front
        where = provider + ("" if status is None else f" (HTTP {status})")
        super().__init__(f"{where}: {message}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class Refusal(LLMError):
    """The model declined to answer; ``reason`` is its own explanation."""

    def __init__(self, reason: str, *, provider: str) -> None:
        self.reason = reason
        super().__init__(f"the model refused: {reason}", provider=provider,
                         failure=Failure.CLIENT)


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every secret (and every 8-character piece of a long one) masked."""
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, "***")
        if len(secret) >= 16:  # a provider may echo a key truncated: mask its pieces too
            for start in range(0, len(secret) - 8, 4):
                text = text.replace(secret[start:start + 8], "***")
    return text


@runtime_checkable
class LLM(Protocol):
    """An LLM adapter: answers a tick's request and latent sub-requests."""

    async def solve(self, request: Request) -> Reply:
        """The solution ``{"calls": [...], "output": ...}`` for ``request``.

        Raises :class:`LLMError` (or :class:`Refusal`) when no solution could be had.
        """
        ...

    async def latent(self, request: Request) -> Reply:
        """The result of a latent call, for a sub-request built by
        :func:`obelisk.agent.request.build_latent_request`; raises :class:`LLMError`."""
        ...

    def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """The solution as it is generated: each complete call, then the output.

        Adapters that cannot stream raise ``NotImplementedError``.
        """
        ...
