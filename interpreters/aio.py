"""The asyncio interpreter: every ready call starts at once (up to ``max_concurrency``).

Finished calls report through a deque the loop drains in batches, so each completion
costs O(1) however many calls run. Every call's first step runs as it starts, in a copy
of the context as a task would run it (:mod:`obelisk.interpreters.eager`): a call that
finishes there needs no task at all, and one that waits goes on in a task of its own, or,
when it is the only call that can run (a chain's), is awaited by the loop itself: no task
and no hand-off.

Cancelling the run cancels the running activities, waits for them, keeps every finished
result and returns a result whose status is ``cancelled``: no task is left running or
unawaited when ``run_async`` returns. Plain (non-async) activities run in a worker thread
so they do not block the loop; a thread cannot be interrupted, so the run waits for the
plain activities still running (telling its observer :class:`Waiting`) and keeps what
they return, as for any call that finished: a second cancel abandons that wait, and the
calls abandoned are cancelled (:mod:`obelisk.interpreters.lingering`).

An activity's ``Exception`` is an outcome (and so is a ``CancelledError`` it raises
itself while the run is not being cancelled). Any other ``BaseException``
(``KeyboardInterrupt``, ``SystemExit``, a test framework's failure) is not the world
failing but a request to stop: the run cancels and awaits its other activities, then
re-raises it. So does an exception raised by the approval hook.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.interpreters.activities import Activity, outcome_of_exception, outcome_of_thread
from obelisk.interpreters.calls import Invocation, started
from obelisk.interpreters.cancel import cancel
from obelisk.interpreters.collector import gc_keep
from obelisk.interpreters.common import Observer, clock_of, prepare, reads_calls, traced
from obelisk.interpreters.eager import Resumed, start_eagerly
from obelisk.interpreters.events import Cancelled, Finished, Status, Waiting
from obelisk.interpreters.executors import AsyncExecutor, Registry, async_executor
from obelisk.interpreters.gates import Approver, approval, within
from obelisk.interpreters.lingering import LINGERING, Lingering
from obelisk.interpreters.machine import advance, begin, complete_all, finish, settle
from obelisk.interpreters.outcomes import Outcome
from obelisk.interpreters.replaying import Replayed
from obelisk.interpreters.result import RunResult
from obelisk.interpreters.state import RunState


async def drive_async(plan: CompiledPlan, context: Context, invoke: AsyncExecutor,
                      approve: Approver | None, clock: Callable[[], str], *,
                      max_concurrency: int | None = None, timeout: float | None = None,
                      observer: Observer | None = None, isolate_invalid: bool = False,
                      max_value_nodes: int | None = None, max_value_bytes: int | None = None,
                      resume: Replayed | None = None,
                      trace: bool | None = None) -> RunResult:
    """The asyncio loop: advance, approve, start tasks, complete them as they finish.

    ``observer`` is given every run event (Started, Decided, Finished, Cancelled);
    ``isolate_invalid`` keeps going past invalid calls (the machine's ``begin`` seam).
    ``resume`` continues a replayed run instead of beginning one: its running calls start
    first, its undecided calls go to the approval hook. ``trace``: record the run's trace
    (see ``run_sync``).
    """
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    if resume is None:
        run = _Run(begin(plan, context, isolate_invalid=isolate_invalid,
                         max_value_nodes=max_value_nodes, max_value_bytes=max_value_bytes,
                         trace=traced(trace, observer)),
                   invoke, clock, timeout, observer)
        return await _drive_async(run, approve, max_concurrency)
    run = _Run(resume.state, invoke, clock, timeout, observer)
    running, undecided = resume.pick_up()
    run.queued.extend(running)
    return await _drive_async(run, approve, max_concurrency, undecided)


class _Run:
    """The bookkeeping of one asyncio run, passed explicitly to the loop's helpers.

    Only the run's own loop (one ``_drive_async`` call) and the tasks it starts touch it:
    the machine's state, the tasks running by node, the approved invocations waiting for
    a concurrency slot, what finished tasks report (and the future the loop waits on
    meanwhile), and whether the run itself is being stopped.
    """

    __slots__ = ("state", "invoke", "clock", "timeout", "tell", "with_calls", "finished",
                 "waiter", "tasks", "queued", "stopping", "lingering")

    def __init__(self, state: RunState, invoke: AsyncExecutor, clock: Callable[[], str],
                 timeout: float | None, tell: Observer | None) -> None:
        self.state = state
        self.invoke = invoke
        self.clock = clock
        self.timeout = timeout
        self.tell = tell
        self.with_calls = tell is not None and reads_calls(tell)  # Started carries a copy
        # What finished tasks report, and the future the loop waits on while nothing
        # has (a deque and a future: an asyncio.Queue's bookkeeping cost more per call).
        self.finished: deque[tuple[int, Outcome | Abort]] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.queued: deque[Invocation] = deque()
        self.stopping = False  # set once the run itself is being cancelled or aborted
        self.lingering = Lingering()  # the threads of plain activities a cancel waits for


async def _drive_async(run: _Run, approve: Approver | None, max_concurrency: int | None,
                       undecided: Sequence[Invocation] = ()) -> RunResult:
    """The asyncio loop: advance, approve, start tasks, complete them as they finish.

    ``undecided``: started calls of a resumed run that still wait for the approval hook.
    """
    settled: tuple[Invocation, ...] | None = None  # what the last settle made ready
    token = LINGERING.set(run.lingering)  # the run's tasks inherit it
    try:
        while True:
            if settled is None:
                run.state, ready = advance(run.state)
            else:  # the settle advanced already
                ready, settled = settled, None
            if run.tell is not None:  # events are made only for an observer
                for invocation in ready:
                    run.tell(started(invocation, run.with_calls))
            if undecided:
                ready, undecided = (*undecided, *ready), ()
            if approve is None:
                run.queued.extend(ready)
            else:
                await _approve(run, ready, approve)
            if len(run.queued) == 1 and not run.tasks and not run.finished:
                # The only call that can run: awaited here, not in a task of its own (a
                # chain then costs no task and no queue hand-off per call), in a copy of
                # the context as a task would be.
                invocation = run.queued.popleft()
                begun = start_eagerly(_outcome(run, invocation), invocation.node)
                if type(begun) is Resumed:
                    begun = await begun
                settled = _settle(run, [(invocation.node, begun)])  # type: ignore[list-item]
                continue
            while run.queued and (max_concurrency is None or len(run.tasks) < max_concurrency):
                _start(run, run.queued.popleft())
            if not run.tasks and not run.finished:
                if run.state.done:
                    break
                continue  # a denial may have released other calls
            while not run.finished:
                run.waiter = asyncio.get_running_loop().create_future()
                await run.waiter
            batch = list(run.finished)
            run.finished.clear()
            settled = _settle(run, batch)
    except BaseException as exc:
        return await _stopped(run, exc)
    finally:
        LINGERING.reset(token)
    return finish(run.state)


async def _approve(run: _Run, ready: Iterable[Invocation], approve: Approver) -> None:
    """The approval step for each ready call, in order; those approved are queued."""
    for invocation in ready:
        run.state, approved = await approval(run.state, invocation, approve, run.tell)
        if approved is not None:
            run.queued.append(approved)


async def _stopped(run: _Run, exc: BaseException) -> RunResult:
    """The run cancelled, or stopped by an approval hook's error or an activity's
    KeyboardInterrupt/SystemExit: no task may outlive the run, so every running activity
    is cancelled and awaited before the cancelled result is returned or ``exc`` raised."""
    run.stopping = run.lingering.stopping = True
    await _stop_tasks(run)
    if not isinstance(exc, asyncio.CancelledError):
        raise exc
    late = list(run.finished)
    run.finished.clear()
    status = run.state.status
    waited = tuple(n for n in sorted(run.lingering.threads) if status[n] is Status.RUNNING)
    if waited:  # plain activities still running: their outcomes are kept
        if run.tell is not None:
            run.tell(Waiting(waited))
        for node, done in (await run.lingering.finished(waited)).items():
            late.append((node, await outcome_of_thread(done)))
    _settle(run, [item for item in late if not isinstance(item[1], Abort)], advancing=False)
    if run.tell is not None:
        run.tell(Cancelled())
    return finish(cancel(run.state), cancelled=True)  # finished results are kept


async def _stop_tasks(run: _Run) -> None:
    """Cancel every running task and wait until all have ended. A cancel that arrives
    meanwhile (the caller cancelling again) does not cut the wait short: the run still
    returns its cancelled result, with no task left behind."""
    tasks = list(run.tasks.values())
    for task in tasks:
        task.cancel()
    while True:
        try:
            await asyncio.gather(*tasks, return_exceptions=True)
            return
        except asyncio.CancelledError:
            continue  # the gather was cancelled; the tasks were told already, wait again


def _start(run: _Run, invocation: Invocation) -> None:
    """Start one invocation, as a task would: its first step runs now (see
    :mod:`obelisk.interpreters.eager`). A call that finishes in that step reports its
    outcome at once and needs no task; one that waits goes on in a task of its own. With
    ``timeout`` every call gets a task (``asyncio.wait_for`` makes its own)."""
    node = invocation.node
    if run.timeout is not None:
        run.tasks[node] = asyncio.create_task(_one(run, invocation))
        return
    begun = start_eagerly(_outcome(run, invocation), node)
    if type(begun) is Resumed:
        begun.done = functools.partial(_report, run, node)
        run.tasks[node] = asyncio.create_task(begun)
    else:
        _report(run, node, begun)  # type: ignore[arg-type]


async def _one(run: _Run, invocation: Invocation) -> None:
    """Run one invocation as a task, report its outcome in ``run.finished`` and wake the
    loop if it waits."""
    _report(run, invocation.node, await _outcome(run, invocation))


def _report(run: _Run, node: int, outcome: Outcome | Abort) -> None:
    """A call's outcome in ``run.finished``, and the loop woken if it waits."""
    run.finished.append((node, outcome))
    waiter = run.waiter
    if waiter is not None and not waiter.done():  # the loop waits: wake it
        waiter.set_result(None)


async def _outcome(run: _Run, invocation: Invocation) -> Outcome | Abort:
    """Run one invocation (within its timeout): its outcome, or the Abort that stops the
    run."""
    outcome: Outcome | Abort
    try:
        if run.timeout is None:  # (the common case, without the timeout step's frame)
            outcome = await run.invoke(invocation)
        else:
            outcome = await within(run.invoke(invocation), run.timeout)
    except asyncio.CancelledError:
        if run.stopping or _cancel_requested():
            raise
        # The activity raised CancelledError itself (something it awaited was
        # cancelled): a failure of that activity, not of the run.
        outcome = outcome_of_exception(asyncio.CancelledError())
    except BaseException as exc:  # KeyboardInterrupt, SystemExit...: stop the run
        outcome = Abort(exc)
    return outcome


def _settle(run: _Run, batch: list[tuple[int, Outcome | Abort]], *,
            advancing: bool = True) -> tuple[Invocation, ...]:
    """Complete a batch of finished tasks in node order (an Abort is re-raised first),
    and advance in the same transition unless told not to: the calls made ready."""
    if len(batch) > 1:
        batch.sort(key=_node_of)
    for _, item in batch:
        if type(item) is Abort:  # a final class: its exact type
            raise item.exception
    tasks, clock = run.tasks, run.clock
    settled: list[tuple[int, Outcome, str]] = []
    for node, outcome in batch:
        if tasks:  # a call the loop ran itself, or that finished in its first step, has none
            tasks.pop(node, None)
        settled.append((node, outcome, clock()))  # type: ignore[arg-type]  # no Abort left
        gc_keep()
    # One transition for the whole batch and the advance after it: the join after a
    # fan-out starts sooner, and a chain makes one state per call instead of two.
    ready: tuple[Invocation, ...] = ()
    if advancing:
        run.state, ready = settle(run.state, settled)
    else:
        run.state = complete_all(run.state, settled)
    if run.tell is not None:
        for node, outcome, date in settled:
            run.tell(Finished(node, outcome, date))
    return ready


def _node_of(item: tuple[int, Any]) -> int:
    return item[0]


@frozen
class Abort:
    """An activity raised a BaseException that is not a failure (KeyboardInterrupt,
    SystemExit...): the run stops and the exception is re-raised."""

    exception: BaseException


def _cancel_requested() -> bool:
    """True when the current task has been asked to cancel (Python 3.11+; else False)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling()) if cancelling is not None else False


def async_activity_invoker(plan: CompiledPlan, activities: Mapping[str, Activity],
                           latent: Activity | None) -> AsyncExecutor:
    """Invoke real activities: async ones on the loop, plain ones in a worker thread."""
    return async_executor(plan, Registry(activities=activities, latent=latent))


async def run_async(
    plan: CompiledPlan | Sequence[Any],
    context: Context | Iterable[Any] | None = None,
    *,
    activities: Mapping[str, Activity] | None = None,
    approve: Callable[[dict[str, Any]], Any] | None = None,
    latent: Activity | None = None,
    clock: Callable[[], Any] | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    tools: ToolRegistry | Iterable[Any] | None = (),
    instances: bool = False,
    observer: Observer | None = None,
    max_value_nodes: int | None = None,
    max_value_bytes: int | None = None,
    trace: bool | None = None,
) -> RunResult:
    """Run a plan on asyncio: every ready call at once, up to ``max_concurrency``.

    ``timeout`` (seconds) bounds each call; a call past it fails with ``Timeout``, routed
    like any exception. Otherwise as :func:`obelisk.run_sync`.
    """
    compiled, ctx = prepare(plan, context, tools, instances)
    invoke = async_activity_invoker(compiled, activities or {}, latent)
    return await drive_async(compiled, ctx, invoke, approve, clock_of(clock),
                             max_concurrency=max_concurrency, timeout=timeout,
                             observer=observer, max_value_nodes=max_value_nodes,
                             max_value_bytes=max_value_bytes, trace=trace)
