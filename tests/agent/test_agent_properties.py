"""The loop is a shell: for generated solutions, its final context is exactly each tick's
plan dry-run in turn on the context so far, each followed by its plan message."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk import Context, dry_run
from obelisk.agent import AgentStatus, run_agent_sync
from obelisk.core.plain import thaw
from obelisk.llm import ScriptedLLM

TOOL = {"type": "object", "properties": {"_tool": {"const": "t"}, "x": {},
                                         "_output": {"type": "integer"}}}
MOCKS = {"t": {"return": 7}}


@st.composite
def ticks(draw: Any) -> list[list[dict[str, Any]]]:
    written: list[str] = []
    out = []
    for tick in range(draw(st.integers(1, 4))):
        calls = []
        for index in range(draw(st.integers(1, 3))):
            key = f"k{tick}_{index}"
            x: Any = draw(st.sampled_from(written)) if written and draw(st.booleans()) else (
                draw(st.integers(0, 9)))
            calls.append({"_tool": "t", "x": f"†state.{x}" if isinstance(x, str) else x,
                          "_outputPath": f"†state.{key}"})
        written += [c["_outputPath"].removeprefix("†state.") for c in calls]
        out.append(calls)
    return out


@settings(max_examples=30, deadline=None)
@given(ticks())
def test_the_loop_equals_its_ticks_run_as_plain_dry_runs(plans: list[list[dict[str, Any]]]
                                                          ) -> None:
    context = Context.of([{"type": "input", "input": {"task": "go"}}])
    solutions = [{"calls": calls, "output": None} for calls in plans]
    solutions.append({"calls": [], "output": "done"})
    result = run_agent_sync(context, ScriptedLLM(solutions), tools=[TOOL], mocks=MOCKS)
    assert result.status is AgentStatus.COMPLETED

    expected = context
    for calls in plans:
        run = dry_run(calls, expected, tools=[TOOL], mocks=MOCKS)
        outcomes = [{"call": c.call, "instance": c.instance, "outcome": c.outcome}
                    for c in run.calls]
        expected = run.context.append({"type": "plan", "plan": calls, "mode": "eager",
                                       "outcomes": outcomes})
    assert [thaw(m) for m in result.context.messages] == [thaw(m) for m in expected.messages]
