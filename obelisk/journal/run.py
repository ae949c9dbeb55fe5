"""Durable runs of plans: :func:`run_durable` / :func:`run_durable_async` record a run in a
journal as it goes; :func:`resume_plan` / :func:`resume_async` replay a recorded run through
the machine (``replay_open``) and continue it with the normal interpreter loop.

Nothing here decides what a call does: the recorded events go through the machine's own
functions, and the loop is ``drive_sync`` / ``drive_async``. The bookkeeping around each
invocation is :mod:`obelisk.journal.session`'s. A run is held (claimed) while it is
driven, and released when the drive ends, however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attrs import evolve, frozen
from pyrsistent import pvector

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.plan import compile_plan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.aio import async_activity_invoker, drive_async
from obelisk.interpreters.cancel import Stop
from obelisk.interpreters.common import Observer, clock_of, prepare, traced
from obelisk.interpreters.events import RunEvent
from obelisk.interpreters.follower import PlanFollower, joined
from obelisk.interpreters.machine import refuse
from obelisk.interpreters.replaying import Replayed
from obelisk.interpreters.result import RunResult
from obelisk.interpreters.stream import EventSink, emitter_for, following
from obelisk.interpreters.sync import activity_invoker, drive_sync
from obelisk.journal.codec import decode, header_of
from obelisk.journal.lease import Tenure
from obelisk.journal.recorder import RunRecorder, last_trace, utc_stamp
from obelisk.journal.retell import retell
from obelisk.journal.session import (
    Session,
    async_invoker,
    flush_quietly,
    replayed_session,
    sync_invoker,
    watched,
)
from obelisk.journal.store import (
    FORMAT_VERSION,
    JournalUnreadable,
    RecordKind,
    RunHeader,
    end_status,
)

if TYPE_CHECKING:
    from obelisk.journal.journal import Journal

Approval = Callable[[dict[str, Any]], Any]

#: The ends a resume goes on from: a cancelled run runs its cancelled calls again.
GOES_ON = frozenset({"cancelled"})


def plan_options(plan: CompiledPlan, approve: Approval | None, interpreter: str,
             max_concurrency: int | None, timeout: float | None) -> dict[str, Any]:
    return {"kind": "plan", "instances": plan.instanced, "approvals": approve is not None,
            "interpreter": interpreter, "max_concurrency": max_concurrency, "timeout": timeout}


def _open_session(journal: Journal, run_id: str | None, plan: CompiledPlan, context: Context,
                  options: Mapping[str, Any]) -> Session:
    """A new run in the journal, claimed; or, for a ``run_id`` already there with the same
    header, that run claimed and reopened (refused when its header differs)."""
    text, digest = header_of(plan, context, options)
    run_id = run_id if run_id is not None else uuid.uuid4().hex
    existing = journal.store.header(run_id)
    tenure = None if existing is not None else journal.create(
        RunHeader(run_id, FORMAT_VERSION, digest, text, utc_stamp()))
    if tenure is not None:
        return Session(RunRecorder(journal, run_id, plan, tenure=tenure), None, frozenset(),
                       False)
    existing = existing or journal.run_header(run_id)  # created meanwhile by another
    if existing.digest != digest:
        raise JournalUnreadable(
            f"{journal.name}: run {run_id!r} was recorded for another plan, context, tools or "
            "options: resume it as it was recorded (obelisk resume), or choose another run id")
    return _reopen(journal, existing, plan, context, options, journal.claim(run_id))


def _reopen(journal: Journal, header: RunHeader, plan: CompiledPlan, context: Context,
            options: Mapping[str, Any], tenure: Tenure) -> Session:
    """The held run ``header`` reopened from its rows (released when that fails)."""
    try:
        return _reopened(journal, header, plan, context, options, tenure)
    except BaseException:
        journal.leases.release(tenure)
        raise


def _reopened(journal: Journal, header: RunHeader, plan: CompiledPlan, context: Context,
              options: Mapping[str, Any], tenure: Tenure) -> Session:
    records = list(journal.records(header.run_id))
    ended = any(r.kind is RecordKind.END and end_status(r.data) not in GOES_ON
                for r in records)
    recorder = RunRecorder(journal, header.run_id, plan, records[-1].seq + 1 if records else 1,
                           tenure=tenure)
    session = replayed_session(recorder, plan, context, records,
                               approvals=bool(options.get("approvals")), ended=ended)
    recorder.load_solutions(records)
    if not ended:
        recorder.resumed()
    return session


def _traced(session: Session, trace: bool | None,
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


def _drive(session: Session, plan: CompiledPlan, context: Context,
           activities: Mapping[str, Activity] | None, approve: Approval | None,
           latent: Activity | None, clock: Callable[[], Any] | None,
           watch: Observer | None = None, trace: bool | None = None,
           stop: Stop | None = None, on_event: EventSink | None = None) -> RunResult:
    invoke = sync_invoker(activity_invoker(plan, activities or {}, latent), session)
    keep, replayed = _traced(session, trace, watch)
    result: RunResult | None = None
    follower = _follower(session, plan, context, approve, on_event)
    try:
        with _following(follower, session) as ending:
            if follower is not None:
                _retold(follower, session)
                watch, invoke = joined(watch, follower), follower.wrap_sync(invoke)
            result = drive_sync(plan, context, invoke, approve, clock_of(clock),
                                watched(session, watch), resume=replayed, trace=keep,
                                stop=stop)
            _ended(follower, ending, result)
    finally:
        _finish(session, result)
    return result


async def _drive_async(session: Session, plan: CompiledPlan, context: Context,
                       activities: Mapping[str, Activity] | None, approve: Approval | None,
                       latent: Activity | None, clock: Callable[[], Any] | None,
                       max_concurrency: int | None, timeout: float | None,
                       watch: Observer | None = None, trace: bool | None = None,
                       on_event: EventSink | None = None) -> RunResult:
    invoke = async_invoker(async_activity_invoker(plan, activities or {}, latent), session)
    keep, replayed = _traced(session, trace, watch)
    result: RunResult | None = None
    follower = _follower(session, plan, context, approve, on_event)
    try:
        with _following(follower, session) as ending:
            if follower is not None:
                _retold(follower, session)
                watch, invoke = joined(watch, follower), follower.wrap_async(invoke)
            result = await drive_async(plan, context, invoke, approve, clock_of(clock),
                                       max_concurrency=max_concurrency, timeout=timeout,
                                       observer=watched(session, watch), resume=replayed,
                                       trace=keep)
            _ended(follower, ending, result)
    finally:
        _finish(session, result)
    return result


def _follower(session: Session, plan: CompiledPlan, context: Context,
              approve: Approval | None, on_event: EventSink | None) -> PlanFollower | None:
    """The event stream's follower of a durable run (None when nobody watches): a resumed
    run's retells what its journal recorded first (:func:`_retold`)."""
    emitter = emitter_for(on_event)
    if emitter is None:
        return None
    return PlanFollower(emitter, plan, context, approvals=approve is not None,
                        rows=session.recorder)


