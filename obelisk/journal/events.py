"""A recorded run's typed events (:mod:`obelisk.interpreters.stream`), read back from its
journal, for ``obelisk report run.db``: the recorded run events go through the same
follower a live run's go through (the machine's own replay, :mod:`obelisk.journal.retell`),
so the report of a journal reads what ``--events`` writes. An agent run's are read by
replaying it on a copy (:mod:`obelisk.journal.agentevents`).

Each call event is marked ``replayed`` and carries the time the journal recorded (a
batch made ready, an activity invoked, an outcome; a journal written before obelisk
recorded the first two gives them the time of the last recorded event before them). A
journal holds the calls and results, so the events carry them as content.
"""

from __future__ import annotations

import time
from typing import Any

from obelisk.interpreters.follower import PlanFollower
from obelisk.interpreters.stream import Emitter
from obelisk.journal.agentevents import agent_events
from obelisk.journal.agentruns import run_kind
from obelisk.journal.journal import Journal
from obelisk.journal.retell import dated, retell, seconds
from obelisk.journal.run import recorded
from obelisk.journal.store import RecordKind, end_status

__all__ = ["recorded_events"]


def recorded_events(journal: Journal, run_id: str | None = None) -> list[dict[str, Any]]:
    """The events of the run ``run_id`` (None: the newest) as its journal holds them.
    Raises :class:`~obelisk.journal.store.JournalUnreadable`."""
    header = journal.run_header(run_id)
    if run_kind(journal, header.run_id) == "agent":
        return agent_events(journal, header.run_id)
    since = time.time()
    run = recorded(journal, header.run_id)
    records = list(journal.records(header.run_id))
    events: list[dict[str, Any]] = []
    emitter = Emitter([events.append], content=True)
    emitter.emit("run_started", kind="plan", run=header.run_id, calls=len(run.plan.nodes))
    follower = PlanFollower(emitter, run.plan, run.context,
                            approvals=bool(run.options.get("approvals")))
    follower.describe()
    retell(follower, records, f"{journal.name}: run {header.run_id!r}")
    ends = [r for r in records if r.kind is RecordKind.END]
    status = end_status(ends[-1].data) if ends else "unfinished"
    return dated(events, seconds(header.created) or 0.0, status, "plan", since)
