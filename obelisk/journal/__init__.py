"""Durable runs: a journal of each run's events, and resuming a run from it.

``Journal.open(path)`` opens the embedded SQLite journal; :func:`run_durable` and
:func:`run_durable_async` record a plan's run, ``run_agent(journal=...)`` an agent's;
:func:`resume` continues a recorded run (:func:`resume_agent` an agent run, on asyncio).
See docs/durable.md for what is guaranteed.
"""

from obelisk.journal.agent import AgentRun, RecordedAgent, recorded_agent, resume_agent, run_kind
from obelisk.journal.recorder import Journal, RunRecorder, idempotency_key
from obelisk.journal.run import (
    AT_MOST_ONCE,
    Recorded,
    recorded,
    resume,
    resume_async,
    run_durable,
    run_durable_async,
)
from obelisk.journal.sqlite import SqliteStore
from obelisk.journal.store import (
    FORMAT_VERSION,
    Durability,
    JournalError,
    JournalUnreadable,
    JournalWriteError,
    Record,
    RecordKind,
    RunHeader,
    Store,
)
from obelisk.journal.table import history

__all__ = [
    "AT_MOST_ONCE", "AgentRun", "RecordedAgent", "recorded_agent", "resume_agent", "run_kind", "FORMAT_VERSION", "Durability", "Journal", "JournalError",
    "JournalUnreadable", "JournalWriteError", "Record", "RecordKind", "Recorded", "RunHeader",
    "RunRecorder", "SqliteStore", "Store", "history", "idempotency_key", "recorded", "resume",
    "resume_async", "run_durable", "run_durable_async",
]
