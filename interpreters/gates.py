"""What every loop passes a call through, written once: the approval step before it runs
(the sync, asyncio and streaming loops alike) and the timeout step while it runs (the
asyncio and streaming loops).

The approval step asks the hook with a copy of the call, turns its answer into a verdict, applies it (the machine's
``decide``) and tells whoever follows the run. The timeout step bounds a call: past its
time it ends with a ``Timeout`` failure, routed like any exception.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.events import Decided, RunEvent
from obelisk.interpreters.machine import decide
from obelisk.interpreters.outcomes import Outcome, Raised, Verdict, as_verdict
from obelisk.interpreters.state import RunState

__all__ = ["Approver", "approval", "approval_sync", "decided", "timed_out", "within"]

#: The approval hook: given a copy of a ready call, it answers (or returns an awaitable
#: of the answer): True or None to approve, False or ``Deny`` to deny, a dict or
#: ``Replace`` to replace the call's parameters.
Approver: TypeAlias = Callable[[dict[str, Any]], Any]
#: Told each verdict applied (an observer, or a journal that records it).
Tell: TypeAlias = "Callable[[RunEvent], None] | None"


def decided(state: RunState, invocation: Invocation, verdict: Verdict,
            tell: Tell) -> tuple[RunState, Invocation | None]:
    """Apply ``verdict`` to a ready invocation, then tell it (a ``Decided`` event): the
    state, and the invocation to run (None when the call does not run)."""
    state, next_step = decide(state, invocation, verdict)
    if tell is not None:
        tell(Decided(invocation.node, verdict))
    return state, next_step


async def approval(state: RunState, invocation: Invocation, approve: Approver,
                   tell: Tell) -> tuple[RunState, Invocation | None]:
    """The approval step of the asyncio and streaming loops: ask ``approve`` (awaiting
    its answer when it is awaitable), then :func:`decided`. What the hook raises stops
    the run (the caller's loop cancels what runs and re-raises it)."""
    answer = approve(invocation.fresh_call())
    if inspect.isawaitable(answer):
        answer = await answer
    return decided(state, invocation, as_verdict(answer), tell)


def approval_sync(state: RunState, invocation: Invocation, approve: Approver, tell: Tell,
                  wait: Callable[[Any], Any]) -> tuple[RunState, Invocation | None]:
    """The approval step of the sync loop: :func:`approval`, an awaitable answer finished
    by ``wait`` (the loop's private event loop)."""
    return decided(state, invocation, as_verdict(wait(approve(invocation.fresh_call()))), tell)


def timed_out(timeout: float) -> Raised:
    """The outcome of a call that had no result within ``timeout`` seconds."""
    return Raised("Timeout", f"no result within {timeout:g} s")


async def within(awaitable: Awaitable[Outcome], timeout: float | None) -> Outcome:
    """The timeout step: the call's outcome, or :func:`timed_out` past ``timeout``
    seconds (None: no bound). Cancelling passes through."""
    if timeout is None:
        return await awaitable
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError:
        return timed_out(timeout)
