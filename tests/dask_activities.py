"""Activities for the Dask interpreter's tests, imported by the workers by path (the tests
put this folder on their PYTHONPATH). Not a test module.

Activities that take ``log`` append one line per execution to that file (``O_APPEND``:
whole lines, even from a process killed right after), so a test counts executions across
worker processes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

from equivalents import perform

from obelisk import ActivityError, Branch, Context
from obelisk.dask import trace_context

#: The behaviour of each tool of the property's current scenario (``install`` sets it in
#: every worker): CONFORMANCE.md mocks, done by ``mocked``.
BEHAVIOURS: dict[str, Any] = {}


def install(behaviours: dict[str, Any]) -> None:
    """Set the scenario's behaviours in this process (``client.run(install, ...)``)."""
    BEHAVIOURS.clear()
    BEHAVIOURS.update(behaviours)


def mocked(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """Do what the installed mock of ``call``'s tool says (its delay, slept)."""
    mock = BEHAVIOURS[call["_tool"]]
    inner = mock.get("by_instance", {}).get(call.get("_instance"), mock)
    delay = mock.get("delay_ms", 0) + inner.get("delay_ms", 0)
    if delay:
        time.sleep(delay / 1000)
    return perform(mock, call, context)


def log(call: dict[str, Any], what: str) -> None:
    """One line in the call's ``log`` file: ``what``, its idempotency key and pid."""
    path = call.get("log")
    if path:
        line = f"{what} {call.get('_idempotencyKey', '-')} {os.getpid()}\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def step(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """Add ``i`` to the previous ``n``; wait ``seconds`` (default none); a step whose ``i``
    is 13 fails (an error branch)."""
    log(call, "start")
    time.sleep(float(call.get("seconds", 0)))
    if call["i"] == 13:
        raise ActivityError("Unlucky", "step 13 fails", {"i": 13})
    return {"n": call.get("prev", {"n": 0})["n"] + call["i"]}


def where(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """The process it ran in, and the call's idempotency key."""
    return {"pid": os.getpid(), "key": call.get("_idempotencyKey")}


def seen(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """What the call was given: its tool's schema and its context."""
    return {"tool": tool, "context": context.to_json()}


async def awaited(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """An ``async`` activity."""
    await asyncio.sleep(0.001)
    return {"async": call.get("x")}


def waits(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """Log its start, then wait until the file ``go`` exists (at most 20 s)."""
    log(call, "start")
    deadline = time.monotonic() + 20
    while not os.path.exists(call["go"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    return {"waited": call["i"]}


def choose(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """A Branch to ``†s.<to>``."""
    return Branch("†s." + call["to"], {"chosen": True})


def big(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """A list of ``n`` numbers."""
    return list(range(call["n"]))


def traced(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """The trace context the call was given."""
    return dict(trace_context())


def exits(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """Asks the process to exit (a BaseException, not a failure)."""
    raise SystemExit(3)


def dies(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """Kills the worker running it, every time."""
    log(call, "start")
    os.kill(os.getpid(), signal.SIGKILL)


class Odd(Exception):
    """An exception that does not pickle (its ``__init__`` takes two arguments)."""

    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"odd {a}/{b}")


def odd(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """Raises an exception that could not travel as one."""
    raise Odd(1, 2)


def cancels(dask_scheduler: Any = None) -> list[int]:
    """Run in the scheduler (its PYTHONPATH holds this folder): how many keys each cancel asked for cancelled."""
    return [event["count"] for _, events in dask_scheduler.get_events().items()
            for _, event in events if isinstance(event, dict) and event.get("action") == "cancel"]


def waiting_keys(dask_scheduler: Any = None) -> list[str]:
    """Run in the scheduler (its PYTHONPATH holds this folder): the keys of the waits tasks it holds."""
    return [str(key) for key in dask_scheduler.tasks if str(key).startswith("waits-")]


ACTIVITIES = {"step": step, "where": where, "seen": seen, "awaited": awaited, "waits": waits,
              "charge": waits, "choose": choose, "traced": traced, "exits": exits,
              "dies": dies, "odd": odd, "big": big}
