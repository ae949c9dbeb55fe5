"""Durable runs of plans: :func:`run_durable` / :func:`run_durable_async` record a run in a
journal as it goes; :func:`resume` / :func:`resume_async` replay a recorded run through the
machine (``replay_open``) and continue it with the normal interpreter loop.

Nothing here decides what a call does: the recorded events go through the machine's own
functions, and the loop is ``drive_sync`` / ``drive_async``. What this module adds is the
bookkeeping around an invocation: the ``invoke`` row and its idempotency key (on disk
before the activity runs for an at-most-once tool; with the outcome for any other, which
runs again when its outcome is missing either way), and for an at-most-once tool that was
running when the run stopped, an ``Interrupted`` outcome instead of a second invocation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, frozen
from pyrsistent import PMap, pvector

from obelisk.agent.result import AgentResult
from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.plan import compile_plan
from obelisk.compiler.tools import Tool, ToolRegistry
from obelisk.core.context import Context
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.aio import async_activity_invoker, drive_async
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.collector import gc_tuned
from obelisk.interpreters.common import Observer, clock_of, prepare, traced
from obelisk.interpreters.executors import AsyncExecutor, SyncExecutor
from obelisk.interpreters.machine import refuse
from obelisk.interpreters.outcomes import Outcome, Raised
from obelisk.interpreters.replaying import Replayed, replay_open
from obelisk.interpreters.result import RunResult
from obelisk.interpreters.sync import activity_invoker, drive_sync
from obelisk.journal.codec import decode, digest_of, header_of
from obelisk.journal.recorder import Journal, RunRecorder, utc_stamp
from obelisk.journal.store import (
    FORMAT_VERSION,
    JournalUnreadable,
    Record,
    RecordKind,
    RunHeader,
)

#: The schema keyword that marks a tool whose calls must never run twice.
AT_MOST_ONCE = "x-obelisk-at-most-once"

Approval = Callable[[dict[str, Any]], Any]


def at_most_once(tool: Tool | None) -> bool:
    """True when the tool's schema says ``"x-obelisk-at-most-once": true``."""
    schema = tool.schema if tool is not None else None
    return isinstance(schema, PMap) and schema.get(AT_MOST_ONCE) is True


@frozen
class _Session:
    """A run about to be driven: its recorder, the replayed state (None for a new run),
    the nodes invoked before the stop without an outcome, and whether it had ended."""

    recorder: RunRecorder
    replayed: Replayed | None
    interrupted: frozenset[int]
    ended: bool


def _options(plan: CompiledPlan, approve: Approval | None, interpreter: str,
             max_concurrency: int | None, timeout: float | None) -> dict[str, Any]:
    return {"kind": "plan", "instances": plan.instanced, "approvals": approve is not None,
            "interpreter": interpreter, "max_concurrency": max_concurrency, "timeout": timeout}


def _open_session(journal: Journal, run_id: str | None, plan: CompiledPlan, context: Context,
                  options: Mapping[str, Any]) -> _Session:
    """A new run in the journal; or, for a ``run_id`` already there with the same header,
    that run reopened (refused when its header differs)."""
    text, digest = header_of(plan, context, options)
    run_id = run_id if run_id is not None else uuid.uuid4().hex
    existing = journal.store.header(run_id)
    if existing is None:
        journal.store.create_run(RunHeader(run_id, FORMAT_VERSION, digest, text, utc_stamp()))
        return _Session(RunRecorder(journal, run_id, plan), None, frozenset(), False)
    if existing.digest != digest:
        raise JournalUnreadable(
            f"{journal.name}: run {run_id!r} was recorded for another plan, context, tools or "
            "options: resume it as it was recorded (obelisk resume), or choose another run id")
    return _reopen(journal, existing, plan, context, options)


def _reopen(journal: Journal, header: RunHeader, plan: CompiledPlan, context: Context,
            options: Mapping[str, Any]) -> _Session:
    with gc_tuned():  # reading and replaying make many objects, as a run does
        return _reopened(journal, header, plan, context, options)


def _reopened(journal: Journal, header: RunHeader, plan: CompiledPlan, context: Context,
              options: Mapping[str, Any]) -> _Session:
    records = list(journal.records(header.run_id))
    ended = any(r.kind is RecordKind.END and '"cancelled"' not in (r.data or "")
                for r in records)
    recorder = RunRecorder(journal, header.run_id, plan, records[-1].seq + 1 if records else 1)
    session = replayed_session(recorder, plan, context, records,
                               approvals=bool(options.get("approvals")), ended=ended)
    recorder.load_solutions(records)
    if not ended:
        recorder.resumed()
    return session


