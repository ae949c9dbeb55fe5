"""Cancelling a run: the machine's transition for a run that stops before its end (the
run's own cancellation, Ctrl-C): every running call becomes CANCELLED, finished results
stay, nothing else starts. Every interpreter ends a cancelled run here: asyncio when its
task is cancelled, sync when its :class:`Stop` is set."""

from __future__ import annotations

from typing import Protocol

from attrs import evolve
from pyrsistent import pvector

from obelisk.interpreters.events import Event, EventKind, Status
from obelisk.interpreters.state import RunState

__all__ = ["Stop", "cancel"]


class Stop(Protocol):
    """A request to stop a sync run from outside it (``threading.Event`` is one): once
    set, no call starts; the call running finishes and keeps its outcome."""

    def is_set(self) -> bool: ...


def cancel(state: RunState) -> RunState:
    """Mark every running call CANCELLED (the run was cancelled; finished results stay)."""
    status = state.status
    trace = state.trace
    for node_id, current in enumerate(state.status):
        if current is Status.RUNNING:
            status = status.set(node_id, Status.CANCELLED)
            if state.tracing:
                trace = trace.append(Event(EventKind.CANCELLED, node_id))
    return evolve(state, status=status, running=0, candidates=pvector(), trace=trace)
