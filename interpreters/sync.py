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

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.calls import Invocation, started
from obelisk.interpreters.cancel import Stop, cancel
from obelisk.interpreters.collector import gc_keep
from obelisk.interpreters.common import Observer, clock_of, prepare, reads_calls, traced
from obelisk.interpreters.events import Cancelled, Finished
from obelisk.interpreters.executors import Registry, SyncExecutor, sync_executor
from obelisk.interpreters.gates import Approver, approval_sync
from obelisk.interpreters.machine import advance, begin, complete, finish
from obelisk.interpreters.replaying import Replayed
from obelisk.interpreters.result import RunResult
from obelisk.interpreters.state import RunState


def drive_sync(plan: CompiledPlan, context: Context, invoke: SyncExecutor,
               approve: Approver | None, clock: Callable[[], str],
               observer: Observer | None = None, *,
               isolate_invalid: bool = False,
               max_value_nodes: int | None = None, max_value_bytes: int | None = None,
               resume: Replayed | None = None, trace: bool | None = None,
               stop: Stop | None = None) -> RunResult:
    """The sync loop: advance, ask approval, invoke, complete; until nothing is left.

    ``observer`` is given every run event (Started, Decided, Finished) as it happens;
    ``isolate_invalid`` keeps going past invalid calls (the machine's ``begin`` seam);
    ``max_value_nodes`` and ``max_value_bytes`` bound values (see ``machine.begin``).
    ``resume`` continues a replayed run instead of beginning one: its running calls are
    invoked first, then its undecided calls go to the approval hook. ``trace``: record
    the run's trace (see :func:`run_sync`). ``stop``: see :func:`run_sync`.
    """
    run = _SyncRun(invoke, clock, observer, stop)
    try:
        run.state = (begin(plan, context, isolate_invalid=isolate_invalid,
                           max_value_nodes=max_value_nodes, max_value_bytes=max_value_bytes,
                           trace=traced(trace, observer))
                     if resume is None else resume.state)
        approved: Sequence[Invocation]
        ready: Sequence[Invocation]
        approved, ready = ((), ()) if resume is None else resume.pick_up()
        while True:
            for invocation in approved:
                run.one(invocation)
            for invocation in ready:
                if approve is not None:
                    run.stopping()
                    run.state, next_step = approval_sync(run.state, invocation, approve,
                                                         run.tell, run.wait)
                    if next_step is None:
                        continue
                    invocation = next_step
                run.one(invocation)
            if run.state.done:
                return finish(run.state)
            run.stopping()  # before the next calls are made ready: they stay pending
            run.state, ready = advance(run.state)
            approved = ()
            if run.tell is not None:
                for invocation in ready:
                    run.tell(started(invocation, run.with_calls))
    except _Stopped:
        return run.cancelled()
    except KeyboardInterrupt:
        if stop is None or not stop.is_set():
            raise
        return run.cancelled()  # interrupted again: the call running is abandoned
    finally:
        run.loop.close()


class _Stopped(Exception):
    """The run's ``stop`` is set: nothing more starts."""


class _SyncRun:
    """The bookkeeping of one sync run: its state, executor, clock, observer and stop."""

    __slots__ = ("state", "invoke", "clock", "tell", "with_calls", "stop", "loop")

    def __init__(self, invoke: SyncExecutor, clock: Callable[[], str],
                 tell: Observer | None, stop: Stop | None) -> None:
        self.state: RunState
        self.invoke, self.clock, self.tell, self.stop = invoke, clock, tell, stop
        # events are made only for an observer: a run without one pays nothing
        self.with_calls = tell is not None and reads_calls(tell)  # Started carries a copy
        self.loop = asyncio.new_event_loop()

    def wait(self, value: Any) -> Any:
        return self.loop.run_until_complete(value) if inspect.isawaitable(value) else value

    def stopping(self) -> None:
        """Raise :class:`_Stopped` when the run's ``stop`` is set."""
        if self.stop is not None and self.stop.is_set():
            raise _Stopped

    def one(self, invocation: Invocation) -> None:
        """Invoke one call and complete it (unless the run is stopping)."""
        self.stopping()
        outcome = self.invoke(invocation, self.wait)
        date = self.clock()
        self.state = complete(self.state, invocation.node, outcome, date)
        gc_keep()
        if self.tell is not None:
            self.tell(Finished(invocation.node, outcome, date))

    def cancelled(self) -> RunResult:
        """The run stopped: the calls running (or ready) cancelled, finished results kept."""
        if self.tell is not None:
            self.tell(Cancelled())
        return finish(cancel(self.state), cancelled=True)


def activity_invoker(plan: CompiledPlan, activities: Mapping[str, Activity],
                     latent: Activity | None) -> SyncExecutor:
    """Invoke real activities (or the latent executor) and turn what they do into outcomes."""
    return sync_executor(plan, Registry(activities=activities, latent=latent))


def run_sync(
    plan: CompiledPlan | Sequence[Any],
    context: Context | Iterable[Any] | None = None,
    *,
    activities: Mapping[str, Activity] | None = None,
    approve: Callable[[dict[str, Any]], Any] | None = None,
    latent: Activity | None = None,
    clock: Callable[[], Any] | None = None,
    tools: ToolRegistry | Iterable[Any] | None = (),
    instances: bool = False,
    observer: Observer | None = None,
    max_value_nodes: int | None = None,
    max_value_bytes: int | None = None,
    trace: bool | None = None,
    stop: Stop | None = None,
) -> RunResult:
    """Run a plan one call at a time with real activities.

    ``plan`` is a CompiledPlan or a list of calls (compiled with ``tools`` and
    ``instances``); a plan with error diagnostics raises ``PlanRefused``. ``approve`` is
    asked before each ready call with its resolved parameters; ``latent`` runs latent
    calls without ``_output``; ``clock`` stamps ``_date``; ``observer`` is given every
    run event. A result, written value or resolved call of more than ``max_value_nodes``
    JSON values (default ``MAX_VALUE_NODES``, 250,000), or of a JSON text over
    ``max_value_bytes`` (default ``MAX_VALUE_BYTES``, 16 MiB, shared structure counted as
    it will be written), fails its call with ``ValueTooLarge``. ``trace`` records the result's trace, one line per step (the
    default, None, records it when an ``observer`` follows the run). ``stop`` (a
    ``threading.Event``, say, set by a signal handler) stops the run once set: the call
    running finishes and keeps its outcome, nothing more starts, and the result is
    ``cancelled``; a ``KeyboardInterrupt`` while it is set abandons the call running
    (cancelled, started without an outcome). Returns a RunResult.
    """
    compiled, ctx = prepare(plan, context, tools, instances)
    invoke = activity_invoker(compiled, activities or {}, latent)
    return drive_sync(compiled, ctx, invoke, approve, clock_of(clock), observer,
                      max_value_nodes=max_value_nodes, max_value_bytes=max_value_bytes,
                      trace=trace, stop=stop)
