"""Workers: processes that pick up runs nobody holds (submitted, released, or whose
owner's lease expired) from a shared journal and resume them, and :func:`submit`, which
records a run without starting it.

A worker runs ``slots`` runs at a time, each in a thread of its own with a journal of its
own (one connection each). :meth:`Worker.stop` asks every run to stop: a run invokes no
further call, the calls running finish and are recorded, and the run is released so that
another worker takes it at once. So a machine that dies costs its runs only the lease,
and its runs finish elsewhere with nothing repeated that was recorded.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import define, field

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.core.errors import ObeliskError
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.common import prepare
from obelisk.journal.agentruns import resume, run_kind
from obelisk.journal.codec import header_of
from obelisk.journal.journal import Journal
from obelisk.journal.lease import DEFAULT_LEASE, owner_name
from obelisk.journal.recorder import utc_stamp
from obelisk.journal.run import plan_options
from obelisk.journal.session import RunStopped
from obelisk.journal.store import FORMAT_VERSION, JournalError, JournalUnreadable, RunHeader

#: Seconds a worker with nothing to do waits before it asks the journal again.
POLL_SECONDS = 0.5


def submit(journal: Journal, plan: CompiledPlan | Sequence[Any],
           context: Context | Iterable[Any] | None = None, *, run_id: str | None = None,
           tools: ToolRegistry | Iterable[Any] | None = (), instances: bool = False,
           interpreter: str = "sync", max_concurrency: int | None = None,
           timeout: float | None = None) -> str:
    """Record a plan's run, as :func:`run_durable` would start it, without starting it (a
    worker picks it up); its id. Raises :class:`JournalUnreadable` when the journal holds
    a run of that id already, and refuses a plan with errors as ``run_sync`` does."""
    compiled, ctx = prepare(plan, context, tools, instances)
    run_id = run_id if run_id is not None else uuid.uuid4().hex
    options = plan_options(compiled, None, interpreter, max_concurrency, timeout)
    text, digest = header_of(compiled, ctx, options)
    if not journal.store.create_run(RunHeader(run_id, FORMAT_VERSION, digest, text,
                                              utc_stamp())):
        raise JournalUnreadable(f"{journal.name}: the journal holds a run {run_id!r} already: "
                                "choose another run id")
    return run_id


@define
class WorkerReport:
    """What a worker did: the runs it ended, stopped (when asked to stop) and failed (with
    the error that stopped each)."""

    ended: list[str] = field(factory=list)
    stopped: list[str] = field(factory=list)
    failed: list[tuple[str, str]] = field(factory=list)


class Worker:
    """Picks up runs of the journal at ``target`` and resumes them, ``slots`` at a time,
    with ``activities`` (and ``llm`` for agent runs: without one, agent runs are left to
    other workers). ``tell`` is told one line per run taken, ended, stopped or failed."""

    def __init__(self, target: str, activities: Mapping[str, Activity], *, llm: Any = None,
                 slots: int = 1, lease: float = DEFAULT_LEASE, durability: str = "sync",
                 owner: str | None = None, tell: Callable[[str], None] | None = None) -> None:
        if slots < 1:
            raise ValueError(f"a worker runs at least one run at a time, not {slots}")
        self.target = target
        self.activities = activities
        self.llm = llm
        self.slots = slots
        self.lease = lease
        self.durability = durability
        self.owner = owner or owner_name()
        self.tell = tell or (lambda line: None)
        self.stopping = threading.Event()
        self.report = WorkerReport()
        self._lock = threading.Lock()
        self._skip: set[str] = set()

    def stop(self) -> None:
        """Ask every run to stop: no further call starts; the calls running finish and
        are recorded; each run is released."""
        self.stopping.set()

    def run(self, *, until_idle: bool = False) -> WorkerReport:
        """Work until :meth:`stop` (or, ``until_idle``, until no run is left to take)."""
        threads = [threading.Thread(target=self._slot, args=(n, until_idle),
                                    name=f"obelisk-worker-{n}", daemon=True)
                   for n in range(self.slots)]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)  # wakes for signals handled in the main thread
        return self.report

    def _slot(self, number: int, until_idle: bool) -> None:
        owner = f"{self.owner}/{number}"
        with Journal.open(self.target, self.durability, lease=self.lease,
                          owner=owner) as journal:
            journal.stop = self.stopping
            while not self.stopping.is_set():
                with self._lock:
                    skip = sorted(self._skip)
                try:
                    taken = journal.store.claim_next(owner, self.lease, skip)
                except JournalError as exc:  # the journal is away: ask again later
                    self.tell(f"worker: cannot take a run: {exc}")
                    self.stopping.wait(POLL_SECONDS * 4)
                    continue
                if taken is None:
                    if until_idle:
                        return
                    self.stopping.wait(POLL_SECONDS)
                    continue
                self._one(journal, *taken)

    def _one(self, journal: Journal, run_id: str, epoch: int) -> None:
        """Resume one run this slot claimed; what became of it goes in the report."""
        self.tell(f"worker: run {run_id} taken")
        try:
            if run_kind(journal, run_id) == "agent" and self.llm is None:
                raise JournalUnreadable(f"{journal.name}: run {run_id!r} is an agent run and "
                                        "this worker has no LLM (--llm): left to another")
            result = resume(journal, run_id, activities=self.activities, llm=self.llm)
        except RunStopped:
            self.report.stopped.append(run_id)
            self.tell(f"worker: run {run_id} stopped; it is released for another worker")
            return
        except Exception as exc:  # noqa: BLE001 - a run that cannot run must not end the worker
            with self._lock:
                self._skip.add(run_id)
            text = str(exc) if isinstance(exc, ObeliskError) else f"{type(exc).__name__}: {exc}"
            self.report.failed.append((run_id, text))
            self.tell(f"worker: run {run_id} not run: {text}")
            return
        finally:
            journal.release(run_id)
            with contextlib.suppress(JournalError):  # when the resume never claimed it
                journal.store.release(run_id, epoch)
        self.report.ended.append(run_id)
        self.tell(f"worker: run {run_id} ended {result.status}")