def _retold(follower: PlanFollower, session: Session) -> None:
    """A resumed run's recorded calls told first, marked ``replayed``."""
    if session.records:
        retell(follower, session.records,
               f"{session.recorder.journal.name}: run {session.recorder.run_id!r}")


@contextlib.contextmanager
def _following(follower: PlanFollower | None, session: Session) -> Iterator[dict[str, Any]]:
    """``run_started``/``run_ended`` around a durable run (with its run id; ``resumed``
    when it goes on from its journal). A traced run records its trace context in the
    journal, and a resumed one links its new trace to the one recorded last."""
    if follower is None:
        yield {}
        return
    recorder, tracer = session.recorder, follower.emitter.tracer
    fields: dict[str, Any] = {"run": recorder.run_id, "calls": len(follower.plan.nodes)}
    if session.replayed is not None:
        fields["resumed"] = True
        if tracer is not None:
            fields["resumes"] = last_trace(recorder.journal.records(recorder.run_id))
    with following(follower.emitter, "plan", **fields) as ending:
        if (parent := follower.emitter.traceparent()) is not None:
            recorder.traced(parent)
        yield ending


def _ended(follower: PlanFollower | None, ending: dict[str, Any], result: RunResult) -> None:
    if follower is not None:
        follower.end()
        ending["status"] = result.status.value


def _finish(session: Session, result: RunResult | None) -> None:
    """After a drive: its end recorded (when it returned a result and had not ended
    before), what is pending committed, the run released however the drive ended."""
    recorder = session.recorder
    try:
        if result is None:
            flush_quietly(recorder)
        elif not session.ended:
            recorder.end(result)
        else:
            recorder.flush()
    finally:
        recorder.journal.leases.release(recorder.tenure)


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
    stop: Stop | None = None,
    on_event: EventSink | None = None,
) -> RunResult:
    """:func:`obelisk.run_sync`, recorded in ``journal`` under ``run_id`` (a new id when
    None; the id is ``result`` 's ``journal_run`` in the journal's runs). ``stop`` as for
    ``run_sync``: a call that finishes after it is set is recorded with its outcome.

    ``trace``: record the run's trace, as for ``run_sync``; None records it when
    ``observer`` is given (the journal's own recorder does not count).

    A ``run_id`` the journal already holds for the same plan, context, tools and options
    is resumed; one recorded for anything else is refused with
    :class:`~obelisk.journal.store.JournalUnreadable`. Each activity receives its
    idempotency key as the call's ``_idempotencyKey``.
    """
    compiled, ctx = prepare(plan, context, tools, instances)
    session = _open_session(journal, run_id, compiled, ctx,
                            plan_options(compiled, approve, "sync", None, None))
    return _drive(session, compiled, ctx, activities, approve, latent, clock, observer, trace,
                  stop, on_event)


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
    interpreter: str = "asyncio",
    on_event: EventSink | None = None,
) -> RunResult:
    """:func:`obelisk.run_async`, recorded in ``journal`` (see :func:`run_durable`).
    ``interpreter`` is the name the run's header records (``obelisk.run_dask`` records
    ``dask``: its activities send their calls to a cluster)."""
    compiled, ctx = prepare(plan, context, tools, instances)
    session = _open_session(journal, run_id, compiled, ctx, plan_options(
        compiled, approve, interpreter, max_concurrency, timeout))
    return await _drive_async(session, compiled, ctx, activities, approve, latent, clock,
                              max_concurrency, timeout, observer, trace, on_event)