def replayed_session(recorder: RunRecorder, plan: CompiledPlan, context: Context,
                     records: Sequence[Record], *, approvals: bool, ended: bool,
                     isolate_invalid: bool = False) -> _Session:
    """The session that continues ``plan``'s run from its recorded rows: the rows replayed
    through the machine (``replay_open``), and the calls invoked without an outcome."""
    journal = recorder.journal
    events = decode(records, journal.name)
    invoked = {r.node for r in records if r.kind is RecordKind.INVOKE}
    try:
        with gc_tuned():  # as a run would: the replayed context is many small objects
            replayed = replay_open(plan, context, events, approvals=approvals,
                                   isolate_invalid=isolate_invalid)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise JournalUnreadable(f"{journal.name}: run {recorder.run_id!r} does not replay "
                                f"through its plan ({exc!r}): the journal is damaged") from None
    interrupted = frozenset(i.node for i in replayed.running if i.node in invoked)
    # The calls that were in flight go first: with a concurrency limit, calls started but
    # never invoked must not push them back (their outcomes are what is missing).
    running = sorted(replayed.running, key=lambda i: i.node not in interrupted)
    return _Session(recorder, evolve(replayed, running=tuple(running)), interrupted, ended)


def _interrupted(session: _Session, invocation: Invocation, seen: set[int]) -> Outcome | None:
    """The Interrupted outcome of an at-most-once call that was running at the stop."""
    node = invocation.node
    if node not in session.interrupted or node in seen or not at_most_once(invocation.tool):
        return None
    seen.add(node)
    key = session.recorder.key(node)
    name = invocation.tool.name if invocation.tool is not None else "?"
    return Raised("Interrupted", f"the run stopped while this call was running, and its tool "
                  f"{name!r} is at-most-once ({AT_MOST_ONCE}), so it is not run again; check "
                  f"whether it took effect with its idempotency key {key!r}",
                  {"idempotencyKey": key})


def _sync_invoker(inner: SyncExecutor, session: _Session) -> SyncExecutor:
    seen: set[int] = set()

    def run(invocation: Invocation, wait: Callable[[Any], Any]) -> Outcome:
        stopped = _interrupted(session, invocation, seen) if session.interrupted else None
        if stopped is not None:
            return stopped
        invocation.call["_idempotencyKey"] = session.recorder.invoking(
            invocation.node, commit=at_most_once(invocation.tool))
        return inner(invocation, wait)

    return run


def _async_invoker(inner: AsyncExecutor, session: _Session, *,
                   always: bool = False) -> AsyncExecutor:
    # ``always``: every invocation is on disk before it runs, not only at-most-once ones.
    seen: set[int] = set()

    async def run(invocation: Invocation) -> Outcome:
        stopped = _interrupted(session, invocation, seen) if session.interrupted else None
        if stopped is not None:
            return stopped
        invocation.call["_idempotencyKey"] = session.recorder.invoking(
            invocation.node, commit=always or at_most_once(invocation.tool))
        return await inner(invocation)

    return run


def _watched(session: _Session, watch: Observer | None) -> Observer:
    # The recorder sees every event first; the caller's observer (a display) after it.
    recorder = session.recorder
    if watch is None:
        return recorder

    def both(event: Any) -> None:
        recorder(event)
        watch(event)

    return both


def _traced(session: _Session, trace: bool | None,
            watch: Observer | None) -> tuple[bool, Replayed | None]:
    """Whether the run records its trace: as asked, else when the caller's observer
    follows it. The journal's own recorder does not count: it writes events, not the
    trace, and a trace nobody reads costs a no-op call a sixth of its time. A resumed run
    follows the same rule, whatever the replay made, so it returns what an uninterrupted
    run returns."""
    keep = traced(trace, watch)
    replayed = session.replayed
    if replayed is not None and not keep and replayed.state.tracing:
        replayed = evolve(replayed, state=evolve(replayed.state, tracing=False,
                                                 trace=pvector()))
    return keep, replayed


