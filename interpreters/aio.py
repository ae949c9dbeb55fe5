"""The asyncio interpreter: every ready call starts at once (up to ``max_concurrency``).

Finished calls report through a queue, so each completion costs O(1) however many calls
run. Cancelling the run cancels the running activities, waits for them, keeps every
finished result and returns a result whose status is ``cancelled``: no task is left
running or unawaited when ``run_async`` returns. Plain (non-async) activities run in a
worker thread so they do not block the loop; a thread cannot be interrupted, so a
cancelled plain activity finishes in the background with its result dropped.

An activity's ``Exception`` is an outcome (and so is a ``CancelledError`` it raises
itself while the run is not being cancelled). Any other ``BaseException``
(``KeyboardInterrupt``, ``SystemExit``, a test framework's failure) is not the world
failing but a request to stop: the run cancels and awaits its other activities, then
re-raises it. So does an exception raised by the approval hook.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from obelisk.compiler.plan import CompiledPlan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.interpreters.activities import call_async, outcome_of_exception
from obelisk.interpreters.common import choose, clock_of, gc_tuned, prepare
from obelisk.interpreters.machine import (
    Invocation, Outcome, Raised, RunResult, advance, as_verdict, begin, cancel, complete,
    decide, finish,
)

AsyncInvoke = Callable[[Invocation], Awaitable[Outcome]]


async def drive_async(plan: CompiledPlan, context: Context, invoke: AsyncInvoke,
                      approve: Callable[[dict[str, Any]], Any] | None,
                      clock: Callable[[], str], *, max_concurrency: int | None = None,
                      timeout: float | None = None) -> RunResult:
    """The asyncio loop: advance, approve, start tasks, complete them as they finish.

    The garbage collector is tuned for the length of the run (see ``gc_tuned``).
    """
    with gc_tuned():
        return await _drive_async(plan, context, invoke, approve, clock,
                                  max_concurrency=max_concurrency, timeout=timeout)


async def _drive_async(plan: CompiledPlan, context: Context, invoke: AsyncInvoke,
                      approve: Callable[[dict[str, Any]], Any] | None,
                      clock: Callable[[], str], *, max_concurrency: int | None = None,
                      timeout: float | None = None) -> RunResult:
    """The asyncio loop: advance, approve, start tasks, complete them as they finish."""
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    state = begin(plan, context)
    finished: asyncio.Queue[tuple[int, Outcome | Abort]] = asyncio.Queue()
    tasks: dict[int, asyncio.Task[None]] = {}
    queued: deque[Invocation] = deque()

    stopping = False  # set once the run itself is being cancelled or aborted

    async def one(invocation: Invocation) -> None:
        outcome: Outcome | Abort
        try:
            if timeout is None:
                outcome = await invoke(invocation)
            else:
                outcome = await asyncio.wait_for(invoke(invocation), timeout)
        except asyncio.TimeoutError:
            outcome = Raised("Timeout", f"no result within {timeout:g} s")
        except asyncio.CancelledError:
            if stopping or _cancel_requested():
                raise
            # The activity raised CancelledError itself (something it awaited was
            # cancelled): a failure of that activity, not of the run.
            outcome = outcome_of_exception(asyncio.CancelledError())
        except BaseException as exc:  # KeyboardInterrupt, SystemExit...: stop the run
            outcome = Abort(exc)
        finished.put_nowait((invocation.node, outcome))

    def settle(batch: list[tuple[int, Outcome | Abort]]) -> None:
        nonlocal state
        batch.sort(key=lambda item: item[0])
        for _, item in batch:
            if isinstance(item, Abort):
                raise item.exception
        for node, outcome in [(n, o) for n, o in batch if not isinstance(o, Abort)]:
            tasks.pop(node, None)
            state = complete(state, node, outcome, clock())

    try:
        while True:
            state, ready = advance(state)
            for invocation in ready:
                if approve is not None:
                    answer = approve(dict(invocation.call))
                    if inspect.isawaitable(answer):
                        answer = await answer
                    state, next_step = decide(state, invocation, as_verdict(answer))
                    if next_step is None:
                        continue
                    invocation = next_step
                queued.append(invocation)
            while queued and (max_concurrency is None or len(tasks) < max_concurrency):
                invocation = queued.popleft()
                tasks[invocation.node] = asyncio.create_task(one(invocation))
            if not tasks:
                if state.done:
                    break
                continue  # a denial may have released other calls
            batch = [await finished.get()]
            while not finished.empty():
                batch.append(finished.get_nowait())
            settle(batch)
    except BaseException as exc:
        # Cancelled, or stopped by an approval hook's error or an activity's
        # KeyboardInterrupt/SystemExit: no task may outlive the run, so cancel and await
        # every running activity before returning or re-raising.
        stopping = True
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        if not isinstance(exc, asyncio.CancelledError):
            raise
        late = []
        while not finished.empty():
            late.append(finished.get_nowait())
        settle([item for item in late if not isinstance(item[1], Abort)])
        return finish(cancel(state), cancelled=True)  # finished results are kept
    return finish(state)


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


def async_activity_invoker(plan: CompiledPlan, activities: Mapping[str, Callable[..., Any]],
                           latent: Callable[..., Any] | None) -> AsyncInvoke:
    """Invoke real activities: async ones on the loop, plain ones in a worker thread."""

    async def invoke(invocation: Invocation) -> Outcome:
        chosen = choose(plan, invocation, activities, latent)
        return await call_async(chosen, invocation) if callable(chosen) else chosen

    return invoke


async def run_async(
    plan: CompiledPlan | Sequence[Any],
    context: Context | Iterable[Any] | None = None,
    *,
    activities: Mapping[str, Callable[..., Any]] | None = None,
    approve: Callable[[dict[str, Any]], Any] | None = None,
    latent: Callable[..., Any] | None = None,
    clock: Callable[[], Any] | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    tools: ToolRegistry | Iterable[Any] | None = (),
    instances: bool = False,
) -> RunResult:
    """Run a plan on asyncio: every ready call at once, up to ``max_concurrency``.

    ``timeout`` (seconds) bounds each call; a call past it fails with ``Timeout``, routed
    like any exception. Otherwise as :func:`obelisk.run_sync`.
    """
    compiled, ctx = prepare(plan, context, tools, instances)
    invoke = async_activity_invoker(compiled, activities or {}, latent)
    return await drive_async(compiled, ctx, invoke, approve, clock_of(clock),
                             max_concurrency=max_concurrency, timeout=timeout)
