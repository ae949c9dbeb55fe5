"""The embedded journal store: one SQLite file (the standard library's ``sqlite3``) in
write-ahead-log mode, with ``synchronous=FULL`` so a commit is on disk when it returns.

Tables: ``runs`` (one header per run, with its owner, epoch, lease and status) and
``events`` (the rows, keyed by run and number, appended and never updated). The file is
marked as an obelisk journal with SQLite's ``application_id`` and carries its schema
version in ``user_version``; a journal of schema 1 (before runs had owners) is upgraded
when it is first opened for writing.

One machine's processes share a file: a lease is timed with this machine's clock, and a
run whose owner is a process of this machine that is gone is free at once.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from obelisk.journal.lease import dead_here
from obelisk.journal.sqltext import SQLITE_MIGRATIONS, SQLITE_SCHEMA, owned_message, taken_message
from obelisk.journal.store import (
    OPEN,
    JournalUnreadable,
    JournalWriteError,
    Ownership,
    Record,
    RecordKind,
    RunHeader,
    RunOwned,
    RunTakenOver,
    is_delegate,
    status_after,
)

#: SQLite's application_id of an obelisk journal ("OBLK").
APPLICATION_ID = 0x4F424C4B
#: The schema this obelisk writes; older ones are upgraded, newer ones refused.
SCHEMA_VERSION = 2

_KINDS = {kind.value: kind for kind in RecordKind}
_TEXTS = {kind: kind.value for kind in RecordKind}
_HEADER = "run_id, version, digest, header, created"
_APPEND = ("INSERT INTO events SELECT ?, ?, ?, ?, ? WHERE EXISTS "
           "(SELECT 1 FROM runs WHERE run_id = ? AND epoch = ?)")


class SqliteStore:
    """A :class:`~obelisk.journal.store.Store` in one SQLite file at ``path``.

    Opening checks that an existing file is an obelisk journal of a schema this obelisk
    reads and that SQLite finds it intact (``PRAGMA quick_check``); raises
    :class:`JournalUnreadable` otherwise, and :class:`JournalWriteError` when a new file
    cannot be created. ``read_only`` opens it only to read (every write is refused), as
    ``obelisk history`` does, so a journal on a read-only disk can still be read.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.path = os.fspath(path)
        self.read_only = read_only
        existed = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        # One connection, used by the run's thread, the batch timer and the lease's
        # thread: a lock serialises them.
        self._lock = threading.Lock()
        try:
            self._db = self._connect()
        except sqlite3.Error as exc:
            raise JournalWriteError(f"{self.path}: cannot open the journal: {exc} "
                                    "(is the directory writable?)") from None
        try:
            self._open(existed)
        except BaseException:
            self._db.close()
            raise

    def _connect(self) -> sqlite3.Connection:
        if not self.read_only:
            return sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # A reader that cannot write the file or its folder: SQLite's immutable mode
        # reads it without the write-ahead log's shared memory (which it could not make).
        uri = "file:" + self.path.replace("?", "%3f").replace("#", "%23") + "?mode=ro"
        if not _writable(self.path) and not os.path.exists(self.path + "-wal"):
            uri += "&immutable=1"
        return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)

    def _open(self, existed: bool) -> None:
        if existed:
            version = self._check()
        elif self.read_only:
            raise JournalUnreadable(f"{self.path}: no such journal")
        try:
            if self.read_only:
                return
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA busy_timeout=10000")  # another process's commit
            if not existed:
                with self._transaction():
                    for statement in SQLITE_SCHEMA:
                        self._db.execute(statement)
                    self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version < SCHEMA_VERSION:
                with self._transaction():
                    for statement in SQLITE_MIGRATIONS[version]:
                        self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise self._write_error(exc, "cannot write the journal") from None

    def _check(self) -> int:
        """The schema version of an existing file, checked."""
        try:
            app = self._db.execute("PRAGMA application_id").fetchone()[0]
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            check = self._db.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.Error as exc:
            if _read_only_error(exc):
                raise JournalWriteError(
                    f"{self.path}: the journal is read-only ({exc}): this command writes to "
                    "it; make the file and its folder writable (obelisk history reads a "
                    "read-only journal)") from None
            raise JournalUnreadable(f"{self.path}: not a journal, or a corrupted one: "
                                    f"{exc}") from None
        if app != APPLICATION_ID:
            raise JournalUnreadable(f"{self.path}: not an obelisk journal (an SQLite file "
                                    "of another application)")
        if not 1 <= version <= SCHEMA_VERSION:
            raise JournalUnreadable(
                f"{self.path}: journal format {version}, and this obelisk reads formats 1 to "
                f"{SCHEMA_VERSION}: use the obelisk version that wrote it")
        if check != "ok":
            raise JournalUnreadable(f"{self.path}: the journal is corrupted ({check})")
        if self.read_only and version < SCHEMA_VERSION:
            self._legacy = True
        return int(version)

    _legacy = False  # a schema-1 file opened read-only: no owners to read

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def _write_error(self, exc: sqlite3.Error, what: str) -> JournalWriteError:
        if _read_only_error(exc):
            return JournalWriteError(f"{self.path}: the journal is read-only ({exc}): make "
                                     "the file and its folder writable, then resume the run")
        return JournalWriteError(f"{self.path}: {what}: {exc}; the run stops here and can be "
                                 "resumed from what was written")

    def _write(self, action: Callable[[], Any]) -> Any:
        if self.read_only:
            raise JournalWriteError(f"{self.path}: the journal was opened read-only")
        with self._lock:
            try:
                with self._transaction():
                    return action()
            except sqlite3.Error as exc:
                raise self._write_error(exc, "cannot write the journal") from None

    def create_run(self, header: RunHeader, owner: str | None = None,
                   lease: float = 0.0) -> bool:
        """Record a new run's header, claimed by ``owner`` (or without an owner); False
        when the run exists."""
        held = (owner, 1, time.time() + lease) if owner is not None else (None, 0, None)
        return bool(self._write(lambda: self._db.execute(
            f"INSERT OR IGNORE INTO runs ({_HEADER}, delegate, owner, epoch, lease_until) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (header.run_id, header.version, header.digest, header.header, header.created,
             int(is_delegate(header)), *held)).rowcount))

    def append(self, run_id: str, records: Sequence[Record], epoch: int, *,
               release: bool = False) -> None:
        """Append rows to a run in one transaction, committed (on disk) before returning,
        while the run's epoch is ``epoch`` (checked by each row's insert); ``release``
        ends the lease in the same transaction."""
        text = _TEXTS  # a dict read: an Enum's ``.value`` costs a descriptor call a row
        rows = [(run_id, r.seq, text[r.kind], r.node, r.data, run_id, epoch) for r in records]
        status = status_after(records)

        def insert() -> bool:
            if self._db.executemany(_APPEND, rows).rowcount != len(rows):
                self._db.execute("ROLLBACK")
                return False
            if status is not None or release:
                self._db.execute("UPDATE runs SET status = coalesce(?, status), lease_until "
                                 "= CASE WHEN ? THEN NULL ELSE lease_until END "
                                 "WHERE run_id = ?", (status, release, run_id))
            return True

        if not self._write(insert):
            raise self._taken(run_id, epoch)

    def _taken(self, run_id: str, epoch: int) -> RunTakenOver:
        found = self.ownership(run_id)
        owner = found.owner if found else None
        return RunTakenOver(taken_message(self.path, run_id, owner, epoch), owner)

    def claim(self, run_id: str, owner: str, lease: float, *, take_over: bool = False) -> int:
        """Make ``owner`` the run's owner (see :meth:`Store.claim`)."""
        def take() -> int:
            row = self._db.execute("SELECT owner, epoch, lease_until FROM runs "
                                   "WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise JournalUnreadable(f"{self.path}: no run {run_id!r}")
            holder, epoch, until = row
            now = time.time()
            left = (until or 0.0) - now
            if left > 0 and not take_over and holder not in (None, owner) \
                    and not dead_here(holder):
                raise RunOwned(owned_message(self.path, run_id, holder, left), holder, left)
            self._db.execute("UPDATE runs SET owner = ?, epoch = ?, lease_until = ? "
                             "WHERE run_id = ?", (owner, epoch + 1, now + lease, run_id))
            return int(epoch) + 1

        return int(self._write(take))

    def renew(self, run_id: str, epoch: int, lease: float) -> None:
        """Extend the lease of the owner of ``epoch``."""
        renewed = self._write(lambda: self._db.execute(
            "UPDATE runs SET lease_until = ? WHERE run_id = ? AND epoch = ?",
            (time.time() + lease, run_id, epoch)).rowcount)
        if not renewed:
            raise self._taken(run_id, epoch)

    def release(self, run_id: str, epoch: int) -> None:
        """End the lease of the owner of ``epoch``."""
        self._write(lambda: self._db.execute(
            "UPDATE runs SET lease_until = NULL WHERE run_id = ? AND epoch = ?",
            (run_id, epoch)))

    def ownership(self, run_id: str) -> Ownership | None:
        """Who holds the run."""
        if self._legacy:
            return None if self.header(run_id) is None else Ownership(None, 0, 0.0, OPEN)
        rows = self._read("SELECT owner, epoch, lease_until, status FROM runs "
                          "WHERE run_id = ?", (run_id,))
        if not rows:
            return None
        owner, epoch, until, status = rows[0]
        return Ownership(owner, int(epoch), (until or 0.0) - time.time(), str(status))

    def claim_next(self, owner: str, lease: float,
                   skip: Sequence[str] = ()) -> tuple[str, int] | None:
        """Claim the oldest open run nobody holds (see :meth:`Store.claim_next`)."""
        def take() -> tuple[str, int] | None:
            now = time.time()
            for run_id, holder, until, epoch in self._db.execute(
                    "SELECT run_id, owner, lease_until, epoch FROM runs WHERE status = ? AND "
                    "delegate = 0 ORDER BY created, rowid", (OPEN,)).fetchall():
                free = holder is None or (until or 0.0) <= now or dead_here(holder)
                if run_id in skip or not free:
                    continue
                self._db.execute("UPDATE runs SET owner = ?, epoch = ?, lease_until = ? "
                                 "WHERE run_id = ?", (owner, epoch + 1, now + lease, run_id))
                return str(run_id), int(epoch) + 1
            return None

        found: tuple[str, int] | None = self._write(take)
        return found

    def header(self, run_id: str) -> RunHeader | None:
        """The header of ``run_id``, or None."""
        rows = self._read(f"SELECT {_HEADER} FROM runs WHERE run_id = ?", (run_id,))
        return RunHeader(*rows[0]) if rows else None

    def runs(self) -> list[RunHeader]:
        """Every run's header, oldest first."""
        return [RunHeader(*row) for row in self._read(
            f"SELECT {_HEADER} FROM runs ORDER BY created, rowid", ())]

    def records(self, run_id: str) -> Iterator[Record]:
        """The run's rows, in order."""
        rows = self._read("SELECT seq, kind, node, data FROM events WHERE run_id = ? "
                          "ORDER BY seq", (run_id,))
        for seq, kind, node, data in rows:
            found = _KINDS.get(kind)
            if found is None:
                raise JournalUnreadable(f"{self.path}: event {seq} of run {run_id} has an "
                                        f"unknown kind {kind!r}")
            if not (isinstance(seq, int) and (node is None or isinstance(node, int))
                    and (data is None or isinstance(data, str))):
                raise JournalUnreadable(f"{self.path}: event {seq!r} of run {run_id} holds "
                                        "values of the wrong type: the journal is damaged")
            yield Record(seq, found, node, data)

    def _read(self, sql: str, args: tuple[object, ...]) -> list[Any]:
        try:
            with self._lock:
                return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise JournalUnreadable(f"{self.path}: cannot read the journal: {exc}") from None

    def close(self) -> None:
        """Release the file."""
        with self._lock:
            self._db.close()


def _writable(path: str) -> bool:
    folder = os.path.dirname(os.path.abspath(path))
    return os.access(path, os.W_OK) and os.access(folder, os.W_OK)


def _read_only_error(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith("SQLITE_READONLY") or "readonly" in str(exc)


class _Transaction:
    """BEGIN ... COMMIT, or ROLLBACK when the body raises."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        if not self.db.in_transaction:
            return
        if kind is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
