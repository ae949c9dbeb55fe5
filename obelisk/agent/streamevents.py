"""A streamed tick's part of the typed event stream: its journal's steps (admitted,
started, decided, invoked, finished, closed) told to a :class:`PlanFollower` as the
machine's run events, whatever journal records them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from obelisk.agent.source import StreamJournal, StreamStep
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.plain import thaw
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.events import Admitted, Closed, RunEvent, Started
from obelisk.interpreters.follower import PlanFollower
from obelisk.interpreters.outcomes import Outcome
from obelisk.llm.base import Usage

__all__ = ["FollowedStream"]


class FollowedStream:
    """``inner`` (a :class:`StreamJournal`), its steps also told to ``follower``.

    ``on_closed(solution, usage, first_call, marks)`` is told the answer as its stream
    ends (a resumed tick's recorded end: ``usage`` None, ``marks`` its retelling's);
    ``whole(calls)`` compiles the calls as a whole and ``valid(solution)`` says whether
    the loop closes the run with it (the streamed loop's own two steps, asked again so the
    follower's machine is closed as the run's was).
    """

    def __init__(self, inner: StreamJournal, follower: PlanFollower,
                 on_closed: Callable[..., None],
                 whole: Callable[[list[Any]], CompiledPlan],
                 valid: Callable[[Any], bool]) -> None:
        self.inner, self.follower, self.on_closed = inner, follower, on_closed
        self.whole, self.valid = whole, valid
        self.steps: list[StreamStep] = inner.steps
        self.times: list[float | None] = inner.times
        self.seqs: list[int] = inner.seqs
        self.rows = follower.rows = inner.rows  # a recorded tick's keys and rows
        self.when: float | None = None  # the time of the last step retold
        self.calls: list[Any] = []
        self.begun = time.monotonic()
        self.first_call: float | None = None  # seconds from the request to the first call

    def follow(self, plan: CompiledPlan) -> None:
        self.inner.follow(plan)

    def retold(self, step: Any, index: int) -> None:
        """A recorded step of a resumed tick, told as the run told it: marked
        ``replayed``, at its recorded time (the replay's ``told``)."""
        follower = self.follower
        if index < len(self.times) and self.times[index] is not None:
            self.when = self.times[index]
        marks: dict[str, Any] = {"replayed": True}
        if self.when is not None:
            marks["time"] = self.when
        follower.marks = marks
        follower.retold_seq = self.seqs[index] if index < len(self.seqs) else None
        try:
            if isinstance(step, tuple):  # ("invoke", node), or ("close", solution)
                if step[0] == "invoke":
                    follower.invoked(step[1])
                else:
                    self.on_closed(step[1], None, None, marks)
                return
            if isinstance(step, Admitted):
                self.calls = [thaw(call) for call in step.plan.calls]
            follower(step)
            if isinstance(step, Started):
                for other in follower.batch():
                    follower(Started(other, {}))
        finally:
            if index == len(self.steps) - 1:
                follower.end()  # a tick that had ended: the skips its end made
            follower.marks, follower.retold_seq = {}, None

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
