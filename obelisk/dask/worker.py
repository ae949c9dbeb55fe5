"""What runs in a Dask worker: one call of an activity, given its :class:`Payload`.

The worker imports the activity by its path, rebuilds the scoped context the call may see,
claims an at-most-once call's key (:mod:`obelisk.dask.guard`) and calls the activity as
the sync interpreter does (an ``async`` activity on the worker thread's own event loop).
What it returns is the call's outcome, made by the same functions as every interpreter's
(``outcome_of_value``, ``outcome_of_exception``); an activity that raises
``KeyboardInterrupt`` or ``SystemExit`` returns a :class:`Stop`, and the run stops in the
client as it would under asyncio.

This module imports no Dask client code and nothing of the journal: a worker loads only
what a call needs.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import types
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from obelisk.core.context import Context
from obelisk.dask.guard import claimed
from obelisk.dask.paths import ActivityPath, load_activity
from obelisk.interpreters.activities import outcome_of_call
from obelisk.interpreters.calls import NO_CONTEXT
from obelisk.interpreters.outcomes import Outcome, Raised

__all__ = ["Payload", "Stop", "interrupted", "run_call", "trace_context"]

_NO_TRACE: Mapping[str, str] = types.MappingProxyType({})
_TRACE: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "obelisk_dask_trace", default=_NO_TRACE)


@frozen
class Payload:
    """What goes to a worker for one call: the activity's path, the resolved call (with
    its ``_idempotencyKey``), the tool's schema, the messages of the scoped context (None:
    the call has no ``_scopes`` and sees an empty context), the key to claim for an
    at-most-once call (None: any other), and the run's trace context (W3C trace-context
    headers, such as ``traceparent``)."""

    activity: ActivityPath
    call: dict[str, Any] = field(eq=False)
    tool: dict[str, Any] | None
    context: list[Any] | None
    once: str | None
    trace: Mapping[str, str] = _NO_TRACE


@frozen
class Stop:
    """The activity raised ``KeyboardInterrupt``, ``SystemExit`` or another
    ``BaseException`` that is no call's failure: the client stops the run with it."""

    exception: BaseException


def trace_context() -> Mapping[str, str]:
    """The trace context of the call this thread runs (W3C trace-context headers, such as
    ``traceparent``): what the run's ``trace_context`` gave in the client, so a worker's
    spans can join the run's trace. Empty outside a call, or when the run gave none."""
    return _TRACE.get()


def run_call(payload: Payload) -> Outcome | Stop:
    """Run one call in this worker: its outcome (or the :class:`Stop` that ends the run)."""
    if payload.once is not None and not claimed(payload.once):
        return interrupted(payload.once)
    try:
        function = load_activity(payload.activity)
    except Exception as exc:  # noqa: BLE001 - an import that fails is the call's failure
        return Raised("NoActivity", f"a Dask worker cannot import the activity "
                      f"{payload.activity} ({type(exc).__name__}: {exc}): install its module "
                      "on every worker, or put its folder on their PYTHONPATH")
    context = NO_CONTEXT if payload.context is None else Context.of(payload.context)
    token = _TRACE.set(payload.trace)
    try:
        return outcome_of_call(function, (payload.call, payload.tool, context), _wait)
    except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt, SystemExit: stop the run
        return Stop(exc)
    finally:
        _TRACE.reset(token)


def interrupted(key: str) -> Raised:
    """The outcome of an at-most-once call that a worker began and did not finish: not run
    again (see :mod:`obelisk.dask.guard`)."""
    return Raised("Interrupted", "a Dask worker died while this call ran, and its tool is "
                  "at-most-once (x-obelisk-at-most-once), so it is not run again; check "
                  f"whether it took effect with its idempotency key {key!r}",
                  {"idempotencyKey": key})


_LOOPS = threading.local()


def _wait(value: Any) -> Any:
    """An ``async`` activity's result, finished on this thread's own event loop (made once
    per worker thread, as the sync interpreter makes one per run)."""
    if not inspect.isawaitable(value):
        return value
    loop = getattr(_LOOPS, "loop", None)
    if loop is None:
        loop = _LOOPS.loop = asyncio.new_event_loop()
    return loop.run_until_complete(_awaited(value))


async def _awaited(value: Any) -> Any:
    return await value
