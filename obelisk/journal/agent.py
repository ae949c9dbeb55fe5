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

from obelisk.agent.hooks import AgentObserver
from obelisk.agent.loop import run_agent
from obelisk.agent.result import AgentResult
from obelisk.compiler.plan import CompiledPlan, compile_plan
from obelisk.core.context import Context
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.executors import AsyncExecutor
from obelisk.interpreters.result import RunResult
from obelisk.journal.codec import digest_of, dumps
from obelisk.journal.recorder import Journal, RunRecorder, utc_stamp
from obelisk.journal.run import (
    _async_invoker,
    _Session,
    _watched,
    checked_header,
    replayed_session,
)
from obelisk.journal.store import FORMAT_VERSION, JournalUnreadable, Record, RecordKind, RunHeader
from obelisk.llm.base import LLM, Reply

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
    :class:`obelisk.agent.source.TickSource` of ``run_agent(journal=...)``."""

    def __init__(self, journal: Journal, run_id: str, records: list[Record]) -> None:
        self.journal = journal
        self.run_id = run_id
        nothing = compile_plan([])
        self.recorder = RunRecorder(journal, run_id, nothing,
                                    records[-1].seq + 1 if records else 1)
        self.recorder.load_solutions(records)
        # A run cancelled, or failed because the LLM did, goes on when resumed (from the
        # tick it stopped at); one that ended otherwise replays to its result.
        self.ended = any(r.kind is RecordKind.END and _status(r) not in _GOES_ON
                         for r in records)
        self._rows: dict[int, list[Record]] = {}
        tick = 0
        for record in records:
            if record.kind is RecordKind.SOLUTION and record.node is not None:
                tick = record.node
            elif record.kind in _TICK_ROWS:
                self._rows.setdefault(tick, []).append(record)
        if records and not self.ended:
            self.recorder.resumed()

    def recorded_reply(self, tick: int) -> Reply | None:
        """The recorded solution of ``tick`` as a reply without usage, or None."""
        # A recorded solution may be JSON null (an invalid one): it is still recorded.
        if not self.recorder.has_solution(tick):
            return None
        return Reply(self.recorder.recorded_solution(tick))

    def record_solution(self, tick: int, solution: Any) -> None:
        """Record the LLM's solution for ``tick`` (on disk at ``sync`` durability)."""
        self.recorder.record_solution(tick, solution)

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
            return await drive_async(plan, context, _async_invoker(invoke, session), approve,
                                     clock, max_concurrency=max_concurrency, timeout=timeout,
                                     observer=_watched(session, None), isolate_invalid=True,
                                     resume=session.replayed)
        finally:
            with contextlib.suppress(Exception):  # the run's own error wins
                self.recorder.flush()

    def end(self, status: str, errors: int) -> None:
        """Record the run's end (unless it had ended before this resume) and commit."""
        if not self.ended:
            self.recorder.ended(status, errors)


def open_agent_run(journal: Journal, run_id: str | None, context: Context,
                   tools: tuple[Any, ...], options: Mapping[str, Any]) -> AgentRun:
    """A new agent run in ``journal``; or, for a ``run_id`` the journal holds with the same
    header, that run reopened (one recorded for anything else is refused)."""
    text, digest = agent_header(context, tools, options)
    run_id = run_id if run_id is not None else uuid.uuid4().hex
    existing = journal.store.header(run_id)
    if existing is None:
        journal.store.create_run(RunHeader(run_id, FORMAT_VERSION, digest, text, utc_stamp()))
        return AgentRun(journal, run_id, [])
    if existing.digest != digest:
        raise JournalUnreadable(
            f"{journal.name}: run {run_id!r} was recorded for another context, tools or "
            "options: resume it as it was recorded (obelisk resume), or choose another run id")
    return AgentRun(journal, run_id, list(journal.records(run_id)))


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
                       delegate_root: str | os.PathLike[str] | None = None) -> AgentResult:
    """Continue the agent run ``run_id`` (None: the newest) of ``journal``: recorded ticks
    are replayed (the LLM is not asked again for them, recorded calls do not run again),
    then the loop goes on with ``llm``. A run that had ended returns its result again."""
    run = recorded_agent(journal, run_id)
    options = run.options
    if bool(options.get("approvals")) != (approve is not None):
        asked = "with" if options.get("approvals") else "without"
        raise JournalUnreadable(
            f"{journal.name}: run {run.header.run_id!r} was started {asked} an approval hook; "
            f"resume it {asked} one (--approve on the command line)")
    return await run_agent(
        run.context, llm, tools=run.tools, activities=activities,
        output_schema=options.get("output_schema"), mode=options.get("mode"),
        max_ticks=int(options.get("max_ticks", 25)),
        max_stalls=int(options.get("max_stalls", 2)), approve=approve, clock=clock,
        max_concurrency=options.get("max_concurrency"), timeout=options.get("timeout"),
        instances=bool(options.get("instances")), observer=observer,
        delegate_root=delegate_root, journal=journal, run_id=run.header.run_id)
