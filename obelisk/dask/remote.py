"""The client's side of a Dask run: activities that send their calls to the cluster.

:class:`DaskInterpreter` wraps a run's activities (:meth:`DaskInterpreter.wrap`): each call
of a tool placed on the cluster (:mod:`obelisk.dask.placement`) becomes one Dask future,
whose key is new for each attempt; the asyncio interpreter awaits it like any ``async``
activity, so the run's one state machine settles the calls as they finish, whatever
order they finish in, and cancelling the run cancels the futures. A call placed in the
client runs as the asyncio interpreter runs it.

What the cluster answers becomes what an activity gives: a value, a
:class:`~obelisk.Branch`, or an :class:`~obelisk.ActivityError` the run turns back into
the same outcome. A worker lost while running a call is Dask's business: it reruns the
task elsewhere, with the same payload and so the same idempotency key. A task that kept
killing workers fails with ``KilledWorker``, a call in flight when the scheduler is lost
with ``SchedulerLost``: failures like any other, which ``||`` error branches take.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from attrs import field, frozen
from distributed import Client, KilledWorker
from distributed.client import FutureCancelledError

from obelisk.core.context import Context
from obelisk.core.errors import ActivityError
from obelisk.core.values import MISSING
from obelisk.dask.paths import ActivityPath, NotImportable, path_of
from obelisk.dask.placement import Placement, placement_of
from obelisk.dask.worker import Payload, Stop, run_call
from obelisk.interpreters.activities import Activity, Branch, Resident, in_thread, is_async
from obelisk.interpreters.outcomes import Chose, Outcome, Raised, Returned
from obelisk.journal.session import at_most_once_schema

__all__ = ["DaskInterpreter", "TraceContext"]

#: Gives the trace context of the call about to be sent (W3C trace-context headers, such
#: as ``traceparent``), read in the client as the call starts; a worker's activity reads
#: it with :func:`obelisk.dask.trace_context`.
TraceContext = Callable[[], Mapping[str, str]]


def _placement(value: Any) -> Placement:
    return value if isinstance(value, Placement) else Placement.of(value, "executor")


@frozen
class DaskInterpreter:
    """Runs activities on the Dask cluster that ``client`` (an asynchronous
    ``distributed.Client``) is connected to: what :func:`obelisk.run_dask` runs a plan
    with, and what ``run_agent(interpreter=...)`` takes.

    ``executor``: where the calls of a tool that does not say (``"x-obelisk-executor"``)
    run, ``"dask"`` (default) or ``"local"``; ``paths``: the import path of activities by
    name, for those whose function is not importable by its own module and name (the
    command line's ``--activities`` gives them all); ``trace_context``: see
    :data:`TraceContext`. Raises ``TypeError`` for a client that is not asynchronous and
    ``ValueError`` for another executor.
    """

    client: Client
    executor: Placement = field(default=Placement.DASK, converter=_placement)
    paths: Mapping[str, ActivityPath] = field(factory=dict)
    trace_context: TraceContext | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.client, Client) or not self.client.asynchronous:
            raise TypeError("the Dask interpreter takes an asynchronous distributed.Client: "
                            "await Client(address, asynchronous=True)")

    def wrap(self, activities: Mapping[str, Activity]) -> dict[str, Activity]:
        """Each activity as one that runs its calls where their tool is placed (a
        :class:`~obelisk.interpreters.activities.Resident` one, an MCP tool's, as it is)."""
        wrapped: dict[str, Activity] = {}
        for name, function in activities.items():
            if isinstance(function, Resident) and function.resident:
                wrapped[name] = function  # an MCP tool's: its session cannot travel
                continue
            path: ActivityPath | NotImportable | None = self.paths.get(name)
            if path is None:
                try:
                    path = path_of(name, function)
                except NotImportable as exc:  # fails only the calls sent to the cluster
                    path = exc
            wrapped[name] = DaskActivity(self, name, function, path)
        return wrapped

    async def submit(self, payload: Payload, name: str) -> Outcome | Stop:
        """Run ``payload`` in a worker: one future, whose key is new (``name``-uuid).
        Cancelling the caller cancels the future."""
        try:
            future = self.client.submit(run_call, payload, key=f"{name}-{uuid.uuid4().hex}",
                                        pure=False)
        except Exception as exc:  # noqa: BLE001 - a client closed after losing its scheduler
            raise ActivityError("SchedulerLost", f"the client is not connected to the Dask "
                                f"scheduler {_address(self.client)} ({exc}), so the call was "
                                "not run") from None
        try:
            done: Outcome | Stop = await future
        except asyncio.CancelledError:
            await self.client.cancel(  # type: ignore[no-untyped-call]
                [future], reason="the obelisk run was cancelled")
            raise
        except KilledWorker as exc:
            raise ActivityError("KilledWorker", f"{exc} (distributed.scheduler."
                                "allowed-failures bounds how many may die)") from None
        except FutureCancelledError as exc:
            raise _cancelled(exc, self.client) from None
        except Exception as exc:  # noqa: BLE001 - the task failed around the activity
            raise ActivityError(type(exc).__name__, f"the Dask task running the activity "
                                f"failed: {exc}") from None
        return done


def _cancelled(exc: FutureCancelledError, client: Client) -> ActivityError:
    """The failure of a call whose future was cancelled by someone else than the run."""
    if exc.reason == "scheduler-connection-lost":
        return ActivityError("SchedulerLost", f"the client lost the Dask scheduler "
                             f"{_address(client)} while this call ran, so it may or may not "
                             "have taken effect")
    if client.status in ("closing", "closed"):  # it could not reconnect: never sent
        return ActivityError("SchedulerLost", f"the client could not reach the Dask "
                             f"scheduler {_address(client)} again (within distributed.comm."
                             "timeouts.connect), so the call was not run")
    return ActivityError("Cancelled", f"its Dask task was cancelled ({exc.reason})")


def _address(client: Client) -> str:
    return str(client.scheduler.address) if client.scheduler is not None else "?"


class DaskActivity:
    """One activity of a Dask run: calls of a tool placed on the cluster go there, the
    others run here (``function``). ``path`` is where workers import it from, or why they
    cannot (which fails only the calls sent to them)."""

    __slots__ = ("host", "name", "function", "path")

    def __init__(self, host: DaskInterpreter, name: str, function: Activity,
                 path: ActivityPath | NotImportable) -> None:
        self.host = host
        self.name = name
        self.function = function
        self.path = path

    async def __call__(self, call: dict[str, Any], tool: Any, context: Context) -> Any:
        host = self.host
        try:
            where = placement_of(tool, host.executor, call.get("_tool"))
        except ValueError as exc:
            raise ActivityError("ToolError", str(exc)) from None
        if where is Placement.LOCAL:
            return await _here(self.function, (call, tool, context))
        path = self.path
        if isinstance(path, NotImportable):
            raise ActivityError("NoActivity", str(path))
        key = call.get("_idempotencyKey")
        if not isinstance(key, str):  # a run without a journal: a key of its own
            key = call["_idempotencyKey"] = uuid.uuid4().hex
        trace = host.trace_context
        payload = Payload(path, call, tool, context.to_json() if context.messages else None,
                          key if at_most_once_schema(tool) else None,
                          dict(trace()) if trace is not None else {})
        return _given(await host.submit(payload, self.name))


async def _here(function: Activity, args: tuple[Any, ...]) -> Any:
    """Run an activity in the client, as the asyncio interpreter does: ``async`` on the
    loop, plain in a worker thread."""
    if is_async(function):
        return await function(*args)
    value, failed = await asyncio.to_thread(in_thread, function, args)
    if failed is not None:
        raise failed
    return value


def _given(outcome: Outcome | Stop) -> Any:
    """What an activity gives for the outcome a worker made: a value, a Branch, or the
    ActivityError that becomes the same outcome again; a Stop raises what stops the run."""
    match outcome:
        case Returned(value=value):
            return value
        case Chose(path=path, value=value):
            return Branch(path, value)
        case Raised(type=etype, message=message, data=data):
            raise ActivityError(etype, message, None if data is MISSING else data)
        case Stop(exception=exc):  # (a SystemExit loses its code when pickled: made again)
            raise SystemExit(*exc.args) if type(exc) is SystemExit else exc
    raise TypeError(f"not an outcome: {outcome!r}")  # pragma: no cover
