"""Activities and plans for the durable-run tests. Not a test module.

Every invocation appends its idempotency key to the file named by ``OBELISK_TEST_COUNTS``
(before doing anything else), so a test counts invocations across processes. With
``OBELISK_TEST_KILL_AT=N:PHASE`` the N-th invocation in this process kills the process with
SIGKILL, ``before`` its work or ``after`` it (its result then never reaches the journal).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from obelisk import ActivityError, Context

_invoked = 0


def _count(call: dict[str, Any]) -> int:
    global _invoked
    path = os.environ.get("OBELISK_TEST_COUNTS")
    if path:
        # One O_APPEND write per line: whole lines, even when the process is killed.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{call.get('_idempotencyKey', '-')}\n".encode())
        finally:
            os.close(fd)
    _invoked += 1
    return _invoked


def _maybe_die(number: int, phase: str) -> None:
    spec = os.environ.get("OBELISK_TEST_KILL_AT", "")
    if spec:
        at, _, when = spec.partition(":")
        if int(at) == number and when == phase:
            os.kill(os.getpid(), signal.SIGKILL)


def work(call: dict[str, Any], tool: Any, context: Context) -> Any:
    """Add ``i`` to the previous step's ``n``; fail (an error branch) when ``i % 13 == 5``;
    takes ``OBELISK_TEST_DELAY`` seconds (default 1 ms)."""
    number = _count(call)  # this invocation's number in this process
    _maybe_die(number, "before")
    time.sleep(float(os.environ.get("OBELISK_TEST_DELAY", "0.001")))
    i = call["i"]
    result = {"n": call.get("prev", {"n": 0})["n"] + i}
    _maybe_die(number, "after")
    if i % 13 == 5:
        raise ActivityError("Flaky", f"step {i} failed", {"i": i})
    return result


ACTIVITIES = {"work": work, "charge": work}

WORK = {"type": "object", "properties": {
    "_tool": {"type": "string", "const": "work"}, "i": {"type": "integer"},
    "prev": {"type": "object"}}, "required": ["i"]}
#: The same tool, marked at-most-once.
CHARGE = {"type": "object", "x-obelisk-at-most-once": True, "properties": {
    **WORK["properties"], "_tool": {"type": "string", "const": "charge"}}, "required": ["i"]}


def plan(chains: int = 20, length: int = 10, tool: str = "work") -> list[dict[str, Any]]:
    """``chains`` independent chains of ``length`` steps; step k reads step k-1's result;
    a failing step writes its error to ``†e`` and its chain's later steps are skipped."""
    calls: list[dict[str, Any]] = []
    for c in range(chains):
        for k in range(length):
            i = c * length + k
            call: dict[str, Any] = {"_tool": tool, "i": i,
                                    "_outputPath": f"†s.c{c}k{k} || †e.c{c}k{k}"}
            if k:
                call["prev"] = f"†s.c{c}k{k - 1}"
            calls.append(call)
    return calls


def plan_file(chains: int = 20, length: int = 10, tool: str = "work") -> dict[str, Any]:
    """A plan file holding :func:`plan` and its tools."""
    return {"plan": plan(chains, length, tool), "tools": [WORK, CHARGE], "context": []}


def untimed(data: str | None) -> object:
    """A row's data without the times the journal records (``t``, ``started``, a
    solution's ``asked`` and ``answered``): what two runs of the same events have in
    common."""
    import json

    if not data or not data.startswith("{"):
        return data
    found = json.loads(data)
    return {k: v for k, v in found.items() if k not in ("t", "started", "asked", "answered")}
