"""A streamed tick's part of the typed event stream: its journal's steps (admitted,
started, decided, invoked, finished) told to a :class:`PlanFollower` as the machine's run
events, whatever journal records them."""

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
    """``inner`` (a :class:`StreamJournal`), its steps also told to ``follower``."""

    def __init__(self, inner: StreamJournal, follower: PlanFollower,
                 on_closed: Callable[[Any, Usage, float | None], None],
                 problems: Callable[[Any], list[Any]]) -> None:
        self.inner, self.follower, self.on_closed = inner, follower, on_closed
        self.problems = problems  # the loop closes the run only for a valid solution
        self.steps: list[StreamStep] = inner.steps
        self.begun = time.monotonic()
        self.first_call: float | None = None  # seconds from the request to the first call

    def follow(self, plan: CompiledPlan) -> None:
        self.inner.follow(plan)

    def admitted(self, call: Any, plan: CompiledPlan) -> None:
        self.inner.admitted(call, plan)
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
        if not self.problems(solution):
            self.follower(Closed())
