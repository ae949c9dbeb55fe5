"""The :class:`Journal`: a store of durable runs, the durability level runs are recorded
with, and the runs this process holds (their owner, epochs and leases)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from obelisk.core.context import Context
from obelisk.journal.agent import AgentRun, open_agent_run
from obelisk.journal.codec import digest_of
from obelisk.journal.lease import DEFAULT_LEASE, Leases, Tenure, owner_name
from obelisk.journal.sqlite import SqliteStore
from obelisk.journal.store import (
    FORMAT_VERSION,
    Durability,
    JournalError,
    JournalUnreadable,
    Record,
    RunHeader,
    Store,
    is_delegate,
)
from obelisk.urls import is_url, shown


class Journal:
    """A store of durable runs and the durability level runs are recorded with.

    ``Journal.open(target)`` opens (or creates) the embedded SQLite journal at a path, or
    the PostgreSQL journal at a ``postgresql://`` URL; ``Journal(store)`` uses any
    :class:`~obelisk.journal.store.Store`. Close it when done (or use ``with``): closing
    releases the runs it holds.

    ``owner`` names this journal as the owner of the runs it starts or resumes (default
    ``host:pid:nonce``); ``lease`` is how many seconds a claim lasts unless renewed (it is
    renewed every third of that while a run goes on).
    """

    def __init__(self, store: Store, durability: Durability | str = Durability.SYNC,
                 name: str = "journal", *, lease: float = DEFAULT_LEASE,
                 owner: str | None = None) -> None:
        self.store = store
        self.durability = Durability(durability)
        #: How errors name this journal (its path for a file, its URL without a password).
        self.name = name
        self.leases = Leases(store, owner or owner_name(), lease)
        #: Set by a worker to stop its runs: a run invokes no call once it is set (the
        #: calls running finish and are recorded), and raises RunStopped.
        self.stop: threading.Event | None = None

    @classmethod
    def open(cls, target: str | os.PathLike[str],
             durability: Durability | str = Durability.SYNC, *, create: bool = True,
             read_only: bool = False, lease: float = DEFAULT_LEASE,
             owner: str | None = None) -> Journal:
        """The journal at ``target``: a ``postgresql://`` URL (the ``postgres`` extra), or
        the path of an SQLite file, created when missing unless not ``create`` (then a
        missing file raises JournalUnreadable). ``read_only``: only to read it."""
        if is_url(target):
            store, name = open_postgres(str(target), read_only=read_only)
            return cls(store, durability, name, lease=lease, owner=owner)
        if not (create and not read_only) and not os.path.exists(target):
            raise JournalUnreadable(f"{os.fspath(target)}: no such journal")
        return cls(SqliteStore(target, read_only=read_only), durability, os.fspath(target),
                   lease=lease, owner=owner)

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the runs held, then the store."""
        try:
            self.leases.close()
        finally:
            self.store.close()

    @property
    def owner(self) -> str:
        """Who this journal is, as the owner of the runs it holds."""
        return self.leases.owner

    def claim(self, run_id: str, *, take_over: bool = False) -> Tenure:
        """Hold ``run_id`` (a new epoch); raises :class:`RunOwned` while another owner's
        lease on it is live, unless ``take_over``."""
        return self.leases.claim(run_id, take_over=take_over)

    def create(self, header: RunHeader) -> Tenure | None:
        """Record a new run held by this journal (one write); None when the run exists."""
        return self.leases.create(header)

    def tenure(self, run_id: str) -> Tenure:
        """The hold on ``run_id``: the one this journal has, else a new claim."""
        return self.leases.held(run_id) or self.claim(run_id)

    def release(self, run_id: str) -> None:
        """Stop holding ``run_id`` (another process may take it at once)."""
        tenure = self.leases.held(run_id)
        if tenure is not None:
            self.leases.release(tenure)

    def runs(self) -> list[RunHeader]:
        """Every run's header, oldest first."""
        return self.store.runs()

    def run_header(self, run_id: str | None) -> RunHeader:
        """The header of ``run_id`` (None: the newest run that is not a delegate's: a
        delegate's run is recorded inside the run that delegated); raises
        JournalUnreadable."""
        if run_id is None:
            runs = [h for h in self.runs() if not is_delegate(h)]
            if not runs:
                raise JournalUnreadable(f"{self.name}: the journal holds no run")
            return runs[-1]
        header = self.store.header(run_id)
        if header is None:
            known = ", ".join(h.run_id for h in self.runs()[-5:]) or "none"
            raise JournalUnreadable(f"{self.name}: no run {run_id!r} (runs: {known})")
        return header

    def checked_header(self, run_id: str | None) -> tuple[RunHeader, str]:
        """The header of run ``run_id`` (None: the newest) and how to name the run in an
        error; a header of another format version or whose digest does not match is
        refused."""
        header = self.run_header(run_id)
        where = f"{self.name}: run {header.run_id!r}"
        if header.version != FORMAT_VERSION:
            raise JournalUnreadable(f"{where} was written in journal format {header.version}; "
                                    f"this obelisk reads format {FORMAT_VERSION}")
        if digest_of(header.header, header.version) != header.digest:
            raise JournalUnreadable(f"{where}: its header does not match its digest: the "
                                    "journal is damaged or was edited")
        return header, where

    def records(self, run_id: str) -> Iterator[Record]:
        """A run's rows, in order."""
        return self.store.records(run_id)

    def agent_source(self, run_id: str | None, context: Context, tools: tuple[Any, ...],
                     options: Mapping[str, Any]) -> AgentRun:
        """The agent run ``run_id`` (None: a new one) of this journal, as the agent loop's
        tick source (``run_agent(journal=...)``)."""
        return open_agent_run(self, run_id, context, tools, options)


def open_postgres(target: str, *, read_only: bool = False) -> tuple[Store, str]:
    """The PostgreSQL store at URL ``target`` and how to name it; raises JournalError
    naming the missing extra when psycopg is not installed."""
    name = shown(target)
    try:
        from obelisk.journal.postgres import PostgresStore  # psycopg: only when asked for
    except ImportError as exc:
        raise JournalError(f"{name}: a PostgreSQL journal needs psycopg 3 ({exc}): "
                           "pip install 'obelisk[postgres]'") from None
    return PostgresStore(target, name, read_only=read_only), name