@frozen
class Recorded:
    """A recorded run as it was started: its header, compiled plan, context and options."""

    header: RunHeader
    plan: CompiledPlan
    context: Context
    options: Mapping[str, Any]


def recorded(journal: Journal, run_id: str | None = None) -> Recorded:
    """The run ``run_id`` (None: the newest) as it was started, checked: a header of
    another format version or whose digest does not match is refused."""
    header, where = journal.checked_header(run_id)
    try:
        data = json.loads(header.header)
        options = data["options"]
        if options.get("kind") != "plan":
            raise JournalUnreadable(f"{where} is an agent run: resume it with the agent loop")
        context = Context.of(data["context"])
        plan = compile_plan(data["calls"], tools=data["tools"], context=context,
                            instances=bool(options["instances"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise JournalUnreadable(f"{where}: its header does not read ({exc!r})") from None
    if not plan.ok:
        raise refuse(plan)
    return Recorded(header, plan, context, options)


def recorded_events(journal: Journal, run_id: str) -> list[RunEvent]:
    """The run events the journal holds for the run ``run_id``, in order (its other rows
    left out): what a resume replays, for a display that shows the whole run. Raises
    JournalUnreadable for a row that does not decode."""
    return decode(journal.records(run_id), f"{journal.name}: run {run_id!r}")


def _resumable(journal: Journal, run_id: str | None, approve: Approval | None,
               take_over: bool, run: Recorded | None = None) -> tuple[Recorded, Session]:
    run = run if run is not None else recorded(journal, run_id)
    if bool(run.options.get("approvals")) != (approve is not None):
        asked = "with" if run.options.get("approvals") else "without"
        raise JournalUnreadable(
            f"{journal.name}: run {run.header.run_id!r} was started {asked} an approval hook; "
            f"resume it {asked} one (--approve on the command line)")
    tenure = journal.claim(run.header.run_id, take_over=take_over)
    return run, _reopen(journal, run.header, run.plan, run.context, run.options, tenure)


def resume_plan(journal: Journal, run_id: str | None = None, *,
                activities: Mapping[str, Activity] | None = None,
                approve: Approval | None = None, latent: Activity | None = None,
                clock: Callable[[], Any] | None = None, interpreter: str | None = None,
                max_concurrency: int | None = None, timeout: float | None = None,
                observer: Observer | None = None, take_over: bool = False,
                stop: Stop | None = None, on_event: EventSink | None = None) -> RunResult:
    """Continue the plan's run ``run_id`` (None: the newest): see
    :func:`obelisk.journal.resume`. ``interpreter`` defaults to the recorded one;
    ``stop`` as for ``run_sync`` (the sync interpreter)."""
    run = recorded(journal, run_id)
    chosen = interpreter or run.options.get("interpreter", "sync")
    if chosen == "dask":  # refused before the run is claimed
        raise JournalUnreadable(
            f"{journal.name}: run {run.header.run_id!r} was recorded with the Dask "
            "interpreter: resume it with obelisk.dask.resume_dask (--interpreter dask on the "
            "command line), or with interpreter='asyncio' to run the rest in this process")
    run, session = _resumable(journal, run.header.run_id, approve, take_over, run)
    if chosen == "asyncio":
        return asyncio.run(_drive_async(session, run.plan, run.context, activities, approve,
                                        latent, clock, max_concurrency, timeout, observer,
                                        on_event=on_event))
    return _drive(session, run.plan, run.context, activities, approve, latent, clock, observer,
                  stop=stop, on_event=on_event)


async def resume_async(journal: Journal, run_id: str | None = None, *,
                       activities: Mapping[str, Activity] | None = None,
                       approve: Approval | None = None, latent: Activity | None = None,
                       clock: Callable[[], Any] | None = None,
                       max_concurrency: int | None = None,
                       timeout: float | None = None,
                       observer: Observer | None = None,
                       take_over: bool = False,
                       on_event: EventSink | None = None) -> RunResult:
    """:func:`obelisk.journal.resume` on the running event loop, with the asyncio
    interpreter (a plan's run)."""
    run, session = _resumable(journal, run_id, approve, take_over)
    return await _drive_async(session, run.plan, run.context, activities, approve, latent,
                              clock, max_concurrency, timeout, observer, on_event=on_event)
