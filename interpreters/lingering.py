"""Plain activities that outlive a cancel: what finishes while a run is being cancelled.

A plain (non-async) activity runs in a worker thread on asyncio, and a thread cannot be
interrupted: cancelling the run cancels the task that waits for it, not the work. What
that work does (a refund issued, a file written) has happened all the same, so its
outcome must not be dropped: the run keeps it, writes it to the context and tells its
observer (a journal records it), and a resume never runs the call again.

So a run being cancelled waits for the threads of its running calls. :class:`Lingering`
holds them: the run's loop makes one per run and puts it in :data:`LINGERING` (tasks
inherit it); :func:`threaded` runs an activity in a thread and, when it is cancelled,
leaves its thread there until it ends. A run that stops then tells its observer
:class:`~obelisk.interpreters.events.Waiting` and waits for the threads of the calls still
running; a second cancel abandons the waits, and the calls abandoned stay started without
an outcome (cancelled in the result, run again on a resume). A cancel that is not the run
stopping (a call's ``timeout=``) drops the thread's outcome as before: the call has its
``Timeout`` and is no longer running.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

__all__ = ["LINGERING", "Lingering", "threaded"]

#: A thread's result: the activity's value, or the exception it raised (an outcome).
Done = tuple[Any, BaseException | None]


class Lingering:
    """The threads of a run's calls that were running when it began to stop, by node."""

    __slots__ = ("stopping", "threads")

    def __init__(self) -> None:
        self.stopping = False  # set once the run stops: no thread is let go after that
        self.threads: dict[int, asyncio.Future[Done]] = {}

    def keep(self, node: int, thread: asyncio.Future[Done]) -> None:
        """Hold the thread of ``node``'s cancelled activity until it ends (for good, once
        the run is stopping)."""
        self.threads[node] = thread
        thread.add_done_callback(functools.partial(self._ended, node))

    def _ended(self, node: int, thread: asyncio.Future[Done]) -> None:
        if not self.stopping and self.threads.get(node) is thread:
            del self.threads[node]  # a timed-out call's thread: nobody waits for it
        _consumed(thread)

    async def finished(self, nodes: Iterable[int]) -> dict[int, Done]:
        """Wait for the threads of ``nodes`` (those held here); what each returned. A
        cancel meanwhile abandons the waits: the threads not finished are left out."""
        threads = {node: self.threads[node] for node in sorted(nodes) if node in self.threads}
        if threads:
            # Cancelled again: the waits are abandoned, with the calls still running.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(list(threads.values()))
        return {node: thread.result() for node, thread in threads.items()
                if thread.done() and not thread.cancelled() and thread.exception() is None}


#: The run whose calls the current task runs (None outside a run on asyncio).
LINGERING: ContextVar[Lingering | None] = ContextVar("obelisk_lingering", default=None)


async def threaded(node: int, work: Callable[..., Done], *args: Any) -> Done:
    """``work(*args)`` in a worker thread (with the current context, as
    :func:`asyncio.to_thread`); cancelled while its run is stopping, the thread is left
    to the run (see the module docstring) and the cancel goes on."""
    loop = asyncio.get_running_loop()
    thread = loop.run_in_executor(
        None, functools.partial(contextvars.copy_context().run, work, *args))
    try:
        return await asyncio.shield(thread)
    except asyncio.CancelledError:
        lingering = LINGERING.get()
        if lingering is not None:
            lingering.keep(node, thread)
        else:  # nobody waits for it: its result (or failure) is dropped unseen
            thread.add_done_callback(_consumed)
        raise


def _consumed(thread: asyncio.Future[Done]) -> None:
    if not thread.cancelled():
        thread.exception()  # marks a failure as retrieved: no "never retrieved" warning
