"""Durable agent runs: the :class:`AgentRun` tick source the agent loop asks for each
tick's solution and runs each tick's plan through.

A recorded agent run holds, per tick, the LLM's ``solution`` row and then the rows of the
tick's plan run (the rows after a tick's solution are that tick's). Resuming runs the loop
again from the recorded start: a tick whose solution is recorded is not asked of the LLM
again, and its plan's rows are replayed through the machine (``replay_open``) and the run
continued with the normal asyncio loop (``drive_async``), exactly as a plan's resume does.
Nothing here decides what a tick or a call does.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from obelisk.agent.hooks import PlanVerdict
from obelisk.agent.source import NO_USAGE, Answer
from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.plan import compile_plan
from obelisk.core.context import Context
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.common import Observer
from obelisk.interpreters.executors import AsyncExecutor
from obelisk.interpreters.follower import PlanFollower
from obelisk.interpreters.result import RunResult
from obelisk.journal.agentrows import AgentRows, agent_header, review_data, usage_data
from obelisk.journal.codec import dumps
from obelisk.journal.lease import Tenure
from obelisk.journal.recorder import RunRecorder, last_trace, utc_stamp
from obelisk.journal.retell import retell
from obelisk.journal.session import Session, async_invoker, replayed_session, watched
from obelisk.journal.store import FORMAT_VERSION, JournalUnreadable, Record, RecordKind, RunHeader
from obelisk.journal.streamtick import StreamTick
from obelisk.llm.base import Reply, Usage

if TYPE_CHECKING:
    from obelisk.journal.journal import Journal


def recorded_cost(journal: Journal, run_id: str) -> Usage:
    """The tokens a run recorded: its own, and its delegates' whose calls have a recorded
    outcome (each delegate's run records its own)."""
    rows = AgentRows(f"{journal.name}: run {run_id!r}", list(journal.records(run_id)))
    total = Usage()
    for usage in rows.usage.values():
        total = total + usage
    for run in rows.delegates:
        if run in rows.finished:
            total = total + recorded_cost(journal, run)
    return total


class AgentRun:
    """One agent run recorded in a journal (a new one, or one reopened to resume it): the
    :class:`obelisk.agent.source.TickSource` of ``run_agent(journal=...)``. It holds the
    run (``tenure``) until it ends.

    ``key_run`` and ``chain`` make the idempotency keys: a delegate's run is recorded
    under its own run id but its keys carry the outermost run's id and the delegates'
    chain.
    """

    def __init__(self, journal: Journal, run_id: str, records: list[Record], tenure: Tenure,
                 *, key_run: str | None = None, chain: tuple[str, ...] = (),
                 dry: bool = False) -> None:
        self.journal = journal
        #: A dry run: every invocation is on disk before it runs (mock turns follow them).
        self.dry = dry
        self.run_id = run_id
        self.key_run = key_run or run_id
        self.chain = chain
        self.recorder = RunRecorder(journal, run_id, compile_plan([]),
                                    records[-1].seq + 1 if records else 1,
                                    chain=chain, key_run=self.key_run, tenure=tenure)
        self.recorder.load_solutions(records)
        self._rows = AgentRows(f"{journal.name}: run {run_id!r}", records)
        self._trace = last_trace(records)
        self.ended = self._rows.ended
        # A delegate whose call's outcome is recorded does not run again: what its run
        # cost (recorded in its own rows) is this run's recorded cost.
        for run, at in self._rows.delegates.items():
            if run in self._rows.finished:
                usage = self._rows.usage
                usage[at] = usage.get(at, Usage()) + recorded_cost(journal, run)
        if records and not self.ended:
            self.recorder.resumed()
        self._asked: dict[int, float] = {}  # when the LLM was asked for a tick's solution

    def recorded_reply(self, tick: int) -> Reply | None:
        """The recorded solution of ``tick`` as a reply without usage, or None."""
        # A recorded solution may be JSON null (an invalid one): it is still recorded.
        if not self.recorder.has_solution(tick):
            self._asked[tick] = time.time()  # the loop asks the LLM now
            return None
        return Reply(self.recorder.recorded_solution(tick))

    def record_solution(self, tick: int, solution: Any, usage: Usage = NO_USAGE) -> None:
        """Record the LLM's solution for ``tick`` and its cost: on disk (at ``sync``
        durability) together with the tick's first event, which comes before any call of
        the tick runs, or at :meth:`settle`."""
        paid = usage.input_tokens or usage.output_tokens
        asked = self._asked.pop(tick, None)
        self.recorder.record_solution(
            tick, solution, usage_data(usage, asked, time.time()) if paid else None)

    def settle(self) -> None:
        """Commit what is recorded so far."""
        self.recorder.settle()

    def recorded_usage(self, tick: int) -> Usage:
        """The tokens recorded for ``tick`` before this process (replayed work's cost)."""
        return self._rows.usage.get(tick, Usage())

    def recorded_answer(self, tick: int) -> Answer | None:
        """The tokens of ``tick``'s recorded solution, and when it was asked for and came."""
        return self._rows.answers.get(tick)

    def record_usage(self, tick: int, usage: Usage) -> None:
        """Record tokens a latent call or a delegate paid during ``tick``: on disk with the
        call's outcome (with the next committed row)."""
        if usage.input_tokens or usage.output_tokens:
            self.recorder.record(RecordKind.USAGE, tick, usage_data(usage), commit=False)

    def recorded_review(self, tick: int) -> PlanVerdict | None:
        """What ``on_plan`` said about ``tick``'s plan, when recorded."""
        return self._rows.reviews.get(tick)

    def record_review(self, tick: int, verdict: PlanVerdict,
                      times: tuple[float, float] | None = None) -> None:
        """Record ``on_plan``'s verdict on ``tick``'s plan (and when it was asked and
        answered), on disk before the plan runs."""
        data = review_data(verdict)
        if times is not None:
            data.update(asked=times[0], answered=times[1])
        self.recorder.record(RecordKind.REVIEW, tick, dumps(data), commit=True)

    def recorded_review_times(self, tick: int) -> tuple[float, float] | None:
        """When ``on_plan`` was asked about ``tick``'s plan and answered, when recorded."""
        return self._rows.review_times.get(tick)

    def recorded_calls(self, tick: int) -> list[Any] | None:
        """The calls of ``tick``'s streamed solution admitted before the stop, or None when
        ``tick`` was not streamed (or nothing of it was recorded)."""
        return self._rows.admitted.get(tick)

    def record_admitted(self, tick: int, call: Any) -> None:
        """Record a streamed call of ``tick`` as admitted, on disk before it can start."""
        self.recorder.record(RecordKind.ADMIT, tick, dumps(call), commit=True)

    def stream_tick(self, tick: int) -> StreamTick:
        """The journal of streamed tick ``tick``: its recorded steps, and its recorder."""
        rows = self._rows.streamed.pop(tick, None)
        if rows is None and self.recorder.has_solution(tick):  # a stream without calls
            rows = [Record(0, RecordKind.SOLUTION, tick,
                           dumps(self.recorder.recorded_solution(tick)))]
        return StreamTick(self, tick, rows or [])

    def invoked(self, tick: int) -> tuple[int, ...]:
        """The nodes of ``tick``'s plan recorded as invoked, in the order they were."""
        return tuple(self._rows.invoked.get(tick, ()))

    def last_trace(self) -> str | None:
        """The traceparent the run's last ``trace`` row holds (None for a new run)."""
        return self._trace

    def record_trace(self, traceparent: str) -> None:
        """Record the run's trace context (with the next committed row)."""
        self.recorder.traced(traceparent)

    async def run_tick(self, tick: int, plan: CompiledPlan, context: Context,
                       invoke: AsyncExecutor, approve: Callable[[dict[str, Any]], Any] | None,
                       clock: Callable[[], str], *, max_concurrency: int | None,
                       timeout: float | None, observer: Observer | None = None) -> RunResult:
        """Run (or replay, then continue) tick ``tick``'s plan, recording its events; each
        call gets its idempotency key (run id, delegate chain, tick, call, instance)."""
        self.recorder.begin_tick(tick, plan)
        if isinstance(observer, PlanFollower):  # its call events name keys and rows
            observer.rows = self.recorder
        rows = self._rows.rows.pop(tick, None)
        if rows:
            session = replayed_session(self.recorder, plan, context, rows,
                                       approvals=approve is not None, ended=self.ended,
                                       isolate_invalid=True)
            if isinstance(observer, PlanFollower):  # the tick's recorded calls, retold
                retell(observer, rows, f"{self.journal.name}: run {self.run_id!r}")
        else:
            session = Session(self.recorder, None, frozenset(), self.ended)
        try:
            return await drive_async(plan, context,
                                     async_invoker(invoke, session, always=self.dry), approve,
                                     clock, max_concurrency=max_concurrency, timeout=timeout,
                                     observer=watched(session, observer), isolate_invalid=True,
                                     resume=session.replayed)
        finally:
            with contextlib.suppress(Exception):  # the run's own error wins
                self.recorder.flush()

    def delegate(self, tick: int, key: str, to: str) -> _Nested:
        """Where the delegate of the call keyed ``key`` (in tick ``tick``) is recorded: a
        run of its own in this journal, whose run id is ``key``, whose idempotency keys
        carry this run's chain and the delegating call."""
        tick_part, index, instance = key.rsplit("/", 3)[1:]
        link = f"{to}@{tick_part}.{index}" + (f".{instance}" if instance else "")
        if key not in self._rows.delegates:  # the row is on disk with the call's outcome
            self._rows.delegates[key] = tick
            self.recorder.record(RecordKind.DELEGATE, tick, dumps({"run": key}),
                                 commit=False)
        return _Nested(self, (*self.chain, link))

    def end(self, status: str, errors: int) -> None:
        """Record the run's end (unless it had ended before this resume) and commit."""
        try:
            if not self.ended:
                self.recorder.ended(status, errors)
        finally:
            self.journal.leases.release(self.recorder.tenure)


class _Nested:
    """The journal as a delegate's nested loop sees it (``run_agent(journal=...)``)."""

    def __init__(self, parent: AgentRun, chain: tuple[str, ...]) -> None:
        self.parent = parent
        self.chain = chain

    def agent_source(self, run_id: str | None, context: Context, tools: tuple[Any, ...],
                     options: Mapping[str, Any]) -> AgentRun:
        """The delegate's run ``run_id`` (the delegating call's key), new or reopened."""
        parent = self.parent
        return open_agent_run(parent.journal, run_id, context, tools,
                              {**options, "parent": parent.run_id},
                              key_run=parent.key_run, chain=self.chain)


def open_agent_run(journal: Journal, run_id: str | None, context: Context,
                   tools: tuple[Any, ...], options: Mapping[str, Any], *,
                   key_run: str | None = None, chain: tuple[str, ...] = ()) -> AgentRun:
    """A new agent run in ``journal``; or, for a ``run_id`` the journal holds with the same
    header, that run reopened (one recorded for anything else is refused); held by the
    journal either way. ``key_run`` and ``chain`` are a delegate's (see :class:`AgentRun`):
    a delegate's run is taken over by whoever holds the run that delegated."""
    text, digest = agent_header(context, tools, options)
    run_id = run_id if run_id is not None else uuid.uuid4().hex
    dry = options.get("mocks") is not None
    created = None if journal.store.header(run_id) is not None else journal.create(
        RunHeader(run_id, FORMAT_VERSION, digest, text, utc_stamp()))
    if created is not None:
        return AgentRun(journal, run_id, [], created, key_run=key_run, chain=chain, dry=dry)
    if journal.run_header(run_id).digest != digest:
        raise JournalUnreadable(
            f"{journal.name}: run {run_id!r} was recorded for another context, tools or "
            "options: resume it as it was recorded (obelisk resume), or choose another run id")
    tenure = _hold(journal, run_id, chain)
    try:
        return AgentRun(journal, run_id, list(journal.records(run_id)), tenure,
                        key_run=key_run, chain=chain, dry=dry)
    except BaseException:
        journal.leases.release(tenure)
        raise


def _hold(journal: Journal, run_id: str, chain: tuple[str, ...]) -> Tenure:
    held = journal.leases.held(run_id)
    if held is not None:
        return held
    return journal.claim(run_id, take_over=bool(chain))
