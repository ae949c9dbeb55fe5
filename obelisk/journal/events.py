"""A recorded plan run's typed events (:mod:`obelisk.interpreters.stream`), read back from
its journal: the recorded run events go through the same follower a live run's go through
(the machine's own replay), so ``obelisk report run.db`` reads what ``--events`` writes.

A journal keeps when each call finished (its outcome's date), not when it was made ready
or started: those events carry the time of the last finish before them. A journal holds
the calls and results, so the events carry them as content.
"""

from __future__ import annotations

import datetime
from typing import Any

from obelisk.interpreters.events import Finished
from obelisk.interpreters.follower import PlanFollower
from obelisk.interpreters.stream import Emitter
from obelisk.journal.codec import decode
from obelisk.journal.journal import Journal
from obelisk.journal.run import recorded
from obelisk.journal.store import RecordKind, end_status

__all__ = ["recorded_events"]


def recorded_events(journal: Journal, run_id: str | None = None) -> list[dict[str, Any]]:
    """The events of the plan run ``run_id`` (None: the newest) as its journal holds them.
    Raises :class:`~obelisk.journal.store.JournalUnreadable` (an agent run included)."""
    run = recorded(journal, run_id)
    records = list(journal.records(run.header.run_id))
    clock = _Clock(_seconds(run.header.created))
    events: list[dict[str, Any]] = []
    emitter = Emitter([events.append], content=True, clock=clock)
    emitter.emit("run_started", kind="plan", run=run.header.run_id, calls=len(run.plan.nodes))
    follower = PlanFollower(emitter, run.plan, run.context,
                            approvals=bool(run.options.get("approvals")))
    for event in decode(records, f"{journal.name}: run {run.header.run_id!r}"):
        if isinstance(event, Finished):
            clock.now = _seconds(event.date, clock.now)
        follower(event)
    follower.end()
    ends = [r for r in records if r.kind is RecordKind.END]
    status = end_status(ends[-1].data) if ends else "unfinished"
    emitter.emit("run_ended", kind="plan", status=status, duration=clock.now - clock.first)
    return events


class _Clock:
    """The time of the last recorded finish."""

    def __init__(self, start: float) -> None:
        self.first = self.now = start

    def __call__(self) -> float:
        return self.now


def _seconds(text: str, default: float = 0.0) -> float:
    """An ISO 8601 date as seconds since the epoch (``default`` when it does not read: a
    run's own clock may stamp anything)."""
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return default
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()
