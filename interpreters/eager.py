"""Starting a call eagerly: its coroutine's first step runs at once, as a task's would.

A call started this way runs in a copy of the ``contextvars`` context, as a task of its
own would run it (as ``asyncio.eager_task_factory`` starts tasks in Python 3.12). A call
that finishes in that first step (the common activity that computes and returns) needs
no task at all; one that waits goes on as a :class:`Resumed`: awaited by the loop itself
(a call that runs alone, as along a chain: no task and no hand-off), or the coroutine of
a task of its own.
"""

from __future__ import annotations

import collections.abc
import contextvars
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["Resumed", "start_eagerly"]


def start_eagerly(coro: Coroutine[Any, Any, T], node: int) -> T | Resumed[T]:
    """Run ``coro``, the call of node ``node``, to its first wait now, in a copy of the
    context: its value when it finished there, else the rest of it."""
    context = contextvars.copy_context()
    try:
        waited = context.run(coro.send, None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    return Resumed(coro, context, waited, node)


class Resumed(collections.abc.Coroutine, Generic[T]):  # type: ignore[type-arg]
    """The rest of a call whose first step :func:`start_eagerly` ran.

    Its first step yields what the call's first step yielded (the future the call waits
    on, so whoever awaits it waits on that future and a cancel reaches it); each later
    step runs the call's coroutine in its copy of the context, so the context variables
    it sets are seen neither by the loop nor by other calls. Futures, cancellation and
    exceptions pass through unchanged, as with ``await``; a cancel that comes before the
    first step is thrown into the call where it waits. Awaited, it gives the call's
    value; as a task's coroutine with :attr:`done` set, it hands the value to ``done``.
    """

    __slots__ = ("coro", "context", "pending", "node", "done")

    def __init__(self, coro: Coroutine[Any, Any, T], context: contextvars.Context,
                 waited: Any, node: int) -> None:
        self.coro = coro
        self.context = context
        self.pending: tuple[Any] | None = (waited,)  # the first step's yield, not yet given
        self.node = node
        #: Where the call's value goes when this runs as a task's coroutine (None: it is
        #: awaited, and its value is the value of ``await``).
        self.done: Callable[[T], None] | None = None

    @property
    def __name__(self) -> str:  # what asyncio shows for the task's coroutine
        return f"obelisk call {self.node}"

    def send(self, value: Any) -> Any:
        pending = self.pending
        if pending is not None:
            self.pending = None
            return pending[0]
        return self._step(self.coro.send, value)

    def __next__(self) -> Any:  # a task sends None as next()
        return self.send(None)

    def throw(self, typ: Any, value: Any = None, traceback: Any = None) -> Any:
        self.pending = None
        exc = typ if isinstance(typ, BaseException) else (
            typ(value) if value is None or not isinstance(value, BaseException) else value)
        return self._step(self.coro.throw, exc)

    def close(self) -> None:
        self.pending = None
        self.coro.close()

    def __await__(self) -> Any:
        return self

    def __iter__(self) -> Any:
        return self

    def _step(self, step: Callable[[Any], Any], value: Any) -> Any:
        try:
            return self.context.run(step, value)
        except StopIteration as stop:
            done = self.done
            if done is None:
                raise StopIteration(stop.value) from None  # the value of ``await``
            done(stop.value)
            raise StopIteration from None
