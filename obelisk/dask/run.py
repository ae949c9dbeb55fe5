"""Running a plan on a Dask cluster: :func:`run_dask` and :func:`resume_dask`.

Both are the asyncio interpreter with the run's activities wrapped by a
:class:`~obelisk.dask.remote.DaskInterpreter`: the state machine stays in the client, and
each call placed on the cluster is one Dask future. With a journal the run is recorded as
any durable run is (its header names the ``dask`` interpreter), so ``obelisk resume``
continues it, on the cluster or (``--interpreter asyncio``) in one process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from distributed import Client

from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.dask.paths import ActivityPath, NotImportable, load_activity
from obelisk.dask.placement import Placement, check_tools
from obelisk.dask.remote import DaskInterpreter, TraceContext
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.aio import run_async
from obelisk.interpreters.common import Observer, prepare
from obelisk.interpreters.result import RunResult
from obelisk.interpreters.stream import EventSink
from obelisk.journal.run import resume_async, run_durable_async

if TYPE_CHECKING:
    from obelisk.journal.journal import Journal

__all__ = ["DaskActivities", "resolve_activities", "resume_dask", "run_dask"]

#: What ``run_dask`` takes as activities: by name, a function (imported by workers by its
#: own module and name), an :class:`ActivityPath`, or its text ``package.module:name``.
DaskActivities = Mapping[str, "Activity | ActivityPath | str"]


def resolve_activities(activities: DaskActivities | None,
                       paths: Mapping[str, ActivityPath | str] | None = None
                       ) -> tuple[dict[str, Activity], dict[str, ActivityPath]]:
    """The activities' functions (those given by path imported here too: calls placed in
    the client run them) and their paths, given here or in ``paths``. Raises
    :class:`NotImportable` for a path that does not import, ``TypeError`` for a value that
    is none of the three."""
    functions: dict[str, Activity] = {}
    found = {name: _path(name, path) for name, path in (paths or {}).items()}
    for name, given in (activities or {}).items():
        if isinstance(given, str):
            given = _path(name, given)
        if isinstance(given, ActivityPath):
            try:
                functions[name] = load_activity(given)
            except Exception as exc:  # noqa: BLE001 - said with the path it came from
                raise NotImportable(name, f"cannot import {given} here "
                                    f"({type(exc).__name__}: {exc})") from None
            found[name] = given
        elif callable(given):
            functions[name] = given
        else:
            raise TypeError(f"activity {name!r} is {type(given).__name__}: give a function, "
                            "an ActivityPath or 'package.module:name'")
    return functions, found


def _path(name: str, given: ActivityPath | str) -> ActivityPath:
    if isinstance(given, ActivityPath):
        return given
    try:
        return ActivityPath.parse(given)
    except ValueError as exc:
        raise NotImportable(name, str(exc)) from None


async def run_dask(
    plan: CompiledPlan | Sequence[Any],
    context: Context | Iterable[Any] | None = None,
    *,
    client: Client,
    activities: DaskActivities | None = None,
    executor: Placement | str = Placement.DASK,
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
    journal: Journal | None = None,
    run_id: str | None = None,
    trace_context: TraceContext | None = None,
    paths: Mapping[str, ActivityPath | str] | None = None,
    on_event: EventSink | None = None,
) -> RunResult:
    """Run a plan with its activities on the Dask cluster of ``client`` (an asynchronous
    ``distributed.Client``): the same result as :func:`obelisk.run_async`.

    Each call of a tool placed on the cluster (its ``"x-obelisk-executor"``, else
    ``executor``: ``"dask"`` or ``"local"``) runs in a worker, which imports its activity
    by path (see :data:`DaskActivities`; ``paths`` gives the path of functions that their
    own module and name do not lead to, such as wrapped ones); latent calls and the others
    run here.
    ``journal`` records the run under ``run_id`` as :func:`obelisk.run_durable_async`
    does (``max_value_nodes`` and ``max_value_bytes`` then keep their defaults).
    ``trace_context`` gives each call's trace context to the workers. ``on_event`` is
    given the run's typed events (docs/observability.md), as by :func:`obelisk.run_async`. Raises :class:`~obelisk.ToolError` for a tool whose
    ``"x-obelisk-executor"`` is neither, ``TypeError`` for a client that is not
    asynchronous; otherwise as :func:`obelisk.run_async`.
    """
    compiled, ctx = prepare(plan, context, tools, instances)
    check_tools(compiled.tools or ())
    functions, found = resolve_activities(activities, paths)
    host = DaskInterpreter(client, executor, found, trace_context)
    wrapped = host.wrap(functions)
    if journal is None:
        return await run_async(compiled, ctx, activities=wrapped, approve=approve,
                               latent=latent, clock=clock, max_concurrency=max_concurrency,
                               timeout=timeout, observer=observer,
                               max_value_nodes=max_value_nodes,
                               max_value_bytes=max_value_bytes, trace=trace, on_event=on_event)
    return await run_durable_async(compiled, ctx, journal=journal, run_id=run_id,
                                   activities=wrapped, approve=approve, latent=latent,
                                   clock=clock, max_concurrency=max_concurrency,
                                   timeout=timeout, observer=observer, trace=trace,
                                   interpreter="dask", on_event=on_event)


async def resume_dask(journal: Journal, run_id: str | None = None, *, client: Client,
                      activities: DaskActivities | None = None,
                      executor: Placement | str = Placement.DASK,
                      approve: Callable[[dict[str, Any]], Any] | None = None,
                      latent: Activity | None = None, clock: Callable[[], Any] | None = None,
                      max_concurrency: int | None = None, timeout: float | None = None,
                      observer: Observer | None = None, take_over: bool = False,
                      trace_context: TraceContext | None = None,
                      paths: Mapping[str, ActivityPath | str] | None = None,
                      on_event: EventSink | None = None) -> RunResult:
    """Continue a plan's recorded run (:func:`obelisk.journal.resume_async`) with its
    activities on the Dask cluster of ``client`` (see :func:`run_dask`): no recorded
    outcome is produced again, and a call that was in flight runs again with its
    idempotency key (an at-most-once call's ends ``Interrupted``). ``on_event``: see
    :func:`run_dask`."""
    functions, found = resolve_activities(activities, paths)
    wrapped = DaskInterpreter(client, executor, found, trace_context).wrap(functions)
    return await resume_async(journal, run_id, activities=wrapped, approve=approve,
                              latent=latent, clock=clock, max_concurrency=max_concurrency,
                              timeout=timeout, observer=observer, take_over=take_over,
                              on_event=on_event)
