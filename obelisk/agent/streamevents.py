"""A streamed tick's part of the typed event stream: its journal's steps (admitted,
started, decided, invoked, finished, closed) told to a :class:`PlanFollower` as the
machine's run events, whatever journal records them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from obelisk.agent.source import StreamJournal, StreamStep
from obelisk.compiler.nodes import CompiledPlan
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.events import Admitted, Closed, RunEvent, Started
from obelisk.interpreters.follower import PlanFollower
from obelisk.interpreters.outcomes import Outcome
from obelisk.llm.base import Usage

__all__ = ["FollowedStream"]


class FollowedStream:
    """``inner`` (a :class:`StreamJournal`), its steps also told to ``follower``.

    ``on_closed(solution, usage, first_call)`` is told the answer as its stream ends;
    ``whole(calls)`` compiles the calls as a whole and ``valid(solution)`` says whether
    the loop closes the run with it (the streamed loop's own two steps, asked again so the
    follower's machine is closed as the run's was).
    """

    def __init__(self, inner: StreamJournal, follower: PlanFollower,
                 on_closed: Callable[[Any, Usage, float | None], None],
                 whole: Callable[[list[Any]], CompiledPlan],
                 valid: Callable[[Any], bool]) -> None:
        self.inner, self.follower, self.on_closed = inner, follower, on_closed
        self.whole, self.valid = whole, valid
        self.steps: list[StreamStep] = inner.steps
        self.calls: list[Any] = []
        self.begun = time.monotonic()
        self.first_call: float | None = None  # seconds from the request to the first call

    def follow(self, plan: CompiledPlan) -> None:
        self.inner.follow(plan)

    def admitted(self, call: Any, plan: CompiledPlan) -> None:
        self.inner.admitted(call, plan)
        self.calls.append(call)
        if self.first_call is None:
            self.first_call = time.monotonic() - self.begun
        self.follower(Admitted(plan))

    def started(self, node: int) -> None:
        self.inner.started(node)
        self.follower(Started(node, {}))
        for other in self.follower.batch():  # the journal is told the batch's first only
            self.follower(Started(other, {}))

    def decided(self, event: RunEvent) -> None:
        self.inner.decided(event)
        self.follower(event)

    def invoke(self, invocation: Invocation) -> Outcome | None:
        stopped = self.inner.invoke(invocation)
        self.follower.started(invocation)
        return stopped

    def finished(self, event: RunEvent) -> None:
        self.inner.finished(event)
        self.follower(event)

    def closed(self, solution: Any, usage: Usage) -> None:
        self.inner.closed(solution, usage)
        self.on_closed(solution, usage, self.first_call)  # the answer, as it ends
        if self.valid(solution):
            self.follower(Closed(self.whole(list(self.calls))))
