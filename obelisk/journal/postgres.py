"""The PostgreSQL journal store (psycopg 3): the same record as the SQLite store, shared
by many machines. Runs and events are keyed by run and sequence; leases are timed with
the server's clock, so the machines' clocks need not agree.

A dropped connection (a restarted server, ``pg_terminate_backend``, a network blip) is
reconnected for up to :data:`RECONNECT_SECONDS`; an append whose commit was not
confirmed is checked against the journal before it is written again, so a row is never
written twice and never lost. When the server stays away, the write fails with
:class:`JournalWriteError` and the run stops; it resumes from what was written.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import psycopg

from obelisk.journal import pgsql
from obelisk.journal.sqltext import owned_message, taken_message
from obelisk.journal.store import (
    JournalError,
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
from obelisk.urls import hide_in

#: How long a lost connection is tried again before a write or a read fails.
RECONNECT_SECONDS = 15.0

_KINDS = {kind.value: kind for kind in RecordKind}
_TEXTS = {kind: kind.value for kind in RecordKind}
T = TypeVar("T")


class _Lost(Exception):
    """The connection broke during an action (it may or may not have committed)."""


class PostgresStore:
    """A :class:`~obelisk.journal.store.Store` in the PostgreSQL database at ``url``
    (libpq's URL: ``sslmode``, ``.pgpass`` and the ``PG*`` variables work as for any libpq
    program). ``name`` is how errors name it (the URL without its password). The tables
    are made, or upgraded, on first use (not when ``read_only``)."""

    def __init__(self, url: str, name: str, *, read_only: bool = False) -> None:
        self.url = url
        self.name = name
        self.read_only = read_only
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        try:
            self._conn = self._connect()
        except psycopg.Error as exc:
            raise JournalWriteError(f"{name}: cannot connect to the journal's database: "
                                    f"{self._text(exc)}") from None
        self._schema()

    def _text(self, exc: BaseException) -> str:
        return hide_in(str(exc).strip(), self.url)

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, autocommit=True, application_name="obelisk",
                               connect_timeout=10)

    def _schema(self) -> None:
        """Check the schema version; make or upgrade the tables (for writing)."""
        def check(conn: psycopg.Connection[Any]) -> int:
            found = conn.execute("SELECT to_regclass('obelisk_meta') IS NOT NULL").fetchone()
            if not found or not found[0]:
                return 0
            row = conn.execute("SELECT value FROM obelisk_meta WHERE key = 'schema'").fetchone()
            return int(row[0]) if row else 0

        version = self._run(check, write=False) or 0
        if version > pgsql.SCHEMA_VERSION:
            raise JournalUnreadable(
                f"{self.name}: journal format {version}, and this obelisk reads formats 1 to "
                f"{pgsql.SCHEMA_VERSION}: use the obelisk version that wrote it")
        if version == pgsql.SCHEMA_VERSION:
            return
        if self.read_only:
            raise JournalUnreadable(f"{self.name}: the database holds no obelisk journal")
        self._run(self._migrate, write=True)

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute(pgsql.LOCK)
            conn.execute(pgsql.META)
            row = conn.execute("SELECT value FROM obelisk_meta WHERE key = 'schema'").fetchone()
            version = int(row[0]) if row else 0
            while version < pgsql.SCHEMA_VERSION:
                for statement in pgsql.MIGRATIONS[version]:
                    conn.execute(statement)
                version += 1
            conn.execute("INSERT INTO obelisk_meta VALUES ('schema', %s) ON CONFLICT (key) "
                         "DO UPDATE SET value = excluded.value", (str(version),))

    def _run(self, action: Callable[[psycopg.Connection[Any]], T], *, write: bool,
             settled: Callable[[psycopg.Connection[Any]], bool] | None = None) -> T | None:
        """``action`` on the connection, under the lock; a lost connection is made again
        and the action tried again for up to RECONNECT_SECONDS (an action whose commit
        was not confirmed first asks ``settled`` whether it took effect: then it returns
        None). A database error is a JournalWriteError (``write``) or JournalUnreadable."""
        if write and self.read_only:
            raise JournalWriteError(f"{self.name}: the journal was opened read-only")
        deadline = time.monotonic() + RECONNECT_SECONDS
        pause, unsure = 0.05, False
        with self._lock:
            while True:
                try:
                    conn = self._connection()
                    if unsure and settled is not None and settled(conn):
                        return None
                    return action(conn)
                except (JournalError, psycopg.errors.UniqueViolation) as exc:
                    if isinstance(exc, JournalError):
                        raise
                    raise self._error(exc, write) from None
                except psycopg.OperationalError as exc:
                    unsure = True
                    self._drop()
                    if time.monotonic() + pause > deadline:
                        raise self._error(exc, write, lost=True) from None
                    time.sleep(pause)
                    pause = min(pause * 2, 1.0)
                except psycopg.Error as exc:
                    raise self._error(exc, write) from None

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._drop()
            self._conn = self._connect()
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                conn.close()

    def _error(self, exc: psycopg.Error, write: bool, lost: bool = False) -> JournalError:
        text = self._text(exc)
        if lost:
            text = (f"the database is unreachable ({text}); tried again for "
                    f"{RECONNECT_SECONDS:g} s")
        if write:
            return JournalWriteError(f"{self.name}: cannot write the journal: {text}; the run "
                                     "stops here and can be resumed from what was written")
        return JournalUnreadable(f"{self.name}: cannot read the journal: {text}")

    def create_run(self, header: RunHeader, owner: str | None = None,
                   lease: float = 0.0) -> bool:
        """Record a new run's header, claimed by ``owner`` (or without an owner); False
        when the run exists."""
        def create(conn: psycopg.Connection[Any]) -> bool:
            return conn.execute(pgsql.CREATE, {
                "run": header.run_id, "version": header.version, "digest": header.digest,
                "header": header.header, "created": header.created,
                "delegate": is_delegate(header), "owner": owner,
                "lease": lease}).rowcount == 1

        return bool(self._run(create, write=True,
                              settled=lambda conn: False))

    def append(self, run_id: str, records: Sequence[Record], epoch: int, *,
               release: bool = False) -> None:
        """Append rows while the run's epoch is ``epoch`` (one statement checks and
        writes), committed before returning; ``release`` ends the lease with them."""
        if not records:
            return
        text = _TEXTS
        args = {"run": run_id, "epoch": epoch, "seqs": [r.seq for r in records],
                "kinds": [text[r.kind] for r in records], "nodes": [r.node for r in records],
                "data": [r.data for r in records]}
        status, last = status_after(records), records[-1].seq

        def write(conn: psycopg.Connection[Any]) -> bool:
            with conn.transaction():
                if conn.execute(pgsql.APPEND, args).rowcount != len(records):
                    raise _Taken()
                if status is not None or release:
                    conn.execute(pgsql.STATUS, (status, release, run_id, epoch))
            return True

        def settled(conn: psycopg.Connection[Any]) -> bool:
            row = conn.execute(pgsql.LAST_SEQ, (run_id,)).fetchone()
            return row is not None and int(row[0]) >= last

        try:
            self._run(write, write=True, settled=settled)
        except _Taken:
            raise self._taken(run_id, epoch) from None

    def _taken(self, run_id: str, epoch: int) -> RunTakenOver:
        found = self.ownership(run_id)
        owner = found.owner if found else None
        return RunTakenOver(taken_message(self.name, run_id, owner, epoch), owner)

    def claim(self, run_id: str, owner: str, lease: float, *, take_over: bool = False) -> int:
        """Make ``owner`` the run's owner (see :meth:`Store.claim`)."""
        row = self._run(lambda conn: conn.execute(pgsql.CLAIM, {
            "owner": owner, "lease": lease, "run": run_id, "take": take_over}).fetchone(),
            write=True)
        if row is not None:
            return int(row[0])
        found = self.ownership(run_id)
        if found is None:
            raise JournalUnreadable(f"{self.name}: no run {run_id!r}")
        holder = found.owner or "another owner"
        raise RunOwned(owned_message(self.name, run_id, holder, found.left), holder,
                       found.left)

    def renew(self, run_id: str, epoch: int, lease: float) -> None:
        """Extend the lease of the owner of ``epoch``."""
        count = self._run(lambda conn: conn.execute(pgsql.RENEW, {
            "lease": lease, "run": run_id, "epoch": epoch}).rowcount, write=True)
        if count == 0:
            raise self._taken(run_id, epoch)

    def release(self, run_id: str, epoch: int) -> None:
        """End the lease of the owner of ``epoch``."""
        self._run(lambda conn: conn.execute(pgsql.RELEASE, (run_id, epoch)), write=True)

    def ownership(self, run_id: str) -> Ownership | None:
        """Who holds the run."""
        row = self._run(lambda conn: conn.execute(pgsql.OWNERSHIP, (run_id,)).fetchone(),
                        write=False)
        if row is None:
            return None
        owner, epoch, left, status = row
        return Ownership(owner, int(epoch), float(left), str(status))

    def claim_next(self, owner: str, lease: float,
                   skip: Sequence[str] = ()) -> tuple[str, int] | None:
        """Claim the oldest open run nobody holds (see :meth:`Store.claim_next`)."""
        row = self._run(lambda conn: conn.execute(pgsql.CLAIM_NEXT, {
            "owner": owner, "lease": lease, "skip": list(skip)}).fetchone(), write=True)
        return None if row is None else (str(row[0]), int(row[1]))

    def header(self, run_id: str) -> RunHeader | None:
        """The header of ``run_id``, or None."""
        row = self._run(lambda conn: conn.execute(
            f"SELECT {pgsql.HEADER} FROM obelisk_runs WHERE run_id = %s",
            (run_id,)).fetchone(), write=False)
        return None if row is None else RunHeader(*row)

    def runs(self) -> list[RunHeader]:
        """Every run's header, oldest first."""
        rows = self._run(lambda conn: conn.execute(
            f"SELECT {pgsql.HEADER} FROM obelisk_runs ORDER BY ord").fetchall(),
            write=False)
        return [RunHeader(*row) for row in rows or []]

    def records(self, run_id: str) -> Iterator[Record]:
        """The run's rows, in order."""
        rows = self._run(lambda conn: conn.execute(
            "SELECT seq, kind, node, data FROM obelisk_events WHERE run_id = %s ORDER BY seq",
            (run_id,)).fetchall(), write=False)
        for seq, kind, node, data in rows or []:
            found = _KINDS.get(kind)
            if found is None:
                raise JournalUnreadable(f"{self.name}: event {seq} of run {run_id} has an "
                                        f"unknown kind {kind!r}")
            yield Record(int(seq), found, node, data)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._drop()


class _Taken(Exception):
    """The append wrote nothing: the run's epoch is another one."""
