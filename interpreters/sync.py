"""The synchronous interpreter: one call at a time, in the machine's order.

Async activities and async approval hooks run to completion on a private event loop, so
``run_sync`` works from plain code (not from inside a running event loop: use
``run_async`` there).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from obelisk.compiler.plan import CompiledPlan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.interpreters.activities import call_sync
from obelisk.interpreters.common import choose, clock_of, gc_tuned, prepare
from obelisk.interpreters.machine import (
    Invocation, Outcome, RunResult, advance, as_verdict, begin, complete, decide, finish,
)

#: How the sync loop runs one invocation; ``wait`` finishes an awaitable on the private loop.
SyncInvoke = Callable[[Invocation, Callable[[Any], Any]], Outcome]


def drive_sync(plan: CompiledPlan, context: Context, invoke: SyncInvoke,
               approve: Callable[[dict[str, Any]], Any] | None,
               clock: Callable[[], str]) -> RunResult:
    """The sync loop: advance, ask approval, invoke, complete; until nothing is left."""
    loop = asyncio.new_event_loop()

    def wait(value: Any) -> Any:
        return loop.run_until_complete(value) if inspect.isawaitable(value) else value

    try:
        with gc_tuned():
            state = begin(plan, context)
            while not state.done:
                state, ready = advance(state)
                for invocation in ready:
                    if approve is not None:
                        verdict = as_verdict(wait(approve(dict(invocation.call))))
                        state, next_step = decide(state, invocation, verdict)
                        if next_step is None:
                            continue
                        invocation = next_step
                    state = complete(state, invocation.node, invoke(invocation, wait), clock())
            return finish(state)
    finally:
        loop.close()


def activity_invoker(plan: CompiledPlan, activities: Mapping[str, Callable[..., Any]],
                     latent: Callable[..., Any] | None) -> SyncInvoke:
    """Invoke real activities (or the latent executor) and turn what they do into outcomes."""

    def invoke(invocation: Invocation, wait: Callable[[Any], Any]) -> Outcome:
        chosen = choose(plan, invocation, activities, latent)
        return call_sync(chosen, invocation, wait) if callable(chosen) else chosen

    return invoke


def run_sync(
    plan: CompiledPlan | Sequence[Any],
    context: Context | Iterable[Any] | None = None,
    *,
    activities: Mapping[str, Callable[..., Any]] | None = None,
    approve: Callable[[dict[str, Any]], Any] | None = None,
    latent: Callable[..., Any] | None = None,
    clock: Callable[[], Any] | None = None,
    tools: ToolRegistry | Iterable[Any] | None = (),
    instances: bool = False,
) -> RunResult:
    """Run a plan one call at a time with real activities.

    ``plan`` is a CompiledPlan or a list of calls (compiled with ``tools`` and
    ``instances``); a plan with error diagnostics raises ``PlanRefused``. ``approve`` is
    asked before each ready call with its resolved parameters; ``latent`` runs latent
    calls without ``_output``; ``clock`` stamps ``_date``. Returns a RunResult.
    """
    compiled, ctx = prepare(plan, context, tools, instances)
    invoke = activity_invoker(compiled, activities or {}, latent)
    return drive_sync(compiled, ctx, invoke, approve, clock_of(clock))
