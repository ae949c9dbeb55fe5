"""The journal's storage: the :class:`Store` protocol, its records, and the errors.

A store holds runs. Each run has a :class:`RunHeader` (what the run was started with) and
an append-only sequence of :class:`Record` rows, numbered from 1. A store never rewrites
a row: a run's journal grows by its new events only.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from typing import NamedTuple, Protocol

from attrs import frozen

from obelisk.core.errors import ObeliskError

#: The journal format this obelisk writes and reads; a store of another format is refused.
FORMAT_VERSION = 1


class Durability(str, enum.Enum):
    """When recorded events reach the disk.

    ``SYNC``: each event that lets the run go on (a call about to be invoked, an outcome,
    a verdict, the end) is committed to disk before the run goes on. ``BATCH``: events are
    committed at least every 100 ms or every 256 events, whichever comes first.
    """

    SYNC = "sync"
    BATCH = "batch"


class RecordKind(str, enum.Enum):
    """What one journal row records."""

    #: The machine started a call (its batch was advanced); ``node`` is the call's node.
    START = "start"
    #: The call is about to be invoked; ``data`` is its idempotency key.
    INVOKE = "invoke"
    #: The approval hook's verdict on a started call.
    DECIDE = "decide"
    #: The call's outcome and the clock's value that stamped it.
    FINISH = "finish"
    #: The run was cancelled.
    CANCEL = "cancel"
    #: The LLM's solution for tick ``node`` (the agent loop); a streamed tick's when its
    #: stream ended, with every call and the output.
    SOLUTION = "solution"
    #: A streamed call of tick ``node`` admitted (``data``: the call), before it starts.
    ADMIT = "admit"
    #: What ``on_plan`` said about tick ``node``'s plan (lazy mode): approve, edit, reject.
    REVIEW = "review"
    #: Tokens paid during tick ``node`` (its solution, a latent call, a delegate).
    USAGE = "usage"
    #: A delegated call of tick ``node`` runs as the nested run named in ``data``.
    DELEGATE = "delegate"
    #: The run was resumed (for the reader of the history; replay ignores it).
    RESUME = "resume"
    #: The run ended; ``data`` holds its status and its number of error messages.
    END = "end"


class Record(NamedTuple):
    """One row of a run's journal: its number, kind, node (or tick) and JSON ``data``.

    A named tuple: a run makes two or three rows per call, and a tuple is made in half
    the time of a frozen attrs instance (fields read alike: ``record.kind``)."""

    seq: int
    kind: RecordKind
    node: int | None
    data: str | None


@frozen
class RunHeader:
    """What a run was started with, as JSON text, with its digest and format version.

    ``header`` holds the plan's calls, the initial context, the tools and the options;
    ``digest`` is the SHA-256 of it and the version, so a resume can check both.
    """

    run_id: str
    version: int
    digest: str
    header: str
    created: str


class JournalError(ObeliskError):
    """A journal could not be written, read or used; the message says which and why."""


class JournalUnreadable(JournalError):
    """The journal is not one this obelisk can resume: missing, corrupted, truncated, of
    another format version, or recorded for another plan."""


class JournalWriteError(JournalError):
    """An event could not be written (read-only file, full disk, a failing store): the run
    stops rather than go on with an event that would be lost."""


class Store(Protocol):
    """Where a journal keeps its runs. :class:`~obelisk.journal.sqlite.SqliteStore` is the
    embedded default; any object with these methods works.

    Every method raises :class:`JournalWriteError` when it cannot write and
    :class:`JournalUnreadable` when what it holds cannot be read.
    """

    def create_run(self, header: RunHeader) -> None:
        """Record a new run's header (committed at once)."""

    def header(self, run_id: str) -> RunHeader | None:
        """The header of ``run_id``, or None when the store has no such run."""

    def runs(self) -> list[RunHeader]:
        """Every run's header, oldest first."""

    def append(self, run_id: str, records: Sequence[Record]) -> None:
        """Append rows to a run, all or none, on disk before returning."""

    def records(self, run_id: str) -> Iterator[Record]:
        """The run's rows, in order."""

    def close(self) -> None:
        """Release the store."""
