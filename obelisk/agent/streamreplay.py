"""Replaying a recorded streamed tick (:mod:`obelisk.agent.stream`) through the machine.

A resumed tick is rebuilt from its journal with :func:`replay_tick`: each batch of
admitted calls compiled and judged as it was, the recorded starts, verdicts and outcomes
in between, and, when its stream had ended, the recorded solution judged again and the
run closed with the calls compiled as a whole. Late writers are found as the run found
them, against the state before each admission.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from obelisk.agent.judging import solution_error
from obelisk.agent.source import StreamStep
from obelisk.agent.streamstate import Streamed, admitted, whole_plan
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.interpreters.events import Admitted, Closed, RunEvent
from obelisk.interpreters.replaying import Replayed, replay_more, replay_open

__all__ = ["replay_tick"]


def replay_tick(run: Streamed, initial: CompiledPlan, context: Context,
                steps: list[StreamStep], on_plan: Callable[[CompiledPlan], None] | None, *,
                approvals: bool, told: Told | None = None) -> Replayed:
    """Rebuild a recorded streamed tick through the machine (``replay_open``) into
    ``run``; returns the replay, for the calls it left under way. ``told(step, index)``
    is told each step as the machine takes it (an admitted batch as its ``Admitted``
    event, an invocation as ``("invoke", node)``): the event stream's retelling."""
    replayed = replay_open(initial, context, (), isolate_invalid=True, open=True,
                           approvals=approvals)
    events: list[RunEvent] = []
    batch: list[Any] = []  # calls admitted together (no event recorded between them)
    for index, (kind, value) in enumerate(steps):
        if kind == "admit":
            batch.append(value)
            continue
        if batch:
            replayed, events = _admit(run, replayed, events, batch, on_plan, approvals)
            _tell(told, events[-1], index - 1)
            batch = []
        if kind == "close":
            closing = _closed(run, value)
            events.extend(closing)
            _tell(told, (kind, value), index)  # the answer, as its stream ended
            _tell(told, closing[0] if closing else None, index)
        elif kind == "invoke":
            _tell(told, (kind, value), index)
        else:
            events.append(value)
            _tell(told, value, index)
    if batch:
        replayed, events = _admit(run, replayed, events, batch, on_plan, approvals)
        _tell(told, events[-1], len(steps) - 1)
    replayed = replay_more(replayed, events, approvals=approvals)
    run.state = replayed.state
    run.journal.follow(run.state.plan)
    return replayed


#: Told each replayed step and its index in the steps.
Told = Callable[[Any, int], None]


def _tell(told: Told | None, step: Any, index: int) -> None:
    if told is not None and step is not None:
        told(step, index)


def _admit(run: Streamed, replayed: Replayed, events: list[RunEvent], calls: list[Any],
           on_plan: Callable[[CompiledPlan], None] | None,
           approvals: bool) -> tuple[Replayed, list[RunEvent]]:
    """Fold the events so far in, then admit ``calls`` as the run did."""
    replayed = replay_more(replayed, events, approvals=approvals)
    run.state = replayed.state
    plan = admitted(run, calls)
    if on_plan is not None:
        on_plan(plan)
    return replayed, [Admitted(plan)]


def _closed(run: Streamed, solution: Any) -> list[RunEvent]:
    """The stream's end as recorded: the solution judged again; the close, when valid."""
    run.open, run.answer = False, solution
    if isinstance(solution, dict):
        run.output = solution.get("output")
    run.invalid = solution_error(run.judge, solution)
    return [] if run.invalid is not None else [Closed(whole_plan(run))]
