"""Durable agent runs: the :class:`AgentRun` tick source the agent loop asks for each
tick's solution and runs each tick's plan through, and :func:`resume_agent`.

A recorded agent run holds, per tick, the LLM's ``solution`` row and then the rows of the
tick's plan run (the rows after a tick's solution are that tick's). Resuming runs the loop
again from the recorded start: a tick whose solution is recorded is not asked of the LLM
again, and its plan's rows are replayed through the machine (``replay_open``) and the run
continued with the normal asyncio loop (``drive_async``), exactly as a plan's resume does.
Nothing here decides what a tick or a call does.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from attrs import frozen

from obelisk.agent.hooks import (
    AgentObserver,
    ApprovePlan,
    EditPlan,
    OnPlan,
    PlanVerdict,
    RejectPlan,
)
from obelisk.agent.loop import run_agent
from obelisk.agent.result import AgentResult
from obelisk.agent.source import NO_USAGE, StreamStep
from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.plan import compile_plan
from obelisk.core.context import Context
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.events import RunEvent
from obelisk.interpreters.executors import AsyncExecutor
from obelisk.interpreters.outcomes import Outcome
from obelisk.interpreters.result import RunResult
from obelisk.journal.codec import decode, digest_of, dumps
from obelisk.journal.recorder import Journal, RunRecorder, utc_stamp
from obelisk.journal.run import (
    _async_invoker,
    _interrupted,
    _Session,
    _watched,
    at_most_once,
    checked_header,
    replayed_session,
)
from obelisk.journal.store import FORMAT_VERSION, JournalUnreadable, Record, RecordKind, RunHeader
from obelisk.llm.base import LLM, Reply, Usage

#: The rows of a tick's plan run (the others are the run's own).
_TICK_ROWS = frozenset({RecordKind.START, RecordKind.INVOKE, RecordKind.DECIDE,
                        RecordKind.FINISH, RecordKind.CANCEL})


#: The ends a resume goes on from.
_GOES_ON = frozenset({"cancelled", "failed"})


def _status(record: Record) -> str:
    try:
        return str(json.loads(record.data or "{}").get("status"))
    except (ValueError, AttributeError):
        return ""


def _usage_data(usage: Usage) -> str:
    return dumps({"in": usage.input_tokens, "out": usage.output_tokens})


def recorded_cost(journal: Journal, run_id: str) -> Usage:
    """The tokens a delegate's run recorded: its own, and its delegates' whose calls have a
    recorded outcome (each delegate's run records its own)."""
    records = list(journal.records(run_id))
    return AgentRun(journal, run_id, records, quiet=True).cost()


def review_data(verdict: PlanVerdict) -> dict[str, Any]:
    """``on_plan``'s verdict as a REVIEW row's JSON."""
    if isinstance(verdict, EditPlan):
        return {"verdict": "edit", "calls": list(verdict.calls)}
    if isinstance(verdict, RejectPlan):
        return {"verdict": "reject", "reason": verdict.reason}
    return {"verdict": "approve"}


def review_of(data: Mapping[str, Any]) -> PlanVerdict:
    """The verdict a REVIEW row's JSON records."""
    match data["verdict"]:
        case "approve":
            return ApprovePlan()
        case "edit":
            return EditPlan(list(data["calls"]))
        case "reject":
            return RejectPlan(str(data["reason"]))
    raise ValueError(f"unknown plan verdict {data['verdict']!r}")


def agent_header(context: Context, tools: tuple[Any, ...],
                 options: Mapping[str, Any]) -> tuple[str, str]:
    """An agent run's header (its initial context, passed-in tools and options, marked
    ``"kind": "agent"``) as JSON text, and its digest."""
    header = {"calls": [], "context": context.to_json(), "tools": list(tools),
              "options": {"kind": "agent", **options}}
    text = dumps(header)
    return text, digest_of(text)


class AgentRun:
    """One agent run recorded in a journal (a new one, or one reopened to resume it): the
    :class:`obelisk.agent.source.TickSource` of ``run_agent(journal=...)``.

    ``key_run`` and ``chain`` make the idempotency keys: a delegate's run is recorded
    under its own run id but its keys carry the outermost run's id and the delegates'
    chain.
    """

    def __init__(self, journal: Journal, run_id: str, records: list[Record], *,
                 key_run: str | None = None, chain: tuple[str, ...] = (),
                 dry: bool = False, quiet: bool = False) -> None:
        self.journal = journal
        #: A dry run: every invocation is on disk before it runs (mock turns follow them).
        self.dry = dry
        self.run_id = run_id
        self.key_run = key_run or run_id
        self.chain = chain
        nothing = compile_plan([])
        self.recorder = RunRecorder(journal, run_id, nothing,
                                    records[-1].seq + 1 if records else 1,
                                    chain=chain, key_run=self.key_run)
        self.recorder.load_solutions(records)
        # A run cancelled, or failed because the LLM did, goes on when resumed (from the
        # tick it stopped at); one that ended otherwise replays to its result.
        self.ended = any(r.kind is RecordKind.END and _status(r) not in _GOES_ON
                         for r in records)
        self._rows: dict[int, list[Record]] = {}
        self._streamed: dict[int, list[Record]] = {}  # a streamed tick's rows, all kinds
        self._usage: dict[int, Usage] = {}
        self._reviews: dict[int, PlanVerdict] = {}
        self._admitted: dict[int, list[Any]] = {}
        self._invoked: dict[int, list[int]] = {}
        self._delegates: dict[str, int] = {}  # the delegates' runs, with their ticks
        finished: set[str] = set()  # the keys of the calls with a recorded outcome
        keys: dict[int, str] = {}
        tick = 0
        try:
            for record in records:
                kind = record.kind
                if kind in _TICK_ROWS:
                    self._rows.setdefault(tick, []).append(record)
                    if tick in self._streamed:
                        self._streamed[tick].append(record)
                    if kind is RecordKind.INVOKE and record.node is not None:
                        self._invoked.setdefault(tick, []).append(record.node)
                        keys[record.node] = record.data or ""
                    elif kind is RecordKind.FINISH and record.node in keys:
                        finished.add(keys[record.node])
                elif kind is RecordKind.DELEGATE and record.node is not None:
                    self._delegates[json.loads(record.data or "")["run"]] = record.node
                elif record.node is None:
                    continue
                elif kind is RecordKind.SOLUTION:
                    if record.node != tick:
                        keys = {}
                    tick = record.node
                    if tick in self._streamed:
                        self._streamed[tick].append(record)
                elif kind is RecordKind.ADMIT:
                    if record.node != tick:
                        keys = {}
                    tick = record.node
                    self._streamed.setdefault(tick, []).append(record)
                    self._admitted.setdefault(tick, []).append(json.loads(record.data or ""))
                elif kind is RecordKind.USAGE:
                    paid = json.loads(record.data or "")
                    self._usage[record.node] = self._usage.get(record.node, Usage()) + Usage(
                        int(paid["in"]), int(paid["out"]))
                elif kind is RecordKind.REVIEW:
                    self._reviews[record.node] = review_of(json.loads(record.data or ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalUnreadable(f"{journal.name}: run {run_id!r}: a row does not decode "
                                    f"({exc!r}): the journal is damaged") from None
        # A delegate whose call's outcome is recorded does not run again: what its run
        # cost (recorded in its own rows) is this run's recorded cost.
        for run, at in self._delegates.items():
            if run in finished:
                self._usage[at] = self._usage.get(at, Usage()) + recorded_cost(journal, run)
        if records and not self.ended and not quiet:  # quiet: read, not resumed
            self.recorder.resumed()

    def recorded_reply(self, tick: int) -> Reply | None:
        """The recorded solution of ``tick`` as a reply without usage, or None."""
        # A recorded solution may be JSON null (an invalid one): it is still recorded.
        if not self.recorder.has_solution(tick):
            return None
        return Reply(self.recorder.recorded_solution(tick))

    def record_solution(self, tick: int, solution: Any, usage: Usage = NO_USAGE) -> None:
        """Record the LLM's solution for ``tick`` and its cost: on disk (at ``sync``
        durability) together with the tick's first event, which comes before any call of
        the tick runs, or at :meth:`settle`."""
        paid = usage.input_tokens or usage.output_tokens
        self.recorder.record_solution(tick, solution, _usage_data(usage) if paid else None)

    def settle(self) -> None:
        """Commit what is recorded so far."""
        self.recorder.settle()

    def cost(self) -> Usage:
        """The tokens the run recorded, all ticks together."""
        total = Usage()
        for usage in self._usage.values():
            total = total + usage
        return total

    def recorded_usage(self, tick: int) -> Usage:
        """The tokens recorded for ``tick`` before this process (replayed work's cost)."""
        return self._usage.get(tick, Usage())

    def record_usage(self, tick: int, usage: Usage) -> None:
        """Record tokens a latent call or a delegate paid during ``tick``: on disk with the
        call's outcome (with the next committed row)."""
        if usage.input_tokens or usage.output_tokens:
            self.recorder.record(RecordKind.USAGE, tick, _usage_data(usage), commit=False)

    def recorded_review(self, tick: int) -> PlanVerdict | None:
        """What ``on_plan`` said about ``tick``'s plan, when recorded."""
        return self._reviews.get(tick)

    def record_review(self, tick: int, verdict: PlanVerdict) -> None:
        """Record ``on_plan``'s verdict on ``tick``'s plan, on disk before the plan runs."""
        self.recorder.record(RecordKind.REVIEW, tick, dumps(review_data(verdict)),
                             commit=True)

    def recorded_calls(self, tick: int) -> list[Any] | None:
        """The calls of ``tick``'s streamed solution admitted before the stop, or None when
        ``tick`` was not streamed (or nothing of it was recorded)."""
        return self._admitted.get(tick)

    def record_admitted(self, tick: int, call: Any) -> None:
        """Record a streamed call of ``tick`` as admitted, on disk before it can start."""
        self.recorder.record(RecordKind.ADMIT, tick, dumps(call), commit=True)

    def stream_tick(self, tick: int) -> StreamTick:
        """The journal of streamed tick ``tick``: its recorded steps, and its recorder."""
        rows = self._streamed.pop(tick, None)
        if rows is None and self.recorder.has_solution(tick):  # a stream without calls
            rows = [Record(0, RecordKind.SOLUTION, tick,
                           dumps(self.recorder.recorded_solution(tick)))]
        return StreamTick(self, tick, rows or [])

    def invoked(self, tick: int) -> tuple[int, ...]:
        """The nodes of ``tick``'s plan recorded as invoked, in the order they were."""
        return tuple(self._invoked.get(tick, ()))

    async def run_tick(self, tick: int, plan: CompiledPlan, context: Context,
                       invoke: AsyncExecutor, approve: Callable[[dict[str, Any]], Any] | None,
                       clock: Callable[[], str], *, max_concurrency: int | None,
                       timeout: float | None) -> RunResult:
        """Run (or replay, then continue) tick ``tick``'s plan, recording its events; each
        call gets its idempotency key (run id, delegate chain, tick, call, instance)."""
        self.recorder.begin_tick(tick, plan)
        rows = self._rows.pop(tick, None)
        if rows:
            session = replayed_session(self.recorder, plan, context, rows,
                                       approvals=approve is not None, ended=self.ended,
                                       isolate_invalid=True)
        else:
            session = _Session(self.recorder, None, frozenset(), self.ended)
        try:
            return await drive_async(plan, context,
                                     _async_invoker(invoke, session, always=self.dry), approve,
                                     clock, max_concurrency=max_concurrency, timeout=timeout,
                                     observer=_watched(session, None), isolate_invalid=True,
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
        if key not in self._delegates:  # the row is on disk with the call's outcome
            self._delegates[key] = tick
            self.recorder.record(RecordKind.DELEGATE, tick, dumps({"run": key}),
                                 commit=False)
        return _Nested(self, (*self.chain, link))

    def end(self, status: str, errors: int) -> None:
        """Record the run's end (unless it had ended before this resume) and commit."""
        if not self.ended:
            self.recorder.ended(status, errors)


class StreamTick:
    """The journal of one streamed tick (the agent loop's
    :class:`~obelisk.agent.source.StreamJournal`): its recorded steps, decoded, and the
    recording of the rest of it into the run's recorder."""

    def __init__(self, run: AgentRun, tick: int, rows: list[Record]) -> None:
        self.run = run
        self.tick = tick
        recorder = run.recorder
        recorder.begin_tick(tick, compile_plan([]))
        self.steps: list[StreamStep] = []
        calls: list[Any] = []
        invoked: set[int] = set()
        finished: set[int] = set()
        try:
            for record in rows:
                if record.kind is RecordKind.ADMIT:
                    calls.append(json.loads(record.data or ""))
                    self.steps.append(("admit", calls[-1]))
                elif record.kind is RecordKind.SOLUTION:
                    self.steps.append(("close", json.loads(record.data or "")["output"]))
                elif record.kind is RecordKind.INVOKE and record.node is not None:
                    invoked.add(record.node)
                else:
                    if record.kind is RecordKind.FINISH and record.node is not None:
                        finished.add(record.node)
                    self.steps.extend(("event", e) for e in decode([record], run.journal.name))
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalUnreadable(f"{run.journal.name}: run {run.run_id!r}: streamed tick "
                                    f"{tick} does not decode ({exc!r})") from None
        self.session = _Session(recorder, None, frozenset(invoked - finished), run.ended)
        self._seen: set[int] = set()

    def follow(self, plan: CompiledPlan) -> None:
        """The tick's plan as replayed (its nodes name the keys of the calls run again)."""
        self.run.recorder.plan = plan

    def admitted(self, call: Any, plan: CompiledPlan) -> None:
        """Record the call, on disk before it can start; follow the grown plan."""
        self.run.recorder.plan = plan
        self.run.recorder.record(RecordKind.ADMIT, self.tick, dumps(call), commit=True)

    def started(self, node: int) -> None:
        """Record that the machine started a batch (``node`` its first call)."""
        self.run.recorder.record(RecordKind.START, node, None, commit=False)

    def decided(self, event: RunEvent) -> None:
        """Record the approval hook's verdict, on disk before the call runs."""
        self.run.recorder(event)

    def invoke(self, invocation: Invocation) -> Outcome | None:
        """Record the invocation and give the call its idempotency key (or the Interrupted
        outcome of an at-most-once call that was running at the stop)."""
        stopped = _interrupted(self.session, invocation, self._seen)
        if stopped is not None:
            return stopped
        invocation.call["_idempotencyKey"] = self.run.recorder.invoking(
            invocation.node, commit=self.run.dry or at_most_once(invocation.tool))
        return None

    def finished(self, event: RunEvent) -> None:
        """Record a call's outcome (and its date), on disk before the run goes on."""
        self.run.recorder(event)

    def closed(self, solution: Any, usage: Usage) -> None:
        """Record the whole solution and its cost when the stream ended."""
        paid = usage.input_tokens or usage.output_tokens
        self.run.recorder.record_solution(self.tick, solution,
                                          _usage_data(usage) if paid else None)
        self.run.recorder.settle()


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
    header, that run reopened (one recorded for anything else is refused). ``key_run`` and
    ``chain`` are a delegate's (see :class:`AgentRun`)."""
    text, digest = agent_header(context, tools, options)
    run_id = run_id if run_id is not None else uuid.uuid4().hex
    existing = journal.store.header(run_id)
    dry = options.get("mocks") is not None
    if existing is None:
        journal.store.create_run(RunHeader(run_id, FORMAT_VERSION, digest, text, utc_stamp()))
        return AgentRun(journal, run_id, [], key_run=key_run, chain=chain, dry=dry)
    if existing.digest != digest:
        raise JournalUnreadable(
            f"{journal.name}: run {run_id!r} was recorded for another context, tools or "
            "options: resume it as it was recorded (obelisk resume), or choose another run id")
    return AgentRun(journal, run_id, list(journal.records(run_id)), key_run=key_run,
                    chain=chain, dry=dry)


@frozen
class RecordedAgent:
    """An agent run as it was started: its header, initial context, tools and options."""

    header: RunHeader
    context: Context
    tools: tuple[Any, ...]
    options: Mapping[str, Any]


def run_kind(journal: Journal, run_id: str | None = None) -> str:
    """``"plan"`` or ``"agent"``: what the run ``run_id`` (None: the newest) records."""
    header = journal.run_header(run_id)
    try:
        kind = json.loads(header.header)["options"]["kind"]
    except (KeyError, TypeError, ValueError):
        kind = None
    if kind not in ("plan", "agent"):
        raise JournalUnreadable(f"{journal.name}: run {header.run_id!r}: its header does not "
                                "read: the journal is damaged")
    return str(kind)


def recorded_agent(journal: Journal, run_id: str | None = None) -> RecordedAgent:
    """The agent run ``run_id`` (None: the newest) as it was started, checked."""
    header, where = checked_header(journal, run_id)
    try:
        data = json.loads(header.header)
        options = dict(data["options"])
        if options.pop("kind") != "agent":
            raise JournalUnreadable(f"{where} is a plan's run: resume it without --llm")
        return RecordedAgent(header, Context.of(data["context"]), tuple(data["tools"]),
                             options)
    except (KeyError, TypeError, ValueError) as exc:
        raise JournalUnreadable(f"{where}: its header does not read ({exc!r})") from None


async def resume_agent(journal: Journal, run_id: str | None = None, *, llm: LLM,
                       activities: Mapping[str, Activity] | None = None,
                       approve: Callable[[dict[str, Any]], Any] | None = None,
                       clock: Callable[[], Any] | None = None,
                       observer: AgentObserver | None = None,
                       delegate_root: str | os.PathLike[str] | None = None,
                       on_plan: OnPlan | None = None) -> AgentResult:
    """Continue the agent run ``run_id`` (None: the newest) of ``journal``: recorded ticks
    are replayed (the LLM is not asked again for them, recorded calls do not run again,
    recorded ``on_plan`` verdicts are not asked again), then the loop goes on with ``llm``.
    A run that had ended returns its result again. A dry run goes on with its recorded
    mocks, a streamed one streaming; ``on_plan`` is needed when the run had one."""
    run = recorded_agent(journal, run_id)
    options = run.options
    where = f"{journal.name}: run {run.header.run_id!r}"
    if "parent" in options:
        raise JournalUnreadable(f"{where} is a delegate's run inside run "
                                f"{options['parent']!r}: resume that run")
    for key, given, what in (("approvals", approve, "an approval hook (--approve on the "
                              "command line)"), ("on_plan", on_plan, "a plan review hook "
                                                 "(on_plan; --approve in lazy mode)")):
        if bool(options.get(key)) != (given is not None):
            asked = "with" if options.get(key) else "without"
            raise JournalUnreadable(f"{where} was started {asked} {what}; resume it {asked} "
                                    "one")
    return await run_agent(
        run.context, llm, tools=run.tools, activities=activities,
        output_schema=options.get("output_schema"), mode=options.get("mode"),
        max_ticks=int(options.get("max_ticks", 25)),
        max_stalls=int(options.get("max_stalls", 2)), approve=approve, clock=clock,
        max_concurrency=options.get("max_concurrency"), timeout=options.get("timeout"),
        instances=bool(options.get("instances")), observer=observer, on_plan=on_plan,
        mocks=options.get("mocks"), latent_tools=options.get("latent_tools"),
        stream=bool(options.get("stream")),
        delegate_root=delegate_root, journal=journal, run_id=run.header.run_id)
