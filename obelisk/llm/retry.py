"""Retries with exponential backoff for provider adapters, within a budget.

Each provider adapter classifies its SDK's exceptions into a :class:`Transient` (retried:
rate limits, 5xx, timeouts, dropped connections) or an :class:`LLMError` (given up at
once: bad requests, authentication). :func:`with_retries` runs one attempt after another
until one succeeds or the budget (:class:`RetryPolicy`) is spent. The sleep is injected, so
tests do not wait; delays are deterministic (no jitter) so a run can be replayed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TypeVar

from attrs import frozen

from obelisk.core.errors import ObeliskError
from obelisk.core.text import plural
from obelisk.interpreters.stream import span_event
from obelisk.llm.base import Failure, LLMError, redact

__all__ = [
    "DEFAULT_POLICY", "Malformed", "RetryPolicy", "Sleep", "Transient", "api_key_from",
    "retry_after_seconds", "with_retries",
]

T = TypeVar("T")

#: How the adapters wait between attempts (``asyncio.sleep``; tests pass a recorder).
Sleep = Callable[[float], Awaitable[None]]


@frozen
class RetryPolicy:
    """The retry budget: at most ``max_attempts`` requests; attempt ``n`` waits
    ``base_delay * 2**(n-1)`` seconds before the next, or what the server's
    ``retry-after`` asks, never more than ``max_delay``.

    ``timeout`` bounds each request as a whole, however slowly the server sends it: the
    whole answer, or a stream's opening and its first chunk. ``stream_timeout`` bounds a
    whole stream, from its opening to its last chunk. ``knobs`` are the
    names the give-up message tells the user to raise (the command line's options,
    ``--max-attempts`` and ``--timeout``, where it has them; none: it says try again)."""

    max_attempts: int = 4
    timeout: float = 60.0
    base_delay: float = 0.5
    max_delay: float = 30.0
    stream_timeout: float = 600.0
    knobs: tuple[str, ...] = ("max_attempts", "timeout")

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (from 1)."""
        wanted = retry_after if retry_after is not None else self.base_delay * 2 ** (attempt - 1)
        return max(0.0, min(wanted, self.max_delay))


#: The budget adapters use unless given another.
DEFAULT_POLICY = RetryPolicy()


class Transient(ObeliskError):
    """A failure worth another attempt; ``retry_after`` is the server's hint in seconds."""

    def __init__(self, message: str, *, failure: Failure, status: int | None = None,
                 retry_after: float | None = None) -> None:
        self.failure = failure
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


class Malformed(ObeliskError):
    """The provider answered, but not with usable JSON: retried once, then an error."""


#: A malformed answer is asked again this many times (once): a model that answers badly
#: twice in a row is unlikely to do better, and the loop's own feedback is the better fix.
MALFORMED_RETRIES = 1


def _raise(knobs: tuple[str, ...]) -> str:
    """The give-up message's hint: raise the budget (by these names), or try again."""
    if not knobs:
        return " (try again later)"
    return f" (raise {' or '.join(knobs)}, or try again later)"


async def with_retries(attempt: Callable[[], Awaitable[T]], *, provider: str,
                       policy: RetryPolicy, sleep: Sleep = asyncio.sleep,
                       secret: str | None = None) -> T:
    """The result of the first ``attempt()`` that succeeds.

    ``attempt`` raises :class:`Transient` for a retryable failure, :class:`Malformed` for
    an unusable answer, :class:`LLMError` to give up. Raises :class:`LLMError` (its text
    passed through :func:`redact` with ``secret``) when the budget is spent.
    """
    malformed = 0
    number = 0
    while True:
        number += 1
        try:
            return await attempt()
        except Transient as exc:
            if number >= policy.max_attempts:
                raise LLMError(
                    redact(f"gave up after {plural(number, 'attempt')}: {exc}", secret)
                    + _raise(policy.knobs),
                    provider=provider, status=exc.status, failure=exc.failure,
                    attempts=number) from None
            span_event("obelisk.retry", {"obelisk.attempt": number,
                                         "obelisk.failure": exc.failure.value})
            await sleep(policy.delay(number, exc.retry_after))
        except Malformed as exc:
            malformed += 1
            if malformed > MALFORMED_RETRIES or number >= policy.max_attempts:
                raise LLMError(
                    redact(f"the answer was not usable JSON {plural(malformed, 'time')}: {exc}",
                           secret),
                    provider=provider, failure=Failure.MALFORMED, attempts=number) from None
            span_event("obelisk.retry", {"obelisk.attempt": number,
                                         "obelisk.failure": Failure.MALFORMED.value})


def api_key_from(explicit: str | None, variable: str, provider: str) -> str:
    """The API key: ``explicit`` when given, else the environment ``variable``.

    Raises :class:`LLMError` naming the variable when there is neither.
    """
    key = explicit if explicit is not None else os.environ.get(variable)
    if not key:
        raise LLMError(f"no API key: set the environment variable {variable} or pass "
                       "api_key=", provider=provider, failure=Failure.CLIENT, attempts=0)
    return key


def retry_after_seconds(headers: object) -> float | None:
    """The ``retry-after`` header in seconds (numeric form only), or None."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    value = get("retry-after")
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: fall back to our own backoff
