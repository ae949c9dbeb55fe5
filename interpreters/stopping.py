"""An asyncio run being cancelled: what it does with what still runs. The asyncio
interpreter (:mod:`obelisk.interpreters.aio`) and the agent's streamed tick
(:mod:`obelisk.agent.stream`) both stop this way, so a cancelled run keeps what finished
however it was run.

:func:`stop_tasks` marks the run as stopping, cancels its tasks and waits until every one
has ended (a cancel meanwhile does not cut that wait short: no task outlives the run).
:func:`kept` then waits for the plain activities of the calls still running, whose worker
threads cannot be interrupted and are held by the run's
:class:`~obelisk.interpreters.lingering.Lingering`, telling the observer
:class:`~obelisk.interpreters.events.Waiting`; it returns the outcomes of those that
finished, which the run completes through the machine before ``cancel``. A second cancel
abandons that wait: the calls not finished stay running, and ``cancel`` makes them
cancelled (see :mod:`obelisk.interpreters.lingering`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from obelisk.interpreters.activities import outcome_of_thread
from obelisk.interpreters.events import Status, Waiting
from obelisk.interpreters.lingering import Lingering
from obelisk.interpreters.outcomes import Outcome

__all__ = ["kept", "stop_tasks"]


async def stop_tasks(lingering: Lingering, tasks: Iterable[asyncio.Task[Any]]) -> None:
    """The run stops: ``lingering`` keeps the threads of the calls cancelled from now on,
    every task is cancelled, and this waits until all have ended."""
    lingering.stopping = True
    waiting = list(tasks)
    for task in waiting:
        task.cancel()
    while True:
        try:
            await asyncio.gather(*waiting, return_exceptions=True)
            return
        except asyncio.CancelledError:
            continue  # the gather was cancelled; the tasks were told already, wait again


async def kept(lingering: Lingering, status: Sequence[Status],
               tell: Callable[[Waiting], Any] | None) -> list[tuple[int, Outcome]]:
    """After :func:`stop_tasks`: wait for the threads of the calls still running (by the
    run's ``status``), telling ``tell`` what it waits for; the outcomes of those that
    finished, by node. A call's thread left behind by its own ``timeout=`` is not waited
    for: that call is no longer running."""
    waited = tuple(n for n in sorted(lingering.threads) if status[n] is Status.RUNNING)
    if not waited:
        return []
    if tell is not None:
        tell(Waiting(waited))
    return [(node, await outcome_of_thread(done))
            for node, done in (await lingering.finished(waited)).items()]
