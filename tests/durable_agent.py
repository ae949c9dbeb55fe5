"""An agent run for the durable agent tests (not a test module): a few ticks of tens of
calls answered by a scripted LLM that knows its tick from the request, so a resumed
process answers the same as an uninterrupted one.

Every answer appends its tick to the file named by ``OBELISK_TEST_ANSWERS``; with
``OBELISK_TEST_KILL_ANSWER=N`` the process is killed with SIGKILL right after its N-th
answer (before the loop records it); with ``OBELISK_TEST_KILL_CLOCK=N`` when the clock is
read the N-th time (a call's outcome is about to be recorded). ``python durable_agent.py DB``
runs (or resumes) run ``R`` of journal DB and prints the final context and usage as JSON.

``OBELISK_TEST_AGENT_MODE`` varies the run: ``plain``; ``lazy`` (lazy mode, an ``on_plan``
that edits tick 2's plan, counts its answers in ``OBELISK_TEST_REVIEWS`` and, with
``OBELISK_TEST_KILL_REVIEW=N``, is killed while its N-th answer is pending); ``dry`` (every
tick a dry run on ``sequence`` mocks); ``delegate`` (tick 2 also delegates a call to an
anonymous delegate, which runs a chain of five calls in its own first tick); ``stream``
(each solution streamed, a call every 2 ms). Delegate answers are counted as ``d<tick>``.
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
#: The tool of the delegated call (delegate mode): it lets a call choose the delegate.
SUBTASK_TOOL = {"type": "object", "properties": {
    "_tool": {"const": "subtask"}, "task": {"type": "string"}, "i": {"type": "integer"},
    "_delegate": {"enum": ["anonymous"]}}}
TOOLS = [acts.WORK, acts.CHARGE, SUBTASK_TOOL]
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


#: The delegated call of tick 2 (delegate mode) and the marker its delegate's input shows.
SUBTASK = "sub-task"
DELEGATED = {"_tool": "subtask", "_delegate": "anonymous", "task": SUBTASK, "i": 0,
             "_outputPath": "†s.t2del || †e.t2del"}


def mode() -> str:
    """The run's variant (``OBELISK_TEST_AGENT_MODE``)."""
    return os.environ.get("OBELISK_TEST_AGENT_MODE", "plain")


def _note(variable: str, text: str) -> None:
    path = os.environ.get(variable)
    if path:  # one O_APPEND write per line: whole lines, even when the process is killed
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{text}\n".encode())
        finally:
            os.close(fd)


def is_delegates(text: str) -> bool:
    """Whether a request's text is the delegate's own: it shows the sub-task, but not the
    caller's results (of tick 1)."""
    return SUBTASK in text and '"t1c' not in text


def _delegate_solution(text: str) -> tuple[str, dict[str, Any]]:
    if '"dk' not in text:
        calls = [{"_tool": "work", "i": 1000 + k, "_outputPath": f"†s.dk{k} || †e.dk{k}",
                  **({"prev": f"†s.dk{k - 1}"} if k else {})} for k in range(LENGTH)]
        return "d1", {"calls": calls, "output": None}
    return "d2", {"calls": [], "output": {"n": f"†s.dk{LENGTH - 1}.n"}}


def solution(request: Request) -> dict[str, Any]:
    """The scripted answer for the request's tick, counted in ``OBELISK_TEST_ANSWERS``."""
    global _answered
    text = request.render()
    if is_delegates(text):
        name, answer = _delegate_solution(text)
    elif mode() == "stream" and _unfinished(text):
        # A tick whose stream was cut resumed with the calls that had arrived: like an
        # agent that sees what is missing, plan the rest of its chains again.
        name, answer = "again", {"calls": _unfinished(text), "output": None}
    else:
        tick = tick_of(request)
        name = str(tick)
        if tick > TICKS:  # (a dry run's echo mock returns the call's parameters)
            answer = {"calls": [], "output": {"n": "†s.t1c0k4.i" if mode() == "dry"
                                              else "†s.t1c0k4.n"}}
        else:
            calls = tick_calls(tick)
            if tick == 2 and mode() == "delegate":
                calls.append(dict(DELEGATED))
            answer = {"calls": calls, "output": None}
    _note("OBELISK_TEST_ANSWERS", name)
    _answered += 1
    if os.environ.get("OBELISK_TEST_KILL_ANSWER") == str(_answered):
        os.kill(os.getpid(), signal.SIGKILL)
    return answer


