"""Streaming a tick (the shell): each call starts as soon as it has arrived and is ready.

The adapter's ``stream`` yields complete call objects, then the output. Each call, as it
arrives, is checked against its branch of the solution schema and the calls seen so far
are compiled *open* (``compile_plan(..., open=True)``: a reference that no call seen so
far writes is not an error, it waits). The machine admits the new call
(:func:`obelisk.interpreters.machine.admit`): a call with an error finishes ``Invalid``
and never starts; a ready one starts at once, while later calls are still arriving; a
call reading a MISSING value that no call seen so far writes is parked. When the stream
closes, the whole solution is judged (:mod:`obelisk.agent.judging`, as a whole one is):

- when its shape is wrong, or the answer was unusable (not JSON, cut short, refused),
  calls not yet started never start, calls that ran keep their outcomes, and one
  ``InvalidSolution`` error is added;
- otherwise the run is closed with the calls compiled as a whole
  (:func:`~obelisk.interpreters.admission.close`), so a parked reader of a path that no
  call writes ends ``Invalid`` (a dangling reference) as in a whole run;
- a call that arrived after an earlier call had already started, and writes what that
  call read, adds a ``late-writer`` error naming both.

Each call is judged against its branch as it arrives, under its own index. The calls that
arrived while the loop was busy are admitted together (one compile for the batch), so a
fast stream costs one compile, not one per call. A transport failure after calls ran
keeps their outcomes and writes in the result (:attr:`StreamedRun.failure`). An
activity's ``CancelledError`` or other ``Exception`` is its outcome; a
``KeyboardInterrupt`` or ``SystemExit`` stops the tick and is raised again, every other
call cancelled and awaited first (§9 "Exceptions"). Cancelling the tick stops it as an
asyncio run stops (:mod:`obelisk.interpreters.stopping`): the plain activities still
running in worker threads are waited for and keep their outcomes (recorded in the
journal), a second cancel abandons them, and the tick's result is ``cancelled``.

Every rule of running a call is the machine's; this module only feeds it calls as they
arrive and runs what it hands back, as the asyncio interpreter does.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from typing import Any

from attrs import evolve

from obelisk.agent.judging import Judge, solution_error
from obelisk.agent.source import NoStreamJournal, StreamJournal
from obelisk.agent.streamreplay import replay_tick
from obelisk.agent.streamstate import (
    CompilePart,
    Streamed,
    StreamedRun,
    admitted,
    closing_solution,
    late_writers,
    whole_plan,
)
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.interpreters.activities import OUTCOMES, outcome_of_exception
from obelisk.interpreters.admission import admit, close
from obelisk.interpreters.aio import _cancel_requested
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.cancel import cancel
from obelisk.interpreters.events import Cancelled, Finished, RunStatus
from obelisk.interpreters.executors import Registry, choose_executor, execute_async
from obelisk.interpreters.gates import Approver, approval, within
from obelisk.interpreters.lingering import LINGERING, Lingering
from obelisk.interpreters.machine import advance, begin, complete, finish
from obelisk.interpreters.outcomes import Outcome
from obelisk.interpreters.replaying import Replayed
from obelisk.interpreters.stopping import kept, stop_tasks
from obelisk.llm.answers import MAX_ANSWER_DEPTH, Unusable, depth_over
from obelisk.llm.base import LLMError, StreamedCall, StreamedOutput, StreamItem

__all__ = ["CompilePart", "StreamedRun", "late_writers", "run_streamed"]


async def run_streamed(
    items: AsyncIterator[StreamItem], context: Context, compile_part: CompilePart,
    judge: Judge, registry: Registry, clock: Callable[[], str], *,
    approve: Approver | None = None,
    on_plan: Callable[[CompiledPlan], None] | None = None,
    on_start: Callable[[int, int, bool], None] | None = None,
    timeout: float | None = None,
    journal: StreamJournal | None = None,
    scope: Callable[[Invocation], AbstractContextManager[Any]] | None = None,
) -> StreamedRun:
    """Run the calls of a streamed solution as they arrive (see the module docstring).

    ``compile_part(calls, open)`` compiles the calls seen so far; ``judge`` judges each
    call and the whole solution; ``registry`` runs the calls (its executors always see
    the newest plan); ``on_plan`` is told each admitted plan (the latent executor follows
    it); ``on_start(call, seen, open)`` each call that starts; ``timeout`` (seconds)
    bounds each call, as in :func:`obelisk.run_async`; ``scope(invocation)`` is the
    context its activity runs in (its ``execute_tool`` span made current, when traced).

    ``journal`` records the tick (each call admitted before it can start, each start,
    verdict, invocation and outcome, then the whole solution). A tick it holds steps of is
    replayed first (:func:`obelisk.agent.streamreplay.replay_tick`) and ``items`` is not
    read: the stream of a tick that stopped is not asked again, so the tick goes on with
    the calls recorded and a null output (or the recorded solution when its stream had
    ended).
    """
    initial = compile_part([], True)
    run = Streamed(begin(initial, context, isolate_invalid=True, open=True), timeout,
                   NoStreamJournal() if journal is None else journal, compile_part, judge,
                   scope)
    lingering = Lingering()  # the threads of plain activities a cancel waits for
    token = LINGERING.set(lingering)  # the tick's tasks inherit it
    reader: asyncio.Task[None] | None = None
    cancelled = False
    try:
        if run.journal.steps:
            replayed = replay_tick(run, initial, context, run.journal.steps, on_plan,
                                   approvals=approve is not None,
                                   told=getattr(run.journal, "retold", None))
            if run.open:
                run.queue.put_nowait((Arrival.OUTPUT, StreamedOutput(None)))
                run.queue.put_nowait((Arrival.CLOSED, None))
            await _pick_up(run, replayed, registry, approve)
        else:
            reader = asyncio.create_task(_read(items, run.queue))
        await _loop(run, registry, clock, approve, on_plan, on_start)
    except BaseException as exc:
        await _stopped(run, lingering, reader, exc, clock)  # raises exc unless cancelled
        cancelled = True
    finally:
        LINGERING.reset(token)
    if reader is not None and not cancelled:
        await reader
    return _result(run, cancelled=cancelled)


def _result(run: Streamed, *, cancelled: bool) -> StreamedRun:
    """What the tick gave (``cancelled``: the tick was cancelled, see :func:`_stopped`)."""
    result = finish(run.state, cancelled=cancelled)
    if (run.invalid is not None or run.failure is not None) and not cancelled:
        # calls never started are not cancelled by anyone: they never ran
        result = evolve(result, status=RunStatus.COMPLETED)
    answer = run.answer if run.answer is not None else {"calls": list(run.calls),
                                                          "output": run.output}
    return StreamedRun(result, tuple(run.calls), run.output, run.usage, tuple(run.late),
                       run.invalid, tuple(run.arrived), dict(run.started), run.failure,
                       answer)


async def _stopped(run: Streamed, lingering: Lingering, reader: asyncio.Task[None] | None,
                   exc: BaseException, clock: Callable[[], str]) -> None:
    """The tick cancelled, or stopped by an activity's KeyboardInterrupt or SystemExit (or
    the approval hook's error), as an asyncio run stops (:mod:`obelisk.interpreters.
    stopping`): every task cancelled and awaited, then ``exc`` raised again, or, for the
    tick's cancellation, the outcomes that finished meanwhile kept (the plain activities
    still running waited for), the rest cancelled (a second cancel abandons the wait)."""
    await stop_tasks(lingering, [*run.tasks.values(), *([reader] if reader else [])])
    if not isinstance(exc, asyncio.CancelledError):
        raise exc
    late = []
    while not run.queue.empty():  # outcomes told before the cancel reached the loop
        what, value = run.queue.get_nowait()
        if what is Arrival.DONE:
            late.append(value)
    late.extend(await kept(lingering, run.state.status, None))
    for node, outcome in sorted(late, key=lambda item: item[0]):
        _told(run, Arrival.DONE, (node, outcome), clock)
    run.journal.finished(Cancelled())
    run.state = cancel(run.state)


class Arrival(enum.Enum):
    """What the loop of a streamed tick is told, in the order it happens."""

    CALL = "call"  #: a call arrived (with when, for the figures)
    OUTPUT = "output"  #: the output arrived (with the usage)
    FAILED = "failed"  #: the adapter failed (the loop re-raises its exception)
    CLOSED = "closed"  #: the stream ended
    DONE = "done"  #: a call finished (its node and outcome)
    ABORT = "abort"  #: a call raised KeyboardInterrupt, SystemExit...: stop the tick


async def _read(items: AsyncIterator[StreamItem],
                queue: asyncio.Queue[tuple[Arrival, Any]]) -> None:
    try:
        async for item in items:
            if isinstance(item, StreamedCall):  # stamped as it arrives, for the figures
                queue.put_nowait((Arrival.CALL, (item.call, time.monotonic())))
            elif isinstance(item, StreamedOutput):
                queue.put_nowait((Arrival.OUTPUT, item))
    except Exception as exc:  # the adapter failed: the loop stops the tick
        queue.put_nowait((Arrival.FAILED, exc))
    finally:
        queue.put_nowait((Arrival.CLOSED, None))


async def _loop(run: Streamed, registry: Registry, clock: Callable[[], str],
                approve: Approver | None, on_plan: Callable[[CompiledPlan], None] | None,
                on_start: Callable[[int, int, bool], None] | None) -> None:
    held: tuple[Arrival, Any] | None = None  # read past a batch of calls, told next
    while True:
        if not run.stopped:
            await _start_ready(run, registry, approve, on_start)
        if not run.open and not run.tasks:
            return
        what, value = held if held is not None else await run.queue.get()
        if what is not Arrival.CALL:
            held = None
            _told(run, what, value, clock)
            continue
        calls, held = await _batch(run, [value], clock)
        for _, arrived in calls:
            run.arrived.append(arrived)
        began = time.monotonic()
        idle, run.admitted_at = began - run.admitted_at, began
        _admit_all(run, [call for call, _ in calls], on_plan)
        took = time.monotonic() - began
        # Compiling takes longer than the wait for calls did: the calls that arrive during
        # as long again wait to be admitted together (see _batch).
        run.pause_until = began + 2 * took if took > idle else 0.0


async def _batch(run: Streamed, calls: list[Any], clock: Callable[[], str]
                 ) -> tuple[list[Any], tuple[Arrival, Any] | None]:
    """The calls to admit together: those that arrived already, and, when the loop is
    busier compiling than waiting for calls, those that arrive within as long again as the
    last compile took (so compiling, whose time grows with the calls seen so far, takes at
    most about half the stream's time: a streamed tick stays linear in its calls however
    they arrive); calls that finish meanwhile are completed. Returns them, and the first
    other arrival (the output, the end, a failure) if one came."""
    while True:
        item = run.queue.get_nowait() if not run.queue.empty() else None
        if item is None:
            left = run.pause_until - time.monotonic()
            if left <= 0:
                return calls, None
            try:
                item = await asyncio.wait_for(run.queue.get(), left)
            except asyncio.TimeoutError:
                return calls, None
        if item[0] is Arrival.CALL:
            calls.append(item[1])
        elif item[0] is Arrival.DONE:
            _told(run, *item, clock)
        else:
            return calls, item


def _told(run: Streamed, what: Arrival, value: Any, clock: Callable[[], str]) -> None:
    """What the loop was told, other than a call."""
    match what:
        case Arrival.OUTPUT:
            run.output, run.usage = value.output, value.usage
            run.solution, run.unusable = value.solution, value.unusable or run.unusable
        case Arrival.FAILED:
            if not isinstance(value, LLMError):
                raise value
            run.failure = value  # what ran keeps its outcome; nothing more starts
            run.open = False
        case Arrival.CLOSED:
            if run.open:
                _close(run)
        case Arrival.DONE:
            node, outcome = value
            run.tasks.pop(node, None)
            finished = Finished(node, outcome, clock())
            run.journal.finished(finished)
            run.state = complete(run.state, node, outcome, finished.date)
        case Arrival.ABORT:
            raise value


def _admit_all(run: Streamed, calls: list[Any],
               on_plan: Callable[[CompiledPlan], None] | None) -> None:
    """Admit the calls that arrived together (nothing, once the answer stopped being
    usable: a call nested too deep makes it so)."""
    if run.unusable is not None or not run.open:
        return
    for number, call in enumerate(calls):
        if depth_over({"calls": [call]}):  # judged before anything recursive reads it
            run.unusable = Unusable(f"the answer is nested more than {MAX_ANSWER_DEPTH} "
                                    f"levels deep (in call {len(run.calls) + number})")
            calls = calls[:number]
            break
    if not calls:
        return
    plan = admitted(run, calls)
    for call in calls:
        run.journal.admitted(call, plan)
    run.state = admit(run.state, plan)
    if on_plan is not None:
        on_plan(plan)


def _close(run: Streamed) -> None:
    """The stream ended: the whole solution judged, and the run closed with the calls
    compiled as a whole (or, for an invalid solution, nothing more started)."""
    run.open = False
    solution = run.answer = closing_solution(run)
    run.journal.closed(solution, run.usage)
    run.invalid = solution_error(run.judge, solution)
    if run.invalid is None:
        run.state = close(run.state, whole_plan(run))


async def _pick_up(run: Streamed, replayed: Replayed, registry: Registry,
                   approve: Approver | None) -> None:
    """Go on from a replay: calls that were running run again (the journal gives them
    their idempotency keys, or an at-most-once one its Interrupted outcome); calls that
    waited for the approval hook are asked again."""
    if run.stopped:
        return  # the solution was invalid: calls not started never start
    running, undecided = replayed.pick_up()
    for invocation in running:
        run.tasks[invocation.node] = asyncio.create_task(_one(run, registry, invocation))
    for invocation in undecided:
        await _decide_and_start(run, registry, approve, invocation, None)


async def _start_ready(run: Streamed, registry: Registry, approve: Approver | None,
                       on_start: Callable[[int, int, bool], None] | None) -> None:
    while True:  # a denial may release other calls: advance until nothing more is ready
        run.state, ready = advance(run.state)
        if not ready:
            return
        run.journal.started(ready[0].node)
        for invocation in ready:
            await _decide_and_start(run, registry, approve, invocation, on_start)


async def _decide_and_start(run: Streamed, registry: Registry, approve: Approver | None,
                            invocation: Invocation,
                            on_start: Callable[[int, int, bool], None] | None) -> None:
    if approve is not None:  # the approval step of every loop; the journal records it
        run.state, approved = await approval(run.state, invocation, approve,
                                             run.journal.decided)
        if approved is None:
            return
        invocation = approved
    call = run.state.plan.nodes[invocation.node].index
    run.started[call] = time.monotonic()
    if on_start is not None:
        on_start(call, len(run.calls), run.open)
    run.tasks[invocation.node] = asyncio.create_task(_one(run, registry, invocation))


async def _one(run: Streamed, registry: Registry, invocation: Invocation) -> None:
    """Run one call and tell the loop its outcome, whatever it raised: an ``Exception``
    (a ``CancelledError`` of its own too) is its outcome; a ``KeyboardInterrupt`` or
    ``SystemExit`` stops the tick; only the tick's own cancellation ends the task."""
    outcome: Outcome
    try:
        stopped = run.journal.invoke(invocation)
        if stopped is not None:
            outcome = stopped
        else:
            execution = choose_executor(run.state.plan, invocation, registry)
            with run.scope(invocation):  # a span the activity opens is its call's child
                outcome = await within(execute_async(execution, invocation), run.timeout)
    except asyncio.CancelledError:
        if _cancel_requested():
            raise
        outcome = outcome_of_exception(asyncio.CancelledError())  # the activity's own
    except OUTCOMES as exc:  # recording it failed, say (an activity's failure is an outcome)
        outcome = outcome_of_exception(exc)
    except BaseException as exc:  # KeyboardInterrupt, SystemExit...: the loop stops the tick
        run.queue.put_nowait((Arrival.ABORT, exc))
        return
    run.queue.put_nowait((Arrival.DONE, (invocation.node, outcome)))
