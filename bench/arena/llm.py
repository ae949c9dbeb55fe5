"""The simulated LLM: scripted answers, given at the pace of a latency model.

Every contender asks the same model: the time to the first token, then a time per output
token; a request costs no time of its own (no prefill). Tokens are counted as obelisk's
scripted adapter counts them: one per four characters of the rendered request and of the
answer as JSON (:func:`obelisk.llm.scripted.count_tokens`).

:class:`SimulatedLLM` is an obelisk adapter (the ``obelisk.llm.LLM`` protocol) built on
:class:`obelisk.llm.ScriptedLLM`, which answers and counts; this one only waits. Its
``stream`` hands each call on when the last of its characters has been generated, so a
streaming run can start a call while later ones are still being written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from attrs import frozen

from obelisk.llm import Reply, Request, ScriptedLLM, StreamedCall, StreamedOutput, StreamItem
from obelisk.llm.scripted import count_tokens

__all__ = ["Latency", "SimulatedLLM", "call_ends", "count_tokens", "sleep_until"]


@frozen
class Latency:
    """The model's pace: ``first_token`` seconds, then ``per_token`` seconds a token."""

    first_token: float = 0.4
    per_token: float = 0.02

    def until(self, tokens: float) -> float:
        """Seconds from the request to the ``tokens``-th output token."""
        return self.first_token + self.per_token * tokens


async def sleep_until(deadline: float) -> None:
    """Sleep until the event loop's clock reads ``deadline`` (at once if it has passed)."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, deadline - loop.time()))


def call_ends(solution: dict[str, Any]) -> list[int]:
    """Where each call of ``solution`` ends in its JSON text (``json.dumps``, the text the
    answer's tokens are counted on), in characters."""
    opening = '{"calls": ['
    ends, position = [], len(opening)
    for number, call in enumerate(solution["calls"]):
        position += (2 if number else 0) + len(json.dumps(call, ensure_ascii=False))
        ends.append(position)
    whole = json.dumps(solution, ensure_ascii=False)
    if not whole.startswith(opening) or (ends and whole[ends[-1]] != "]"):
        raise ValueError("a solution's text must start with its calls: "
                         '{"calls": [...], "output": ...}')
    return ends


class SimulatedLLM:
    """An obelisk adapter answering from ``solutions`` (a list, or a function of the
    request) after the time ``latency`` gives its answer's tokens; ``requests`` counts
    what it was asked."""

    def __init__(self, solutions: Sequence[Any] | Callable[[Request], Any],
                 latency: Latency) -> None:
        self._script = ScriptedLLM(solutions)
        self.latency = latency

    @property
    def requests(self) -> list[Request]:
        """Every request asked so far, in order."""
        return self._script.requests

    async def solve(self, request: Request) -> Reply:
        """The next solution, once all its tokens are out."""
        start = asyncio.get_running_loop().time()
        reply = await self._script.solve(request)
        await sleep_until(start + self.latency.until(reply.usage.output_tokens))
        return reply

    async def latent(self, request: Request) -> Reply:
        """Latent calls are not simulated: the tasks' tools all have activities."""
        return await self._script.latent(request)

    async def stream(self, request: Request) -> AsyncIterator[StreamItem]:
        """The next solution, each call handed on as soon as its last token is out."""
        start = asyncio.get_running_loop().time()
        reply = await self._script.solve(request)
        solution = reply.value
        for call, end in zip(solution["calls"], call_ends(solution), strict=True):
            await sleep_until(start + self.latency.until(end / 4))
            yield StreamedCall(call)
        await sleep_until(start + self.latency.until(reply.usage.output_tokens))
        yield StreamedOutput(solution["output"], reply.usage)
