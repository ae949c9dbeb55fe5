"""Rebuilding a run from its events, through the machine's own functions.

:func:`replay` applies a recorded sequence of run events to ``begin``'s state with
``advance`` (for Started), ``decide``, ``complete``, ``cancel``, ``admit`` and ``close``:
no rule is written twice, so a replayed run is the run. What an activity did arrives in
the events (outcomes, dates, verdicts); nothing is invoked.
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.interpreters.admission import admit, close
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.cancel import cancel
from obelisk.interpreters.collector import gc_keep
from obelisk.interpreters.events import (
    Admitted,
    Cancelled,
    Closed,
    Decided,
    Finished,
    RunEvent,
    Started,
    Status,
)
from obelisk.interpreters.machine import advance, begin, complete, decide
from obelisk.interpreters.state import RunState


def replay(plan: CompiledPlan, context: Context | None, events: Iterable[RunEvent], *,
           isolate_invalid: bool = False, open: bool = False) -> RunState:
    """The state a run reached after ``events`` (begun with the same plan, context and
    options).

    A Started event for a node still PENDING advances the machine, which starts that
    node and the rest of its batch (their own Started events then change nothing). The
    state is returned as it was after the last event: to resume, or to finish a complete
    record, ``advance`` it (for a complete record that only makes the final skips; no
    call is ready). Raises ``KeyError`` for a Decided event about a call not started, and
    whatever the machine raises for an event that does not fit the run (``ValueError``
    for completing a call that is not running).
    """
    return replay_open(plan, context, events, isolate_invalid=isolate_invalid,
                       open=open).state


@frozen
class Replayed:
    """A replayed run and the calls it left under way: ``undecided`` were started and
    wait for the approval hook's answer (only when ``approvals``), ``running`` were
    started (and approved) and have no outcome yet. Both in the order they started."""

    state: RunState
    undecided: tuple[Invocation, ...]
    running: tuple[Invocation, ...]

    def pick_up(self) -> tuple[tuple[Invocation, ...], tuple[Invocation, ...]]:
        """``running`` and ``undecided``, for a run that resumes from this replay (two
        runs may resume from one replay: whoever is handed a call gets a copy)."""
        return self.running, self.undecided


def replay_open(plan: CompiledPlan, context: Context | None, events: Iterable[RunEvent], *,
                isolate_invalid: bool = False, open: bool = False,
                approvals: bool = False) -> Replayed:
    """As :func:`replay`, also returning the invocations a resumed run must pick up.

    ``approvals``: the run had an approval hook, so a started call runs only after a
    Decided event; without one, a started call is running at once.
    """
    return _replayed(begin(plan, context, isolate_invalid=isolate_invalid, open=open),
                     events, approvals)


def replay_more(replayed: Replayed, events: Iterable[RunEvent], *,
                approvals: bool = False) -> Replayed:
    """``replayed`` continued with further ``events``: a replay made in steps is the replay
    made at once (a display or a streamed tick that follows a run as it goes folds each
    event once, instead of replaying from the start each time)."""
    return _replayed(replayed.state, events, approvals, replayed.undecided, replayed.running)


def _replayed(state: RunState, events: Iterable[RunEvent], approvals: bool,
              undecided_before: Iterable[Invocation] = (),
              running_before: Iterable[Invocation] = ()) -> Replayed:
    undecided = {invocation.node: invocation for invocation in undecided_before}
    running = {invocation.node: invocation for invocation in running_before}
    for event in events:
        match event:
            case Started(node=node):
                if state.status[node] is Status.PENDING:
                    state, started = advance(state)
                    for invocation in started:
                        (undecided if approvals else running)[invocation.node] = invocation
            case Decided(node=node, verdict=verdict):
                pending = undecided.pop(node) if node in undecided else running.pop(node)
                state, next_step = decide(state, pending, verdict)
                if next_step is not None:
                    running[node] = next_step
            case Finished(node=node, outcome=outcome, date=date):
                state = complete(state, node, outcome, date)
                gc_keep()
                running.pop(node, None)
            case Cancelled():
                state = cancel(state)
                running.clear()
                undecided.clear()
            case Admitted(plan=extended):
                state = admit(state, extended)
            case Closed(plan=whole):
                state = close(state, whole)
            case _:  # pragma: no cover
                raise TypeError(f"not a run event: {event!r}")
    return Replayed(state, tuple(undecided.values()), tuple(running.values()))