def _drive(session: _Session, plan: CompiledPlan, context: Context,
           activities: Mapping[str, Activity] | None, approve: Approval | None,
           latent: Activity | None, clock: Callable[[], Any] | None,
           watch: Observer | None = None, trace: bool | None = None) -> RunResult:
    invoke = _sync_invoker(activity_invoker(plan, activities or {}, latent), session)
    keep, replayed = _traced(session, trace, watch)
    try:
        result = drive_sync(plan, context, invoke, approve, clock_of(clock),
                            _watched(session, watch), resume=replayed, trace=keep)
    finally:
        _flush_quietly(session.recorder)
    if not session.ended:
        session.recorder.end(result)
    return result


async def _drive_async(session: _Session, plan: CompiledPlan, context: Context,
                       activities: Mapping[str, Activity] | None, approve: Approval | None,
                       latent: Activity | None, clock: Callable[[], Any] | None,
                       max_concurrency: int | None, timeout: float | None,
                       watch: Observer | None = None, trace: bool | None = None) -> RunResult:
    invoke = _async_invoker(async_activity_invoker(plan, activities or {}, latent), session)
    keep, replayed = _traced(session, trace, watch)
    try:
        result = await drive_async(plan, context, invoke, approve, clock_of(clock),
                                   max_concurrency=max_concurrency, timeout=timeout,
                                   observer=_watched(session, watch), resume=replayed,
                                   trace=keep)
    finally:
        _flush_quietly(session.recorder)
    if not session.ended:
        session.recorder.end(result)
    return result


def _flush_quietly(recorder: RunRecorder) -> None:
    # On the way out of a failed run, commit what can be; the run's own error wins.
    with contextlib.suppress(Exception):
        recorder.flush()


def run_durable(
    plan: CompiledPlan | Sequence[Any],
    context: Context | Iterable[Any] | None = None,
    *,
    journal: Journal,
    run_id: str | None = None,
    activities: Mapping[str, Activity] | None = None,
    approve: Approval | None = None,
    latent: Activity | None = None,
    clock: Callable[[], Any] | None = None,
    tools: ToolRegistry | Iterable[Any] | None = (),
    instances: bool = False,
    observer: Observer | None = None,
    trace: bool | None = None,
) -> RunResult:
    """:func:`obelisk.run_sync`, recorded in ``journal`` under ``run_id`` (a new id when
    None; the id is ``result`` 's ``journal_run`` in the journal's runs).

    ``trace``: record the run's trace, as for ``run_sync``; None records it when
    ``observer`` is given (the journal's own recorder does not count).

    A ``run_id`` the journal already holds for the same plan, context, tools and options
    is resumed; one recorded for anything else is refused with
    :class:`~obelisk.journal.store.JournalUnreadable`. Each activity receives its
    idempotency key as the call's ``_idempotencyKey``.
    """
    compiled, ctx = prepare(plan, context, tools, instances)
    session = _open_session(journal, run_id, compiled, ctx,
                            _options(compiled, approve, "sync", None, None))
    return _drive(session, compiled, ctx, activities, approve, latent, clock, observer, trace)


async def run_durable_async(
    plan: CompiledPlan | Sequence[Any],
    context: Context | Iterable[Any] | None = None,
    *,
    journal: Journal,
    run_id: str | None = None,
    activities: Mapping[str, Activity] | None = None,
    approve: Approval | None = None,
    latent: Activity | None = None,
    clock: Callable[[], Any] | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    tools: ToolRegistry | Iterable[Any] | None = (),
    instances: bool = False,
    observer: Observer | None = None,
    trace: bool | None = None,
) -> RunResult:
    """:func:`obelisk.run_async`, recorded in ``journal`` (see :func:`run_durable`)."""
    compiled, ctx = prepare(plan, context, tools, instances)
    session = _open_session(journal, run_id, compiled, ctx, _options(
        compiled, approve, "asyncio", max_concurrency, timeout))
    return await _drive_async(session, compiled, ctx, activities, approve, latent, clock,
                              max_concurrency, timeout, observer, trace)


@frozen
class Recorded:
    """A recorded run as it was started: its header, compiled plan, context and options."""

    header: RunHeader
    plan: CompiledPlan
    context: Context
    options: Mapping[str, Any]


