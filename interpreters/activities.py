"""Activities: what users register, and the one place their results become outcomes.

An activity is a plain or async callable ``(call, tool, context)``: the resolved call
(meta-properties included), the tool schema (plain JSON, or None without a tool
registry) and the scoped, read-only context. It returns a value (written to the first
alternative), a :class:`Branch` (written to the alternative it names), or raises (an
:class:`ActivityError` sets the error's type, message and data).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeAlias, runtime_checkable

from attrs import frozen

from obelisk.core.context import Context
from obelisk.core.errors import ActivityError
from obelisk.core.values import MISSING
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.lingering import Done, threaded
from obelisk.interpreters.outcomes import Chose, Outcome, Raised, Returned, returned


@frozen
class Branch:
    """An activity's explicit choice: write ``value`` to the alternative ``path`` names."""

    path: str
    value: Any = None


class Activity(Protocol):
    """The signature of an activity (and of a latent executor or a mock function)."""

    def __call__(self, call: dict[str, Any], tool: Any, context: Context) -> Any: ...


#: Activities by name, as the interpreters take them.
Activities: TypeAlias = Mapping[str, "Activity"]


@runtime_checkable
class Resident(Protocol):
    """An activity bound to this process (an MCP tool's: its session lives here): an
    :class:`Offload` leaves it here, whatever its tool's placement says."""

    resident: bool


class Offload(Protocol):
    """Where a run's activities run when not in this process (``obelisk.dask``'s
    ``DaskInterpreter``): ``wrap`` gives each activity as one that sends its calls there,
    and the run's one loop awaits them as it awaits any ``async`` activity."""

    def wrap(self, activities: Mapping[str, Activity]) -> Mapping[str, Activity]: ...


def outcome_of_value(value: Any) -> Outcome:
    """A returned value as an outcome: a Branch is a choice, anything else a result.

    A coroutine returned and not awaited (not JSON, so the call fails) is closed, so that
    Python does not warn that it was never awaited.
    """
    if isinstance(value, Branch):
        return Chose(value.path, value.value)
    if inspect.iscoroutine(value):
        value.close()
    return returned(value=value)


#: What every interpreter counts as an activity's failure, an outcome (docs/semantics.md §9):
#: every ``Exception`` (``StopIteration`` included) and ``GeneratorExit``. Other
#: ``BaseException``s (``KeyboardInterrupt``, ``SystemExit``...) stop the run.
OUTCOMES: tuple[type[BaseException], ...] = (Exception, GeneratorExit)

#: What the sync loop counts as an activity's failure: :data:`OUTCOMES`, and a
#: ``CancelledError`` an async activity raises itself.
FAILURES: tuple[type[BaseException], ...] = (*OUTCOMES, asyncio.CancelledError)


def outcome_of_exception(exc: BaseException) -> Outcome:
    """A raised exception as an outcome (an ActivityError keeps its type and data).

    Never raises itself: an exception whose ``str()`` fails is described by its class.
    A ``StopIteration`` that Python turned into ``RuntimeError`` because it left a
    coroutine is reported as the ``StopIteration`` the activity raised, as when a plain
    activity raises it.
    """
    cause = exc.__cause__
    if (isinstance(exc, RuntimeError) and isinstance(cause, (StopIteration, StopAsyncIteration))
            and str(exc).endswith(f"raised {type(cause).__name__}")):
        exc = cause
    name = type(exc).__name__
    if isinstance(exc, ActivityError):
        etype = _text(exc.type, name)
        return Raised(etype, _text(exc.message, etype), MISSING if exc.data is None else exc.data)
    return Raised(name, _text(exc, name))


def _text(value: Any, fallback: str) -> str:
    if value is None:
        return fallback
    if isinstance(value, str):
        return value or fallback
    try:
        return str(value) or fallback
    except Exception:  # noqa: BLE001 - a broken __str__ must not crash the run
        return fallback


def latent_outcome(invocation: Invocation) -> Outcome | None:
    """A latent call's own ``_output`` as its result, or None when it has none."""
    if "_output" in invocation.call:
        return Returned(invocation.call["_output"])
    return None


def arguments(invocation: Invocation) -> tuple[dict[str, Any], Any, Context]:
    """The three arguments an activity receives, fresh for each invocation.

    The call is a copy of the invocation's own (:meth:`Invocation.for_activity`): what the
    activity changes in it, nobody else sees.
    """
    tool = invocation.tool.to_json() if invocation.tool is not None else None
    return invocation.for_activity(), tool, invocation.context


def is_async(fn: Callable[..., Any]) -> bool:
    """True for ``async def`` functions (and callables whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None))  # noqa: B004 - an object whose __call__ is async


def call_sync(fn: Callable[..., Any], invocation: Invocation,
              wait: Callable[[Any], Any]) -> Outcome:
    """Call an activity (or a function mock) for the sync loop; ``wait`` finishes an
    awaitable result. Whatever it returns or raises becomes an outcome."""
    return outcome_of_call(fn, arguments(invocation), wait)


def outcome_of_call(fn: Callable[..., Any], args: tuple[Any, ...],
                    wait: Callable[[Any], Any]) -> Outcome:
    """Call an activity with its three arguments, one call at a time (the sync loop, a Dask
    worker); ``wait`` finishes an awaitable result. Whatever it returns or raises becomes
    an outcome."""
    try:
        return outcome_of_value(wait(fn(*args)))
    except FAILURES as exc:  # an activity's failure is an outcome, never a crash
        return outcome_of_exception(exc)


async def call_async(fn: Callable[..., Any], invocation: Invocation, *,
                     asynchronous: bool | None = None) -> Outcome:
    """Call an activity (or a function mock) for the asyncio loop: ``async`` ones on the
    loop, plain ones in a worker thread so they cannot block it (``asynchronous``:
    :func:`is_async` of ``fn``, when the caller knows it).

    A ``CancelledError`` is not caught here: the loop tells a cancelled run from an
    activity that raised it itself.
    """
    try:
        if is_async(fn) if asynchronous is None else asynchronous:
            value = await fn(*arguments(invocation))
        else:
            value, failed = await threaded(invocation.node, in_thread, fn,
                                           arguments(invocation))
            if failed is not None:
                return outcome_of_exception(failed)
        if type(value) in _PLAIN:  # the common results need none of the checks below
            return returned(value=value)
        return await _outcome_of(value)
    except OUTCOMES as exc:  # an activity's failure is an outcome, never a crash
        return outcome_of_exception(exc)


async def outcome_of_thread(done: Done) -> Outcome:
    """What a plain activity's thread gave (its value, or the exception it raised) as an
    outcome: a run being cancelled keeps those that finish (:mod:`.lingering`)."""
    value, failed = done
    if failed is not None:
        return outcome_of_exception(failed)
    try:
        return await _outcome_of(value)
    except OUTCOMES as exc:
        return outcome_of_exception(exc)


async def _outcome_of(value: Any) -> Outcome:
    if type(value) in _PLAIN:  # the common results need none of the checks below
        return returned(value=value)
    if inspect.isawaitable(value):
        value = await value
    return outcome_of_value(value)



#: Result types that are neither a Branch nor awaitable (exact types).
_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})


def in_thread(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, BaseException | None]:
    """Call a plain activity in a worker thread (``asyncio.to_thread(in_thread, fn,
    args)``): its value, or the failure it raised, handed back as a value."""
    # An asyncio future cannot carry a StopIteration (the run would wait forever). Other
    # BaseExceptions (KeyboardInterrupt, SystemExit) still travel as exceptions.
    try:
        return fn(*args), None
    except OUTCOMES as exc:
        return None, exc

