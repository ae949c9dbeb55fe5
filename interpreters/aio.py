"""The asyncio interpreter: every ready call starts at once (up to ``max_concurrency``).

Finished calls report through a queue, so each completion costs O(1) however many calls
run. Cancelling the run cancels the running activities, waits for them, keeps every
finished result and returns a result whose status is ``cancelled``: no task is left
running or unawaited when ``run_async`` returns. Plain (non-async) activities run in a
worker thread so they do not block the loop; a thread cannot be interrupted, so a
cancelled plain activity finishes in the background with its result dropped.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from obelisk.compiler.plan import CompiledPlan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.interpreters.activities import (
    arguments, is_async, outcome_of_exception, outcome_of_value,
)
from obelisk.interpreters.common import choose, clock_of, prepare
from obelisk.interpreters.machine import (
    Invocation, Outcome, Raised, RunResult, advance, as_verdict, begin, cancel, complete,
    decide, finish,
)

AsyncInvoke = Callable[[Invocation], Awaitable[Outcome]]


async def drive_async(plan: CompiledPlan, context: Context, invoke: AsyncInvoke,
                      approve: Callable[[dict[str, Any]], Any] | None,
                      clock: Callable[[], str], *, max_concurrency: int | None = None,
                      timeout: float | None = None) -> RunResult:
    """The asyncio loop: advance, approve, start tasks, complete them as they finish."""
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    state = begin(plan, context)
    finished: asyncio.Queue[tuple[int, Outcome]] = asyncio.Queue()
    tasks: dict[int, asyncio.Task[None]] = {}
    queued: deque[Invocation] = deque()

    async def one(invocation: Invocation) -> None:
        try:
            if timeout is None:
                outcome = await invoke(invocation)
            else:
                outcome = await asyncio.wait_for(invoke(invocation), timeout)
        except asyncio.TimeoutError:
            outcome = Raised("Timeout", f"no result within {timeout:g} s")
        finished.put_nowait((invocation.node, outcome))

    def settle(batch: list[tuple[int, Outcome]]) -> None:
        nonlocal state
        for node, outcome in sorted(batch, key=lambda item: item[0]):
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
    except asyncio.CancelledError:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        late = []
        while not finished.empty():
            late.append(finished.get_nowait())
        settle(late)  # results that arrived before the cancellation are kept
        return finish(cancel(state), cancelled=True)
    return finish(state)


def async_activity_invoker(plan: CompiledPlan, activities: Mapping[str, Callable[..., Any]],
                           latent: Callable[..., Any] | None) -> AsyncInvoke:
    """Invoke real activities: async ones on the loop, plain ones in a worker thread."""

    async def invoke(invocation: Invocation) -> Outcome:
        chosen = choose(plan, invocation, activities, latent)
        if not callable(chosen):
            return chosen
        try:
            if is_async(chosen):
                value = await chosen(*arguments(invocation))
            else:
                value = await asyncio.to_thread(chosen, *arguments(invocation))
                if inspect.isawaitable(value):
                    value = await value
            return outcome_of_value(value)
        except Exception as exc:  # an activity's failure is an outcome, never a crash
            return outcome_of_exception(exc)

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
