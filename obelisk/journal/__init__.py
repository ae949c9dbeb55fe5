"""Durable runs: a journal of each run's events, and resuming a run from it.

``Journal.open(target)`` opens the embedded SQLite journal at a path, or the PostgreSQL
journal at a ``postgresql://`` URL; :func:`run_durable` and :func:`run_durable_async`
record a plan's run, ``run_agent(journal=...)`` an agent's; :func:`resume` continues a
recorded run (:func:`resume_agent` an agent run, on asyncio). A run is held by one owner at
a time (an epoch and a lease): see docs/durable.md for what is guaranteed.
"""

from obelisk.journal.agent import AgentRun
from obelisk.journal.agentruns import (
    RecordedAgent,
    recorded_agent,
    recorded_request,
    resume,
    resume_agent,
    run_kind,
)
from obelisk.journal.journal import Journal
from obelisk.journal.lease import DEFAULT_LEASE
from obelisk.journal.recorder import RunRecorder, idempotency_key
from obelisk.journal.run import (
    Recorded,
    recorded,
    recorded_events,
    resume_async,
    run_durable,
    run_durable_async,
)
from obelisk.journal.session import AT_MOST_ONCE, RunStopped
from obelisk.journal.sqlite import SqliteStore
from obelisk.journal.store import (
    FORMAT_VERSION,
    Durability,
    JournalError,
    JournalUnreadable,
    JournalWriteError,
    Ownership,
    Record,
    RecordKind,
    RunHeader,
    RunOwned,
    RunTakenOver,
    Store,
)
from obelisk.journal.table import history
from obelisk.journal.worker import Worker, WorkerReport, submit

__all__ = [
    "AT_MOST_ONCE", "DEFAULT_LEASE", "FORMAT_VERSION", "AgentRun", "Durability", "Journal",
    "JournalError", "JournalUnreadable", "JournalWriteError", "Ownership", "Record",
    "RecordKind", "Recorded", "RecordedAgent", "recorded_events", "RunHeader", "RunOwned", "RunRecorder",
    "RunTakenOver", "SqliteStore", "Store", "history", "idempotency_key", "recorded",
    "recorded_agent", "recorded_request", "resume", "resume_agent", "resume_async", "run_durable",
    "run_durable_async", "run_kind", "RunStopped", "Worker", "WorkerReport", "submit",
]
