"""Ctrl-C and SIGTERM during a run: the command line's own signal handling (the library
installs no signal handler; a command installs these for the length of one run).

The first Ctrl-C (or SIGTERM: what systemd and containers send) stops the run: nothing
more starts, and the activities still running finish and keep their outcomes (reported,
written to the context, recorded in the journal), since the work they do happens all the
same. While it waits the terminal says for what::

    cancelling: waiting for 1 activity still running (refundOrder, 2.3 s); Ctrl-C again to abandon it

A second one abandons the waits: the calls still running are cancelled, and a journal
holds them as started without an outcome (a resume runs them again, or records
``Interrupted`` for an at-most-once tool). The run's report is printed and the exit code
is 130 either way. How a run stops is the interpreters' own rule (a sync run's ``stop``,
an asyncio run's cancellation: :mod:`obelisk.interpreters.lingering`); this module only
turns signals into those requests and tells the person at the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import itertools
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TextIO, TypeVar

from obelisk.cli.safe import inert

__all__ = ["EXIT_INTERRUPTED", "Interrupts"]

#: The exit code of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

SIGNALS = (signal.SIGINT, signal.SIGTERM)

T = TypeVar("T")


class Interrupts:
    """The signals one run receives, what it is waiting for, and how it ended.

    :meth:`wrap` each activity (so the terminal can say which are still running and for
    how long), then run the run through :meth:`sync` or :meth:`run_async`, passing
    :attr:`stop` to a sync run and :meth:`observe` to its observers.
    """

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.count = 0  # signals received
        self.stop = threading.Event()  # a sync run's stop: set by the first signal
        self.running: dict[int, tuple[str, float]] = {}  # activities running, since when
        self._ids = itertools.count()
        self._told = False  # the waiting line was printed
        self.prompting = False  # the run waits for an answer at the terminal
        self._looped = False  # the run is on an event loop (run_async)

    @property
    def interrupted(self) -> bool:
        """True when a signal stopped the run (the exit code is then 130)."""
        return self.count > 0

    def exit_code(self, code: int, out: TextIO) -> int:
        """After the run's report: ``code``, or 130 when a signal stopped the run (said on
        standard error; see :meth:`leave`)."""
        if not self.interrupted:
            return code
        print("interrupted", file=self.err)
        self.leave(out)
        return EXIT_INTERRUPTED

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The activity ``fn``, its runs listed in :attr:`running` while they last."""
        running = self.running
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async_fn(*a: Any) -> Any:
                key = next(self._ids)
                running[key] = (name, time.monotonic())
                try:
                    return await fn(*a)
                finally:
                    del running[key]
            return run_async_fn

        @functools.wraps(fn)
        def run_fn(*a: Any) -> Any:
            key = next(self._ids)  # (atomic: worker threads call it too)
            running[key] = (name, time.monotonic())
            try:
                return fn(*a)
            finally:
                del running[key]
        return run_fn

    def prompt(self, hook: Callable[[Any], Any] | None) -> Callable[[Any], Any] | None:
        """``hook`` (an approval hook that asks at the terminal) made stoppable: a signal
        while it waits for an answer ends the prompt at once and stops the run, which then
        reports as cancelled (on an event loop the prompt blocks the loop, so the signal's
        ``KeyboardInterrupt`` is turned into the run's cancellation where it is raised)."""
        if hook is None:
            return None
        ask = hook

        @functools.wraps(ask)
        def asking(call: Any) -> Any:
            self.prompting = True
            try:
                return ask(call)
            except KeyboardInterrupt:
                if self._looped and self.stop.is_set():
                    raise asyncio.CancelledError from None
                raise
            finally:
                self.prompting = False
        return asking

    def observe(self, event: Any) -> None:
        """A run event: a cancelled asyncio run that waits for plain activities says so
        (its ``Waiting`` notice; known by name, as the display knows events)."""
        if type(event).__name__ == "Waiting":
            self.tell_waiting()

    def tell_waiting(self) -> None:
        """Print what the run waits for (once), when anything still runs and the run has
        not been abandoned."""
        line = waiting_line(list(self.running.values()), time.monotonic())
        if line is not None and not self._told and self.count == 1:
            self._told = True
            print(line, file=self.err, flush=True)

    @contextlib.contextmanager
    def sync(self) -> Iterator[None]:
        """Handle the signals while a sync run runs (pass it :attr:`stop`): the first sets
        ``stop`` (raising ``KeyboardInterrupt`` when no activity runs, to end a wait such
        as the approval prompt at once), the second raises ``KeyboardInterrupt`` in the
        activity, which abandons it."""
        def handle(signum: int, frame: Any) -> None:
            self.count += 1
            self.stop.set()
            if self.count == 1 and self.running:
                self.tell_waiting()
                return
            raise KeyboardInterrupt

        previous = _install(handle)
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    def run_async(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run ``make()`` on a new event loop, the first signal cancelling it (the run
        stops) and the second cancelling it again (it abandons what it waits for), or,
        when no activity runs (the loop is blocked at an approval prompt, say), raising
        ``KeyboardInterrupt`` where it is, as ``asyncio.run`` does. The loop does not
        wait for the worker threads of abandoned activities when it closes."""
        loop = asyncio.new_event_loop()
        task = loop.create_task(_awaited(make))
        self._looped = True

        def handle(signum: int, frame: Any) -> None:
            self.count += 1
            self.stop.set()
            if self.prompting or (self.count > 1 and not self.running):
                raise KeyboardInterrupt  # ends the prompt (see prompt) or the loop
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wake the loop if it waits in select
            if self.count == 1:  # what still runs once the cancel has reached it
                loop.call_soon_threadsafe(loop.call_later, 0.2, self.tell_waiting)

        previous = _install(handle)
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:  # stopped before the run could return its result
            raise KeyboardInterrupt from None
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
            with contextlib.suppress(BaseException):
                task.cancel()
                loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def leave(self, out: TextIO) -> None:
        """After the report: when activities were abandoned still running in worker
        threads, end the process now (exit 130) instead of waiting for them at exit."""
        if self.count >= 2 and self.running:
            for stream in (out, self.err):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(EXIT_INTERRUPTED)


def _install(handle: Callable[[int, Any], None]) -> dict[int, Any]:
    """``handle`` for each of :data:`SIGNALS`; the handlers it replaced (none outside the
    main thread, where Python takes no signal handler: ``main`` run from a thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, handle) for sig in SIGNALS}


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


def waiting_line(running: list[tuple[str, float]], now: float) -> str | None:
    """``cancelling: waiting for 1 activity still running (refundOrder, 2.3 s); Ctrl-C
    again to abandon it`` (None when nothing runs)."""
    if not running:
        return None
    shown = "; ".join(f"{inert(name)}, {now - since:.1f} s" for name, since in running)
    one = len(running) == 1
    return (f"cancelling: waiting for {len(running)} "
            f"{'activity' if one else 'activities'} still running ({shown}); "
            f"Ctrl-C again to abandon {'it' if one else 'them'}")
