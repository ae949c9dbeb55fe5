"""Recording a run: the :class:`RunRecorder`, an observer of the machine's run events that also records each
call's invocation with its idempotency key, and the agent loop's solutions.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from obelisk.compiler.nodes import CompiledPlan
from obelisk.interpreters.events import RunEvent, Started, Waiting
from obelisk.interpreters.result import RunResult
from obelisk.journal.codec import dumps, encode, timed
from obelisk.journal.store import Durability, Record, RecordKind

if TYPE_CHECKING:
    from obelisk.journal.journal import Journal
    from obelisk.journal.lease import Tenure

#: Batch durability commits when this many events wait, or this many seconds passed.
BATCH_EVENTS = 256
BATCH_SECONDS = 0.1

# Read for every event: an Enum member read through its class costs about 70 ns on
# Python 3.11, a module constant about 6.
_START, _INVOKE, _FINISH = RecordKind.START, RecordKind.INVOKE, RecordKind.FINISH

#: ``Record(*fields)`` without the named tuple's Python-level ``__new__`` (what that
#: ``__new__`` itself does): two rows a call are made.
_new_record = tuple.__new__


def idempotency_key(run_id: str, index: int, instance: str | None = None, tick: int = 0,
                    chain: tuple[str, ...] = ()) -> str:
    """The key a call keeps across resumes: run id, delegate chain, tick, call index and
    instance, joined with ``/`` (each part percent-encoded, so keys never collide)."""
    return _key_of(_key_prefix(run_id, chain), index, instance, tick)


def _key_prefix(run_id: str, chain: tuple[str, ...]) -> str:
    # The parts a run's keys share, encoded once per recorder rather than once per call.
    return quote(run_id, safe="") + "/" + ".".join(quote(d, safe="") for d in chain) + "/"


def _key_of(prefix: str, index: int, instance: str | None, tick: int) -> str:
    last = quote(instance, safe="") if instance is not None else ""
    return f"{prefix}{tick}/{index}/{last}"


def utc_stamp() -> str:
    """Now, in UTC, ISO 8601 (for the journal's own bookkeeping, never for the run)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class RunRecorder:
    """Records one run into a journal: call it with every run event (it is an observer),
    call :meth:`invoking` right before a call is invoked, :meth:`end` when the run ended.

    At ``sync`` durability a row that lets the run go on (an at-most-once invocation, an
    outcome, a verdict, a solution, the end) is committed before the method returns,
    together with the rows before it; at ``batch`` rows are committed every 256 rows or
    100 ms.
    A write that fails raises :class:`~obelisk.journal.store.JournalWriteError`.
    """

    #: It writes a Started event's node only: the interpreters tell it Started events
    #: without the copy of the call other observers get (see ``calls.started``).
    reads_calls = False

    def __init__(self, journal: Journal, run_id: str, plan: CompiledPlan, next_seq: int = 1,
                 tick: int = 0, chain: tuple[str, ...] = (), key_run: str | None = None,
                 tenure: Tenure | None = None) -> None:
        self.journal = journal
        self.run_id = run_id
        #: The hold on the run its rows are appended under (its epoch).
        self.tenure = tenure if tenure is not None else journal.tenure(run_id)
        self.key_run = key_run or run_id  # the run id in idempotency keys
        self.plan = plan
        self.tick = tick
        self.chain = chain
        self._key_prefix = _key_prefix(self.key_run, chain)
        self._seq = next_seq
        #: The sequence number of the row recorded last (0: none yet).
        self.last_seq = next_seq - 1
        self._pending: list[Record] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._sync = journal.durability is Durability.SYNC
        self._failure: BaseException | None = None
        self._solutions: dict[int, str] = {}
        self._last: RecordKind | None = None  # the kind of the last run event recorded
        self._after: list[tuple[RecordKind, int | None, str | None]] = []
        #: The nodes invoked whose outcome is not recorded yet.
        self.running: set[int] = set()
        self._began: dict[int, float] = {}  # when each running call was invoked
        self._last_row = False

    # -- writing ---------------------------------------------------------------------

    def _add(self, kind: RecordKind, node: int | None, data: str | None, *,
             commit: bool, last: bool = False) -> None:
        with self._lock:
            if self._failure is not None:
                raise self._failure  # a batch commit failed: the run must not go on
            self._last_row = last  # the run's last row: its commit ends the lease
            if self._after and kind is RecordKind.SOLUTION:  # the previous tick's, first
                self._add_after()
            self._pending.append(_new_record(Record, (self._seq, kind, node, data)))
            self.last_seq = self._seq
            self._seq += 1
            if self._after and kind is not RecordKind.SOLUTION:
                self._add_after()
                commit = True
            if self._sync:
                if commit:
                    self._flush_locked()
            elif len(self._pending) >= BATCH_EVENTS:
                # The timer is left running: it commits the rows that come after these
                # when it fires, at most 100 ms after it was started, which is sooner than
                # needed; starting a thread per batch cost more than the batch's commit.
                self._flush_locked(stop_timer=False)
            elif self._timer is None:
                self._timer = threading.Timer(BATCH_SECONDS, self._timed_flush)
                self._timer.daemon = True
                self._timer.start()

    def _add_after(self) -> None:
        for row in self._after:
            self._pending.append(Record(self._seq, *row))
            self._seq += 1
        self._after.clear()

    def _flush_locked(self, stop_timer: bool = True) -> None:
        if stop_timer and self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            self.tenure.check()  # a renewal found the run taken over: write nothing more
            records, self._pending = self._pending, []
            release = self._last_row
            self.journal.store.append(self.run_id, records, self.tenure.epoch,
                                      release=release)
            self.tenure.released = release

    def _timed_flush(self) -> None:
        with self._lock:
            self._timer = None
            try:
                self._flush_locked()
            except BaseException as exc:  # noqa: BLE001 - reported to the run's thread
                self._failure = exc

    def record(self, kind: RecordKind, node: int | None, data: str | None, *,
               commit: bool) -> None:
        """Record one row of the agent loop's own (``commit``: on disk before returning,
        at ``sync``; else with the next committed row)."""
        self._add(kind, node, data, commit=commit)

    def settle(self) -> None:
        """Commit every row recorded so far, the rows waiting for a next one included."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._after:
                self._add_after()
            self._flush_locked()

    def flush(self) -> None:
        """Commit every row recorded so far."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            self._flush_locked()

    # -- what the run tells ------------------------------------------------------------

    def __call__(self, event: RunEvent | Waiting) -> None:
        if self._last is _START and type(event) is Started:
            return  # before encoding it: most Started events are not written (see below)
        if isinstance(event, Waiting):
            return  # a notice, no run event: nothing to replay
        kind, node, data = encode(event, self.plan)
        if kind is _FINISH:
            self.running.discard(node)
            began = self._began.pop(node, None) if node is not None else None
            data = timed(data, time.time(), began)
        elif kind is RecordKind.DECIDE:
            data = timed(data, time.time())  # when the verdict came
        if kind is _START:
            # The machine starts a whole batch at once and tells each call in a row:
            # the batch's first call is all a replay needs (it advances the machine).
            self._last = kind
            self._add(kind, node, timed(None, time.time()), commit=False)
            return
        self._last = kind
        self._add(kind, node, data, commit=True)

    def key(self, node: int) -> str:
        """The idempotency key of node ``node`` of this run."""
        found = self.plan.nodes[node]
        return _key_of(self._key_prefix, found.index, found.instance, self.tick)

    def key_for(self, index: int, instance: str | None) -> str:
        """The idempotency key of call ``index`` (``instance``) of this run's tick (of a
        plan the recorder may not hold yet: a streamed tick's, retold)."""
        return _key_of(self._key_prefix, index, instance, self.tick)

    def invoking(self, node: int, commit: bool = True) -> str:
        """Record that node ``node`` is about to be invoked; its idempotency key.

        ``commit``: on disk before returning (at ``sync``). Needed only for a call that must
        not run twice; any other call runs again when its outcome is missing, whether its
        invocation was recorded or not, so its row can wait for its outcome's commit.
        """
        key = self.key(node)
        self._began[node] = time.time()
        self._add(_INVOKE, node, key, commit=commit)
        self.running.add(node)
        return key

    def started(self, node: int) -> None:
        """Record that the machine started a batch (``node`` its first call), and when."""
        self._add(_START, node, timed(None, time.time()), commit=False)

    def resumed(self) -> None:
        """Record that the run was resumed (for the history's reader)."""
        self._add(RecordKind.RESUME, None, dumps({"at": utc_stamp()}), commit=True)

    def traced(self, traceparent: str) -> None:
        """Record the trace context of the run as it goes on here (a resume links to it)."""
        self._add(RecordKind.TRACE, None, dumps({"traceparent": traceparent}), commit=False)

    def end(self, result: RunResult) -> None:
        """Record the run's end (its status and number of error messages) and commit."""
        self.ended(str(result.status), len(result.errors))

    def ended(self, status: str, errors: int) -> None:
        """Record the end of a run (a plan's or an agent's) and commit."""
        self._add(RecordKind.END, None, dumps({"status": status, "errors": errors}), commit=True,
                  last=True)
        self.flush()

    # -- the agent loop's solutions ----------------------------------------------------

    def record_solution(self, tick: int, solution: Any, usage: str | None = None) -> None:
        """Record the LLM's solution (JSON) for ``tick``, committed before returning at
        ``sync`` durability; with its ``usage`` row (JSON), the two are committed with the
        next row instead (the usage row right after that row), or by :meth:`settle`."""
        text = dumps(solution)
        self._solutions[tick] = text
        self._add(RecordKind.SOLUTION, tick, text, commit=usage is None)
        if usage is not None:
            with self._lock:
                self._after.append((RecordKind.USAGE, tick, usage))

    def begin_tick(self, tick: int, plan: CompiledPlan) -> None:
        """Follow the run of tick ``tick``'s plan: the events recorded from now on are its
        (rows after a tick's ``solution`` row belong to that tick), and its idempotency
        keys carry the tick."""
        self.tick = tick
        self.plan = plan
        self._last = None  # a new plan's first Started row is its own

    def has_solution(self, tick: int) -> bool:
        """True when a solution (even JSON null) is recorded for ``tick``."""
        return tick in self._solutions

    def recorded_solution(self, tick: int) -> Any | None:
        """The solution recorded for ``tick`` (a resumed run never asks the LLM again for
        it), or None when that tick has none."""
        text = self._solutions.get(tick)
        return None if text is None else json.loads(text)

    def load_solutions(self, records: Iterator[Record] | list[Record]) -> None:
        """Remember the solutions among a resumed run's rows."""
        for record in records:
            if record.kind is RecordKind.SOLUTION and record.node is not None:
                self._solutions[record.node] = record.data or "null"


def last_trace(records: Iterable[Record]) -> str | None:
    """The traceparent the run's last ``trace`` row holds."""
    found = None
    for record in records:
        if record.kind is RecordKind.TRACE:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                found = json.loads(record.data or "").get("traceparent")
    return found if isinstance(found, str) else None
