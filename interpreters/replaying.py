"""Rebuilding a run from its events, through the machine's own functions.

:func:`replay` applies a recorded sequence of run events to ``begin``'s state with
``advance`` (for Started), ``decide``, ``complete``, ``cancel``, ``admit`` and ``close``:
no rule is written twice, so a replayed run is the run. What an activity did arrives in
the events (outcomes, dates, verdicts); nothing is invoked.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

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

    def settled(self) -> RunState:
        """The state with the skips the run makes once no call is left to finish:
        ``advance`` of a complete record only decides its last skips (a live display's
        final count). The replayed state as it is when ``advance`` would start a call (a
        record that stopped early)."""
        state, ready = advance(self.state)
        return self.state if ready else state


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
    folding = Folding(Replayed(state, tuple(undecided_before), tuple(running_before)),
                      approvals=approvals)
    for event in events:
        folding.more(event)
    return folding.replayed


def _step(state: RunState, event: RunEvent, approvals: bool,
          undecided: dict[int, Invocation], running: dict[int, Invocation]) -> RunState:
    """The state after ``event``; the calls under way (by node, in the order they
    started) updated in place."""
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
    return state


class Folding:
    """A replay made one event at a time, as :func:`replay_more` makes it, at a cost per
    event that does not grow with the calls under way (a follower of a live run: the
    calls running are kept by node, not copied into a new :class:`Replayed` each event).
    After a step that raised, it is not to be used again."""

    __slots__ = ("state", "approvals", "_undecided", "_running")

    def __init__(self, replayed: Replayed, *, approvals: bool = False) -> None:
        self.state = replayed.state
        self.approvals = approvals
        self._undecided = {invocation.node: invocation for invocation in replayed.undecided}
        self._running = {invocation.node: invocation for invocation in replayed.running}

    def more(self, event: RunEvent) -> None:
        """Fold one more event (raises what :func:`replay_more` raises for it)."""
        self.state = _step(self.state, event, self.approvals, self._undecided, self._running)

    def started(self, node: int) -> Invocation | None:
        """``node``'s invocation while it waits for its approval or runs, else None."""
        return self._running.get(node) or self._undecided.get(node)

    def under_way(self) -> Iterator[Invocation]:
        """The calls waiting for their approval, then those running (each in the order
        it started), without copying them."""
        yield from self._undecided.values()
        yield from self._running.values()

    @property
    def replayed(self) -> Replayed:
        """The replay so far (:func:`replay_more`'s answer for the same events)."""
        return Replayed(self.state, tuple(self._undecided.values()),
                        tuple(self._running.values()))