def checked_header(journal: Journal, run_id: str | None) -> tuple[RunHeader, str]:
    """The header of run ``run_id`` (None: the newest) and how to name the run in an error;
    a header of another format version or whose digest does not match is refused."""
    header = journal.run_header(run_id)
    where = f"{journal.name}: run {header.run_id!r}"
    if header.version != FORMAT_VERSION:
        raise JournalUnreadable(f"{where} was written in journal format {header.version}; "
                                f"this obelisk reads format {FORMAT_VERSION}")
    if digest_of(header.header, header.version) != header.digest:
        raise JournalUnreadable(f"{where}: its header does not match its digest: the journal "
                                "is damaged or was edited")
    return header, where


def recorded(journal: Journal, run_id: str | None = None) -> Recorded:
    """The run ``run_id`` (None: the newest) as it was started, checked: a header of
    another format version or whose digest does not match is refused."""
    header, where = checked_header(journal, run_id)
    try:
        data = json.loads(header.header)
        options = data["options"]
        if options.get("kind") != "plan":
            raise JournalUnreadable(f"{where} is an agent run: resume it with the agent loop")
        context = Context.of(data["context"])
        plan = compile_plan(data["calls"], tools=data["tools"], context=context,
                            instances=bool(options["instances"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise JournalUnreadable(f"{where}: its header does not read ({exc!r})") from None
    if not plan.ok:
        raise refuse(plan)
    return Recorded(header, plan, context, options)


def _resumable(journal: Journal, run_id: str | None,
               approve: Approval | None) -> tuple[Recorded, _Session]:
    run = recorded(journal, run_id)
    if bool(run.options.get("approvals")) != (approve is not None):
        asked = "with" if run.options.get("approvals") else "without"
        raise JournalUnreadable(
            f"{journal.name}: run {run.header.run_id!r} was started {asked} an approval hook; "
            f"resume it {asked} one (--approve on the command line)")
    return run, _reopen(journal, run.header, run.plan, run.context, run.options)


def resume(journal: Journal, run_id: str | None = None, *,
           activities: Mapping[str, Activity] | None = None, approve: Approval | None = None,
           latent: Activity | None = None, llm: Any = None,
           clock: Callable[[], Any] | None = None, interpreter: str | None = None,
           max_concurrency: int | None = None, timeout: float | None = None,
           observer: Callable[[Any], None] | None = None,
           on_plan: Callable[[Any], Any] | None = None) -> RunResult | AgentResult:
    """Continue the run ``run_id`` (None: the newest) of ``journal`` and return its result
    (a :class:`RunResult`, or an :class:`obelisk.AgentResult` for an agent run).

    The record is replayed through the machine: a recorded outcome is never produced
    again, a call invoked without a recorded outcome is invoked again with the same
    idempotency key (an at-most-once tool's gets an ``Interrupted`` error instead), a call
    waiting for approval is asked about again. A run that had ended returns its result
    without running anything. ``interpreter`` defaults to the recorded one.

    An agent run is resumed by the agent loop with ``llm`` (required), ``activities``,
    ``approve``, ``clock``, ``observer`` (an agent observer) and ``on_plan``: see
    :func:`obelisk.journal.agent.resume_agent`. A plan's latent calls use ``latent``.
    """
    from obelisk.journal.agent import resume_agent, run_kind  # it imports this module

    if run_kind(journal, run_id) == "agent":
        if llm is None:
            raise JournalUnreadable(f"{journal.name}: the run is an agent run: resume it with "
                                    "an LLM (llm=..., --llm on the command line)")
        return asyncio.run(resume_agent(journal, run_id, llm=llm, activities=activities,
                                        approve=approve, clock=clock, observer=observer,
                                        on_plan=on_plan))
    run, session = _resumable(journal, run_id, approve)
    chosen = interpreter or run.options.get("interpreter", "sync")
    if chosen == "asyncio":
        return asyncio.run(_drive_async(session, run.plan, run.context, activities, approve,
                                        latent, clock, max_concurrency, timeout, observer))
    return _drive(session, run.plan, run.context, activities, approve, latent, clock, observer)


async def resume_async(journal: Journal, run_id: str | None = None, *,
                       activities: Mapping[str, Activity] | None = None,
                       approve: Approval | None = None, latent: Activity | None = None,
                       clock: Callable[[], Any] | None = None,
                       max_concurrency: int | None = None,
                       timeout: float | None = None,
                       observer: Observer | None = None) -> RunResult:
    """:func:`resume` on the running event loop, with the asyncio interpreter."""
    run, session = _resumable(journal, run_id, approve)
    return await _drive_async(session, run.plan, run.context, activities, approve, latent,
                              clock, max_concurrency, timeout, observer)
