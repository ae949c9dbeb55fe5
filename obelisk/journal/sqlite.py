"""The embedded journal store: one SQLite file (the standard library's ``sqlite3``) in
write-ahead-log mode, with ``synchronous=FULL`` so a commit is on disk when it returns.

Tables: ``runs`` (one header per run) and ``events`` (the rows, keyed by run and number,
appended and never updated). The file is marked as an obelisk journal with SQLite's
``application_id`` and carries its format version in ``user_version``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from obelisk.journal.store import (
    FORMAT_VERSION,
    JournalUnreadable,
    JournalWriteError,
    Record,
    RecordKind,
    RunHeader,
)

#: SQLite's application_id of an obelisk journal ("OBLK").
APPLICATION_ID = 0x4F424C4B

_SCHEMA = (
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, version INTEGER NOT NULL, "
    "digest TEXT NOT NULL, header TEXT NOT NULL, created TEXT NOT NULL)",
    "CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, "
    "node INTEGER, data TEXT, PRIMARY KEY (run_id, seq)) WITHOUT ROWID",
)

_KINDS = {kind.value: kind for kind in RecordKind}
_TEXTS = {kind: kind.value for kind in RecordKind}


class SqliteStore:
    """A :class:`~obelisk.journal.store.Store` in one SQLite file at ``path``.

    Opening checks that an existing file is an obelisk journal of this format and that
    SQLite finds it intact (``PRAGMA quick_check``); raises :class:`JournalUnreadable`
    otherwise, and :class:`JournalWriteError` when a new file cannot be created.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        existed = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        # One connection, used by the run's thread and the batch timer: a lock serialises.
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None,
                                       check_same_thread=False)
        except sqlite3.Error as exc:
            raise JournalWriteError(f"{self.path}: cannot open the journal: {exc} "
                                    "(is the directory writable?)") from None
        try:
            self._open(existed)
        except BaseException:
            self._db.close()
            raise

    def _open(self, existed: bool) -> None:
        if existed:
            try:
                app = self._db.execute("PRAGMA application_id").fetchone()[0]
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                check = self._db.execute("PRAGMA quick_check").fetchone()[0]
            except sqlite3.Error as exc:
                raise JournalUnreadable(f"{self.path}: not a journal, or a corrupted one: "
                                        f"{exc}") from None
            if app != APPLICATION_ID:
                raise JournalUnreadable(f"{self.path}: not an obelisk journal (an SQLite file "
                                        "of another application)")
            if version != FORMAT_VERSION:
                raise JournalUnreadable(
                    f"{self.path}: journal format {version}, and this obelisk reads format "
                    f"{FORMAT_VERSION}: resume it with the obelisk version that wrote it")
            if check != "ok":
                raise JournalUnreadable(f"{self.path}: the journal is corrupted ({check})")
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            if not existed:
                with self._transaction():
                    for statement in _SCHEMA:
                        self._db.execute(statement)
                    self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    self._db.execute(f"PRAGMA user_version={FORMAT_VERSION}")
        except sqlite3.Error as exc:
            raise JournalWriteError(f"{self.path}: cannot write the journal: {exc}") from None

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def create_run(self, header: RunHeader) -> None:
        """Record a new run's header, committed at once."""
        with self._lock:
            self._write(lambda: self._db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
                (header.run_id, header.version, header.digest, header.header, header.created)))

    def append(self, run_id: str, records: Sequence[Record]) -> None:
        """Append rows to a run in one transaction, committed (on disk) before returning."""
        text = _TEXTS  # a dict read: an Enum's ``.value`` costs a descriptor call a row
        rows = [(run_id, r.seq, text[r.kind], r.node, r.data) for r in records]
        with self._lock:
            self._write(lambda: self._db.executemany(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?)", rows))

    def _write(self, action: Callable[[], object]) -> None:
        try:
            with self._transaction():
                action()
        except sqlite3.Error as exc:
            raise JournalWriteError(f"{self.path}: cannot write the journal: {exc}; the run "
                                    "stops here and can be resumed from what was "
                                    "written") from None

    def header(self, run_id: str) -> RunHeader | None:
        """The header of ``run_id``, or None."""
        rows = self._read("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        return RunHeader(*rows[0]) if rows else None

    def runs(self) -> list[RunHeader]:
        """Every run's header, oldest first."""
        return [RunHeader(*row) for row in self._read(
            "SELECT * FROM runs ORDER BY created, rowid", ())]

    def records(self, run_id: str) -> Iterator[Record]:
        """The run's rows, in order."""
        rows = self._read("SELECT seq, kind, node, data FROM events WHERE run_id = ? "
                          "ORDER BY seq", (run_id,))
        for seq, kind, node, data in rows:
            found = _KINDS.get(kind)
            if found is None:
                raise JournalUnreadable(f"{self.path}: event {seq} of run {run_id} has an "
                                        f"unknown kind {kind!r}")
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


class _Transaction:
    """BEGIN ... COMMIT, or ROLLBACK when the body raises."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:
            self.db.execute("ROLLBACK")
