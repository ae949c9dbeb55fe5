"""The scripted adapter: deterministic answers from a list or a function, for tests,
examples and dry runs of whole agents."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from obelisk.core.text import plural
from obelisk.llm.answers import MAX_ANSWER_DEPTH, Unusable, depth_over, parse_answer
from obelisk.llm.base import (
    Failure,
    LLMError,
    Reply,
    StreamedCall,
    StreamedOutput,
    StreamItem,
    Usage,
)
from obelisk.llm.request import Request

__all__ = ["ScriptExhausted", "ScriptedLLM", "count_tokens"]

#: A script: answers in order, or a function from the request to the answer.
Script: TypeAlias = "Sequence[Any] | Callable[[Request], Any]"


class ScriptExhausted(LLMError):
    """The script has no answer left for a request (the loop ends the run ``failed``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, provider="scripted", failure=Failure.EXHAUSTED)


def count_tokens(text: str) -> int:
    """The scripted adapter's token count: one token per 4 characters, rounded up."""
    return (len(text) + 3) // 4


class ScriptedLLM:
    """An adapter answering from a script, deterministically.

    ``solutions`` answers tick requests, in order (or a function of the request); an
    answer that is a string is the LLM's raw text, which the loop parses (so a script can
    answer prose, or JSON cut short);
    ``latent`` answers latent sub-requests per tool name, in order (or a function of the
    request), never from ``solutions``. Usage is :func:`count_tokens` of the rendered
    request and of the answer as JSON. Running out raises :class:`ScriptExhausted`.
    The adapter keeps its place in each list: use one adapter per run.
    """

    def __init__(self, solutions: Script = (),
                 latent: Mapping[str, Script] | None = None, *,
                 delays: float | Sequence[float] = 0.0) -> None:
        self._solutions = solutions
        self._latent = dict(latent or {})
        self._delays = delays
        self._positions: dict[str | None, int] = {}  # the script's cursor, per list
        self.requests: list[Request] = []  # every request received, in order

    def __repr__(self) -> str:
        return f"ScriptedLLM(<{len(self.requests)} requests answered or asked>)"

    def _next(self, script: Script | None, key: str | None, what: str,
              request: Request) -> Any:
        self.requests.append(request)
        if script is None:
            raise ScriptExhausted(f"{what}: the script has no answers for it "
                                  "(pass latent={tool: [answers]})")
        if callable(script):
            return script(request)
        position = self._positions.get(key, 0)
        if position >= len(script):
            raise ScriptExhausted(
                f"{what}: the script's {plural(len(script), 'answer')} {'is' if len(script) == 1 else 'are'} used up "
                "(add answers to the script, or lower max_ticks)")
        self._positions[key] = position + 1
        return script[position]

    @staticmethod
    def _reply(request: Request, value: Any) -> Reply:
        asked = count_tokens(request.render())
        if depth_over(value):  # checked before json.dumps recurses into it; its tokens
            # counted as the least that nesting past the limit takes ("[]" a level)
            return Reply(Unusable(f"the answer is nested more than {MAX_ANSWER_DEPTH} "
                                  "levels deep"),
                         Usage(asked, count_tokens("[]" * (MAX_ANSWER_DEPTH + 1))))
        return Reply(value, Usage(asked, count_tokens(json.dumps(value, ensure_ascii=False))))

    async def solve(self, request: Request) -> Reply:
        """The next scripted solution; raises :class:`ScriptExhausted` when none is left."""
        value = self._next(self._solutions, None, "solution request", request)
        return self._reply(request, value)

    async def latent(self, request: Request) -> Reply:
        """The next scripted answer for the sub-request's tool; raises
        :class:`ScriptExhausted` when the tool has none left."""
        tool = request.tool or ""
        value = self._next(self._latent.get(tool), "latent:" + tool,
                           f"latent request for tool {tool!r}", request)
        return self._reply(request, value)

    def _delay(self, number: int) -> float:
        if isinstance(self._delays, (int, float)):
            return float(self._delays)
        if not self._delays:
            return 0.0
        return float(self._delays[min(number, len(self._delays) - 1)])

    async def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """The next scripted solution, streamed: each call, then the output with the
        solution as a whole (a string solution is raw text: parsed first, as a provider's
        stream would be)."""
        reply = await self.solve(request)
        value = parse_answer(reply.value) if isinstance(reply.value, str) else reply.value
        if isinstance(value, Unusable):
            yield StreamedOutput(None, reply.usage, unusable=value)
            return
        calls = value.get("calls", []) if isinstance(value, dict) else []
        for number, call in enumerate(calls if isinstance(calls, list) else []):
            delay = self._delay(number)
            if delay > 0:
                await asyncio.sleep(delay)
            yield StreamedCall(call)
        yield StreamedOutput(value.get("output") if isinstance(value, dict) else None,
                             reply.usage, solution=value)
