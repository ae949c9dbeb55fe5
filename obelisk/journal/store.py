"""The journal's storage: the :class:`Store` protocol, its records, and the errors.

A store holds runs. Each run has a :class:`RunHeader` (what the run was started with) and
an append-only sequence of :class:`Record` rows, numbered from 1. A store never rewrites
a row: a run's journal grows by its new events only.

Each run also has an owner and an epoch (:class:`Ownership`). Starting or resuming a run
claims it (:meth:`Store.claim`): the claim bumps the epoch, and every append names the
epoch it was made under and writes nothing when the run's epoch is another one (the
check is part of the statement that writes the rows). An owner holds a lease that it
renews while it runs; a claim is refused while another owner's lease is live.
"""

from __future__ import annotations

import enum
import json
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
    #: A traced run began or resumed: ``data`` holds its root span's W3C ``traceparent``,
    #: which the next resume links its trace to (replay ignores it).
    TRACE = "trace"
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


class RunOwned(JournalError):
    """A claim was refused: another owner's lease on the run is live."""

    def __init__(self, message: str, owner: str, left: float) -> None:
        super().__init__(message)
        #: Who owns the run, and how many seconds its lease has left.
        self.owner = owner
        self.left = left


class RunTakenOver(JournalError):
    """This owner lost the run: another one claimed it (a newer epoch), so nothing this
    owner appends is written and its run stops."""

    def __init__(self, message: str, owner: str | None) -> None:
        super().__init__(message)
        #: The run's owner now (None when the store cannot tell).
        self.owner = owner


class Ownership(NamedTuple):
    """Who holds a run: its ``owner`` (None: never claimed, as a submitted run), its
    ``epoch`` (bumped by every claim), the seconds its lease has ``left`` (0 or less:
    expired or released) and its ``status`` (``open``, or the recorded end's status)."""

    owner: str | None
    epoch: int
    left: float
    status: str


#: A run's ``status`` before its end is recorded (and again once it is resumed).
OPEN = "open"


def status_after(records: Sequence[Record]) -> str | None:
    """The run's status once ``records`` are appended (None: unchanged): the status of
    an ``end`` row, ``open`` after a ``resume`` row."""
    status = None
    for record in records:
        if record.kind is RecordKind.END:
            status = end_status(record.data)
        elif record.kind is RecordKind.RESUME:
            status = OPEN
    return status


def end_status(data: str | None) -> str:
    """The status an ``end`` row's JSON data records (``unknown`` when it holds none)."""
    try:
        found = json.loads(data or "{}")
    except ValueError:
        return "unknown"
    status = found.get("status") if isinstance(found, dict) else None
    return status if isinstance(status, str) else "unknown"


def is_delegate(header: RunHeader) -> bool:
    """True for the run of a delegate (its header names the run that delegated)."""
    if '"parent":' not in header.header:  # the cheap test first: most runs are not
        return False
    try:
        options = json.loads(header.header)["options"]
    except (KeyError, TypeError, ValueError):
        return False
    return isinstance(options, dict) and "parent" in options


class Store(Protocol):
    """Where a journal keeps its runs. :class:`~obelisk.journal.sqlite.SqliteStore` is the
    embedded default; any object with these methods works.

    Every method raises :class:`JournalWriteError` when it cannot write and
    :class:`JournalUnreadable` when what it holds cannot be read.
    """

    def create_run(self, header: RunHeader, owner: str | None = None,
                   lease: float = 0.0) -> bool:
        """Record a new run's header (committed at once): claimed by ``owner`` (epoch 1, a
        lease of ``lease`` seconds), or without an owner when None. False, writing
        nothing, when the store holds a run of that id already."""

    def header(self, run_id: str) -> RunHeader | None:
        """The header of ``run_id``, or None when the store has no such run."""

    def runs(self) -> list[RunHeader]:
        """Every run's header, oldest first."""

    def append(self, run_id: str, records: Sequence[Record], epoch: int, *,
               release: bool = False) -> None:
        """Append rows to a run, all or none, on disk before returning, and only while the
        run's epoch is ``epoch`` (checked in the statement that writes them); raises
        :class:`RunTakenOver` otherwise. The run's status follows :func:`status_after`;
        ``release`` ends the owner's lease with these rows (the run's last ones)."""

    def claim(self, run_id: str, owner: str, lease: float, *, take_over: bool = False) -> int:
        """Make ``owner`` the run's owner for ``lease`` seconds and return the new epoch;
        raises :class:`RunOwned` while another owner's lease is live (unless
        ``take_over``), :class:`JournalUnreadable` when there is no such run."""

    def renew(self, run_id: str, epoch: int, lease: float) -> None:
        """Extend the lease of the owner of ``epoch`` by ``lease`` seconds from now;
        raises :class:`RunTakenOver` when the run's epoch is another one."""

    def release(self, run_id: str, epoch: int) -> None:
        """End the lease of the owner of ``epoch`` (nothing when the epoch is another)."""

    def ownership(self, run_id: str) -> Ownership | None:
        """Who holds the run, or None when there is no such run."""

    def claim_next(self, owner: str, lease: float,
                   skip: Sequence[str] = ()) -> tuple[str, int] | None:
        """Claim the oldest open run (not a delegate's, not in ``skip``) that nobody
        holds: never claimed, released, or whose lease expired. Its id and the new
        epoch, or None when there is none."""

    def records(self, run_id: str) -> Iterator[Record]:
        """The run's rows, in order."""

    def close(self) -> None:
        """Release the store."""
