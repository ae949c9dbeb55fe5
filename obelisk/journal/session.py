"""A run about to be driven from its journal: the :class:`Session` (its recorder and what
the replay rebuilt), and the bookkeeping around each invocation that plans and agent
ticks share: the ``invoke`` row and the idempotency key (on disk before the activity runs
for an at-most-once tool; with the outcome for any other, which runs again when its
outcome is missing either way), and for an at-most-once tool that was running when the
run stopped, an ``Interrupted`` outcome instead of a second invocation.

Nothing here decides what a call does: the recorded events go through the machine's own
``replay_open``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from attrs import evolve, frozen
from pyrsistent import PMap

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.tools import Tool
from obelisk.core.context import Context
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.common import Observer
from obelisk.interpreters.executors import AsyncExecutor, SyncExecutor
from obelisk.interpreters.outcomes import Outcome, Raised
from obelisk.interpreters.replaying import Replayed, replay_open
from obelisk.journal.codec import decode
from obelisk.journal.recorder import RunRecorder
from obelisk.journal.store import JournalUnreadable, Record, RecordKind

#: The schema keyword that marks a tool whose calls must never run twice.
AT_MOST_ONCE = "x-obelisk-at-most-once"


def at_most_once(tool: Tool | None) -> bool:
    """True when the tool's schema says ``"x-obelisk-at-most-once": true``."""
    return at_most_once_schema(tool.schema if tool is not None else None)


def at_most_once_schema(schema: Any) -> bool:
    """:func:`at_most_once` of a tool's schema, frozen or as plain JSON (what an activity
    is handed)."""
    return isinstance(schema, (PMap, dict)) and schema.get(AT_MOST_ONCE) is True


@frozen
class Session:
    """A run about to be driven: its recorder, the replayed state (None for a new run),
    the nodes invoked before the stop without an outcome, whether it had ended, and the
    rows replayed (what a watched resume retells)."""

    recorder: RunRecorder
    replayed: Replayed | None
    interrupted: frozenset[int]
    ended: bool
    records: Sequence[Record] = ()


def replayed_session(recorder: RunRecorder, plan: CompiledPlan, context: Context,
                     records: Sequence[Record], *, approvals: bool, ended: bool,
                     isolate_invalid: bool = False) -> Session:
    """The session that continues ``plan``'s run from its recorded rows: the rows replayed
    through the machine (``replay_open``), and the calls invoked without an outcome."""
    journal = recorder.journal
    events = decode(records, journal.name)
    invoked = {r.node for r in records if r.kind is RecordKind.INVOKE}
    try:
        replayed = replay_open(plan, context, events, approvals=approvals,
                               isolate_invalid=isolate_invalid)
    except (KeyError, ValueError, IndexError, TypeError, AttributeError) as exc:
        raise JournalUnreadable(f"{journal.name}: run {recorder.run_id!r} does not replay "
                                f"through its plan ({exc!r}): the journal is damaged") from None
    interrupted = frozenset(i.node for i in replayed.running if i.node in invoked)
    # The calls that were in flight go first: with a concurrency limit, calls started but
    # never invoked must not push them back (their outcomes are what is missing).
    running = sorted(replayed.running, key=lambda i: i.node not in interrupted)
    return Session(recorder, evolve(replayed, running=tuple(running)), interrupted, ended,
                   records)


def interrupted(session: Session, invocation: Invocation, seen: set[int]) -> Outcome | None:
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


class RunStopped(BaseException):
    """The run was asked to stop (a worker told to stop): the calls that were running
    finished and were recorded, no other call was invoked, and the run was released; a
    resume goes on from there. A BaseException: it stops the run, it is no call's
    outcome."""


def _stop_asked(session: Session) -> bool:
    stop = session.recorder.journal.stop
    return stop is not None and stop.is_set()


def _stopped(session: Session) -> RunStopped:
    return RunStopped(f"{session.recorder.journal.name}: run {session.recorder.run_id!r} "
                      "stopped when asked to: the calls that were running finished and "
                      "were recorded; resume it to go on")


def sync_invoker(inner: SyncExecutor, session: Session) -> SyncExecutor:
    """``inner`` with each invocation recorded and given its idempotency key (or the run
    stopped before it, when the journal's ``stop`` is set)."""
    seen: set[int] = set()

    def run(invocation: Invocation, wait: Callable[[Any], Any]) -> Outcome:
        if _stop_asked(session):
            raise _stopped(session)
        stopped = interrupted(session, invocation, seen) if session.interrupted else None
        if stopped is not None:
            return stopped
        invocation.call["_idempotencyKey"] = session.recorder.invoking(
            invocation.node, commit=at_most_once(invocation.tool))
        return inner(invocation, wait)

    return run


def async_invoker(inner: AsyncExecutor, session: Session, *,
                  always: bool = False) -> AsyncExecutor:
    """:func:`sync_invoker` for the asyncio interpreter (``always``: every invocation is
    on disk before it runs, not only at-most-once ones)."""
    seen: set[int] = set()

    async def run(invocation: Invocation) -> Outcome:
        if _stop_asked(session):
            # The calls running go on until they are recorded; then the run stops.
            while session.recorder.running:
                await asyncio.sleep(0.02)
            raise _stopped(session)
        stopped = interrupted(session, invocation, seen) if session.interrupted else None
        if stopped is not None:
            return stopped
        invocation.call["_idempotencyKey"] = session.recorder.invoking(
            invocation.node, commit=always or at_most_once(invocation.tool))
        return await inner(invocation)

    return run


def watched(session: Session, watch: Observer | None) -> Observer:
    """The run's observer: the recorder sees every event first, the caller's after it."""
    recorder = session.recorder
    if watch is None:
        return recorder

    def both(event: Any) -> None:
        recorder(event)
        watch(event)

    return both


def flush_quietly(recorder: RunRecorder) -> None:
    """On the way out of a failed run, commit what can be; the run's own error wins."""
    with contextlib.suppress(Exception):
        recorder.flush()
