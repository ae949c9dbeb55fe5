"""Streaming a tick (the shell): each call starts as soon as it has arrived and is ready.

The adapter's ``stream`` yields complete call objects, then the output. Each call, as it
arrives, is checked against its branch of the solution schema and the calls seen so far
are compiled *open* (``compile_plan(..., open=True)``: a reference that no call seen so
far writes is not an error, it waits). The machine admits the new call
(:func:`obelisk.interpreters.machine.admit`): a call with an error finishes ``Invalid``
and never starts; a ready one starts at once, while later calls are still arriving; a
call reading a MISSING value that no call seen so far writes is parked. When the stream
closes, the run is closed (:func:`~obelisk.interpreters.machine.close`), so a value that
nothing writes now fails its reader as in a whole run, and:

- a call that arrived after an earlier call had already started, and writes what that
  call read, adds a ``late-writer`` error naming both;
- the whole solution is validated: when it is invalid, calls not yet started never start,
  calls that ran keep their outcomes, and one ``InvalidSolution`` error is added.

Every rule of running a call is the machine's; this module only feeds it calls as they
arrive and runs what it hands back, as the asyncio interpreter does.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from attrs import evolve, frozen

from obelisk.agent.source import NoStreamJournal, StreamJournal, StreamStep
from obelisk.compiler.codes import DiagnosticCode
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.interpreters.activities import outcome_of_exception
from obelisk.interpreters.admission import admit, close
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.events import Admitted, Closed, Finished, RunEvent, RunStatus
from obelisk.interpreters.executors import Registry, choose_executor, execute_async
from obelisk.interpreters.gates import Approver, approval, within
from obelisk.interpreters.machine import advance, begin, complete, finish
from obelisk.interpreters.outcomes import Outcome
from obelisk.interpreters.replaying import Replayed, replay_more, replay_open
from obelisk.interpreters.result import RunResult
from obelisk.interpreters.state import RunState
from obelisk.llm.base import StreamedCall, StreamedOutput, StreamItem, Usage

__all__ = ["StreamedRun", "late_writers", "run_streamed"]


@frozen
class StreamedRun:
    """What a streamed tick gave: the run's result, the calls and output as they arrived,
    the usage, the ``late-writer`` pairs ``(writer, reader)``, whether the whole solution
    was valid (``problems`` empty), and when each call arrived and started (monotonic
    seconds, by call index) for the figures."""

    result: RunResult
    calls: tuple[Any, ...]
    output: Any
    usage: Usage
    late: tuple[tuple[int, int], ...]
    problems: tuple[dict[str, str], ...]
    arrived: tuple[float, ...]
    started: dict[int, float]


def late_writers(plan: CompiledPlan, state: RunState, first_new: int) -> list[tuple[int, int]]:
    """The (writer, reader) node pairs where a node from ``first_new`` on writes what an
    earlier node that already left PENDING read."""
    pairs = []
    for writer in range(first_new, len(plan.nodes)):
        for reader in plan.successors[writer]:
            if reader < first_new and state.status[reader].value != "pending":
                pairs.append((writer, reader))
    return pairs


#: Compiles the calls seen so far; ``open`` while the stream is open.
CompilePart = Callable[[list[Any], bool], CompiledPlan]
#: The solution-schema problems of a solution (``{pointer, message}`` each).
Problems = Callable[[Any], list[dict[str, str]]]


async def run_streamed(
    items: AsyncIterator[StreamItem], context: Context, compile_part: CompilePart,
    problems: Problems, registry: Registry, clock: Callable[[], str], *,
    approve: Approver | None = None,
    on_plan: Callable[[CompiledPlan], None] | None = None,
    on_start: Callable[[int, int, bool], None] | None = None,
    timeout: float | None = None,
    journal: StreamJournal | None = None,
) -> StreamedRun:
    """Run the calls of a streamed solution as they arrive (see the module docstring).

    ``compile_part(calls, open)`` compiles the calls seen so far; ``problems(solution)``
    validates against the solution schema; ``registry`` runs the calls (its executors
    always see the newest plan); ``on_plan`` is told each admitted plan (the latent
    executor follows it); ``on_start(call, seen, open)`` each call that starts;
    ``timeout`` (seconds) bounds each call, as in :func:`obelisk.run_async`.

    ``journal`` records the tick (each call admitted before it can start, each start,
    verdict, invocation and outcome, then the whole solution). A tick it holds steps of is
    replayed first (:func:`_replay`) and ``items`` is not read: the stream of a tick that
    stopped is not asked again, so the tick goes on with the calls recorded and a null
    output (or the recorded output when its stream had ended).
    """
    initial = compile_part([], True)
    run = _Streamed(begin(initial, context, isolate_invalid=True, open=True), timeout,
                    NoStreamJournal() if journal is None else journal)
    if run.journal.steps:
        replayed = _replay(run, initial, context, run.journal.steps, compile_part, problems,
                           on_plan, approvals=approve is not None)
        if run.open:
            run.queue.put_nowait((Arrival.OUTPUT, StreamedOutput(None)))
            run.queue.put_nowait((Arrival.CLOSED, None))
        reader: asyncio.Task[None] | None = None
        await _pick_up(run, replayed, registry, approve)
    else:
        reader = asyncio.create_task(_read(items, run.queue))
    try:
        await _loop(run, compile_part, problems, registry, clock, approve, on_plan, on_start)
    except BaseException:
        waiting = [*run.tasks.values(), *([reader] if reader is not None else [])]
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        raise
    if reader is not None:
        await reader
    result = finish(run.state)
    if run.problems:  # calls never started are not cancelled by anyone: they never ran
        result = evolve(result, status=RunStatus.COMPLETED)
    return StreamedRun(result, tuple(run.calls), run.output, run.usage, tuple(run.late),
                       tuple(run.problems), tuple(run.arrived), dict(run.started))


class Arrival(enum.Enum):
    """What the loop of a streamed tick is told, in the order it happens."""

    CALL = "call"  #: a call arrived (with when, for the figures)
    OUTPUT = "output"  #: the output arrived (with the usage)
    FAILED = "failed"  #: the adapter failed (the loop re-raises its exception)
    CLOSED = "closed"  #: the stream ended
    DONE = "done"  #: a call finished (its node and outcome)


class _Streamed:
    """The bookkeeping of one streamed tick (only its own loop and tasks touch it)."""

    def __init__(self, state: RunState, timeout: float | None, journal: StreamJournal) -> None:
        self.state = state
        self.queue: asyncio.Queue[tuple[Arrival, Any]] = asyncio.Queue()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.calls: list[Any] = []
        self.output: Any = None
        self.usage = Usage()
        self.late: list[tuple[int, int]] = []
        self.problems: list[dict[str, str]] = []
        self.arrived: list[float] = []
        self.started: dict[int, float] = {}
        self.open = True
        self.timeout = timeout
        self.journal = journal


async def _read(items: AsyncIterator[StreamItem],
                queue: asyncio.Queue[tuple[Arrival, Any]]) -> None:
    try:
        async for item in items:
            if isinstance(item, StreamedCall):  # stamped as it arrives, for the figures
                queue.put_nowait((Arrival.CALL, (item.call, time.monotonic())))
            elif isinstance(item, StreamedOutput):
                queue.put_nowait((Arrival.OUTPUT, item))
    except Exception as exc:  # the adapter failed: the loop re-raises it
        queue.put_nowait((Arrival.FAILED, exc))
    finally:
        queue.put_nowait((Arrival.CLOSED, None))


async def _loop(run: _Streamed, compile_part: CompilePart, problems: Problems,
                registry: Registry, clock: Callable[[], str], approve: Approver | None,
                on_plan: Callable[[CompiledPlan], None] | None,
                on_start: Callable[[int, int, bool], None] | None) -> None:
    while True:
        if not run.problems:
            await _start_ready(run, registry, approve, on_start)
        if not run.open and not run.tasks:
            return
        what, value = await run.queue.get()
        match what:
            case Arrival.CALL:
                call, arrived = value
                run.arrived.append(arrived)
                _admit(run, call, compile_part, problems, on_plan)
            case Arrival.OUTPUT:
                run.output, run.usage = value.output, value.usage
            case Arrival.FAILED:
                raise value
            case Arrival.CLOSED:
                _close(run, problems)
            case Arrival.DONE:
                node, outcome = value
                run.tasks.pop(node, None)
                finished = Finished(node, outcome, clock())
                run.journal.finished(finished)
                run.state = complete(run.state, node, outcome, finished.date)


def _admit(run: _Streamed, call: Any, compile_part: CompilePart, problems: Problems,
           on_plan: Callable[[CompiledPlan], None] | None) -> None:
    plan = _admitted(run, call, compile_part, problems)
    run.journal.admitted(call, plan)
    run.state = admit(run.state, plan)
    if on_plan is not None:
        on_plan(plan)


def _admitted(run: _Streamed, call: Any, compile_part: CompilePart,
              problems: Problems) -> CompiledPlan:
    """The run's plan with ``call`` (checked against its branch of the solution schema);
    notes the late writers it adds."""
    run.calls.append(call)
    first_new = len(run.state.plan.nodes)
    plan = compile_part(run.calls, True)
    wrong = problems({"calls": [call], "output": None})
    if wrong:  # not a call of any branch of the solution schema: it never starts
        text = "; ".join(f"{p['pointer'] or '/'}: {p['message']}" for p in wrong)
        for node in plan.nodes[first_new:]:
            found = node.diagnostic(DiagnosticCode.PARAM_SCHEMA, "the call does not match "
                                    "its branch of the solution schema: " + text)
            plan = evolve(plan, invalid=plan.invalid.set(node.id, (found,)))
    run.late.extend(late_writers(plan, run.state, first_new))
    return plan


def _close(run: _Streamed, problems: Problems) -> None:
    run.open = False
    run.journal.closed({"calls": list(run.calls), "output": run.output}, run.usage)
    run.problems = problems({"calls": run.calls, "output": run.output})
    if run.problems:
        return  # nothing more starts; what runs finishes
    run.state = close(run.state)


def _replay(run: _Streamed, initial: CompiledPlan, context: Context, steps: list[StreamStep],
            compile_part: CompilePart, problems: Problems,
            on_plan: Callable[[CompiledPlan], None] | None, *, approvals: bool) -> Replayed:
    """Rebuild a recorded streamed tick through the machine (``replay_open``): each
    admitted call compiled as it was, the recorded starts, verdicts and outcomes, and the
    close when its stream had ended. Late writers are found as the run found them, against
    the state before each admission (the events since the last one folded in)."""
    replayed = replay_open(initial, context, (), isolate_invalid=True, open=True,
                           approvals=approvals)
    events: list[RunEvent] = []
    for kind, value in steps:
        if kind == "admit":
            replayed = replay_more(replayed, events, approvals=approvals)
            events = []
            run.state = replayed.state
            plan = _admitted(run, value, compile_part, problems)
            events.append(Admitted(plan))
            if on_plan is not None:
                on_plan(plan)
        elif kind == "close":
            run.open, run.output = False, value
            run.problems = problems({"calls": run.calls, "output": run.output})
            if not run.problems:
                events.append(Closed())
        else:
            events.append(value)
    replayed = replay_more(replayed, events, approvals=approvals)
    run.state = replayed.state
    run.journal.follow(run.state.plan)
    return replayed


async def _pick_up(run: _Streamed, replayed: Replayed, registry: Registry,
                   approve: Approver | None) -> None:
    """Go on from a replay: calls that were running run again (the journal gives them
    their idempotency keys, or an at-most-once one its Interrupted outcome); calls that
    waited for the approval hook are asked again."""
    if run.problems:
        return  # the solution was invalid: calls not started never start
    running, undecided = replayed.pick_up()
    for invocation in running:
        run.tasks[invocation.node] = asyncio.create_task(_one(run, registry, invocation))
    for invocation in undecided:
        await _decide_and_start(run, registry, approve, invocation, None)


async def _start_ready(run: _Streamed, registry: Registry, approve: Approver | None,
                       on_start: Callable[[int, int, bool], None] | None) -> None:
    while True:  # a denial may release other calls: advance until nothing more is ready
        run.state, ready = advance(run.state)
        if not ready:
            return
        run.journal.started(ready[0].node)
        for invocation in ready:
            await _decide_and_start(run, registry, approve, invocation, on_start)


async def _decide_and_start(run: _Streamed, registry: Registry, approve: Approver | None,
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


async def _one(run: _Streamed, registry: Registry, invocation: Invocation) -> None:
    outcome: Outcome
    try:
        stopped = run.journal.invoke(invocation)
        if stopped is not None:
            outcome = stopped
        else:
            execution = choose_executor(run.state.plan, invocation, registry)
            outcome = await within(execute_async(execution, invocation), run.timeout)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # recording it failed, say (an activity's failure is an outcome)
        outcome = outcome_of_exception(exc)
    run.queue.put_nowait((Arrival.DONE, (invocation.node, outcome)))