def _unfinished(text: str) -> list[dict[str, Any]]:
    """The rest of each chain of the ticks the request shows that stopped short: from its
    first step without a result whose previous step has a value (a chain that failed
    stops for good)."""
    calls = []
    for tick in range(1, tick_of_text(text)):
        chains: dict[int, list[dict[str, Any]]] = {}
        for call in tick_calls(tick):
            chains.setdefault(call["i"] // LENGTH, []).append(call)
        for steps in chains.values():
            for k, call in enumerate(steps):
                name = call["_outputPath"].split(" ")[0].split(".")[1]
                if f'"{name}"' in text:
                    continue
                prev = steps[k - 1]["_outputPath"].split(" ")[0].split(".")[1] if k else None
                if prev is None or f'"{prev}":{{"n"' in "".join(text.split()):
                    calls.extend(steps[k:])
                break
    return calls


def tick_of_text(text: str) -> int:
    """:func:`tick_of` of a request's text."""
    return 1 + max((t for t in range(1, TICKS + 1) if f'"t{t}c' in text), default=0)


_reviewed = 0


def review(plan: Any) -> Any:
    """Lazy mode's ``on_plan``: tick 2's plan loses its last chain, others run as given."""
    global _reviewed
    calls = [dict(c) for c in plan.calls]
    tick = max(t for t in range(1, TICKS + 1) if f"t{t}c" in json.dumps(calls))
    _reviewed += 1
    if os.environ.get("OBELISK_TEST_KILL_REVIEW") == str(_reviewed):
        os.kill(os.getpid(), signal.SIGKILL)  # the answer was never given
    _note("OBELISK_TEST_REVIEWS", str(tick))
    if tick == 2:
        return [c for c in calls if f"c{CHAINS - 1}k" not in c["_outputPath"]]
    return True


_clocked = 0


def clock() -> str:
    """A fixed date; with ``OBELISK_TEST_KILL_CLOCK=N`` the N-th reading kills the process."""
    global _clocked
    _clocked += 1
    if os.environ.get("OBELISK_TEST_KILL_CLOCK") == str(_clocked):
        os.kill(os.getpid(), signal.SIGKILL)
    return "2026-01-01T00:00:00Z"


def mocks() -> dict[str, Any]:
    """The dry run's mocks: each call returns its parameters (``echo``)."""
    return {"work": {"echo": True}}


def sequence_mocks() -> dict[str, Any]:
    """Mocks whose entries go to the calls in the order they are invoked."""
    return {"work": {"sequence": [{"return": {"n": k}} for k in range(CHAINS * LENGTH)]}}


def options() -> dict[str, Any]:
    """The run's options for the mode."""
    chosen = mode()
    if chosen == "lazy":
        return {"mode": "lazy", "on_plan": review, "activities": acts.ACTIVITIES}
    if chosen == "dry":
        return {"mocks": mocks()}
    if chosen == "stream":
        return {"stream": True, "activities": acts.ACTIVITIES}
    return {"activities": acts.ACTIVITIES}


def run(journal: Journal | None = None) -> Any:
    """The agent run (recorded in ``journal`` as run ``R`` when given)."""
    # Streamed calls arrive slowly, so a kill can fall while the stream is open.
    llm = ScriptedLLM(solution, delays=0.002 if mode() == "stream" else 0.0)
    # A streamed tick cut short takes one more tick to plan the rest again.
    return run_agent_sync(Context.of([]), llm, tools=TOOLS,
                          max_ticks=TICKS + (12 if mode() == "stream" else 2), clock=clock, **options(),
                          **({"journal": journal, "run_id": "R"} if journal else {}))


if __name__ == "__main__":
    with Journal.open(sys.argv[1]) as journal:
        result = run(journal)
    print(json.dumps({"status": result.status.value, "context": result.context.to_json(),
                      "usage": [result.usage.input_tokens, result.usage.output_tokens]}))
