"""An agent run for the durable agent tests (not a test module): a few ticks of tens of
calls answered by a scripted LLM that knows its tick from the request, so a resumed
process answers the same as an uninterrupted one.

Every answer appends its tick to the file named by ``OBELISK_TEST_ANSWERS``; with
``OBELISK_TEST_KILL_ANSWER=N`` the process is killed with SIGKILL right after its N-th
answer (before the loop records it). ``python durable_agent.py DB`` runs (or resumes) run
``R`` of journal DB and prints the final context as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import durable_activities as acts

from obelisk import Context, Journal, ScriptedLLM, run_agent_sync
from obelisk.llm.request import Request

TICKS, CHAINS, LENGTH = 3, 4, 5
TOOLS = [acts.WORK, acts.CHARGE]
_answered = 0


def tick_calls(tick: int) -> list[dict[str, Any]]:
    """Tick ``tick``'s calls: chains of steps writing under ``†s`` / ``†e`` with names that
    carry the tick."""
    calls = []
    for call in acts.plan(CHAINS, LENGTH):
        path = call["_outputPath"].replace("†s.", f"†s.t{tick}").replace("†e.", f"†e.t{tick}")
        out = {**call, "i": call["i"] + 100 * tick, "_outputPath": path}
        if "prev" in call:
            out["prev"] = call["prev"].replace("†s.", f"†s.t{tick}")
        calls.append(out)
    return calls


def tick_of(request: Request) -> int:
    """The tick a request is for: one more than the newest tick whose results (named
    ``t<tick>c...``) the request shows."""
    text = request.render()
    return 1 + max((t for t in range(1, TICKS + 1) if f'"t{t}c' in text), default=0)


def solution(request: Request) -> dict[str, Any]:
    """The scripted answer for the request's tick, counted in ``OBELISK_TEST_ANSWERS``."""
    global _answered
    tick = tick_of(request)
    path = os.environ.get("OBELISK_TEST_ANSWERS")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{tick}\n".encode())
        finally:
            os.close(fd)
    _answered += 1
    if os.environ.get("OBELISK_TEST_KILL_ANSWER") == str(_answered):
        os.kill(os.getpid(), signal.SIGKILL)
    if tick > TICKS:
        return {"calls": [], "output": {"n": "†s.t1c0k4.n"}}
    return {"calls": tick_calls(tick), "output": None}


def run(journal: Journal | None = None) -> Any:
    """The agent run (recorded in ``journal`` as run ``R`` when given)."""
    return run_agent_sync(Context.of([]), ScriptedLLM(solution), tools=TOOLS,
                          activities=acts.ACTIVITIES, max_ticks=TICKS + 2,
                          clock=lambda: "2026-01-01T00:00:00Z",
                          **({"journal": journal, "run_id": "R"} if journal else {}))


if __name__ == "__main__":
    with Journal.open(sys.argv[1]) as journal:
        result = run(journal)
    print(json.dumps({"status": result.status.value, "context": result.context.to_json()}))
