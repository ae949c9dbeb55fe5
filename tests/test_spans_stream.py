"""A streamed call's activity runs inside its ``execute_tool`` span (issue 30, G4): a span
the activity opens is a child of its call's span, in a thread (a plain activity) or on the
loop (an async one), as in a whole tick."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry import trace
from test_spans import Telemetry, otel  # noqa: F401 - the fixture

import obelisk
from obelisk.llm.scripted import ScriptedLLM

STEP = {"type": "object", "properties": {"_tool": {"const": "step"}, "x": {}}}


def plain(call: dict[str, Any], *_: Any) -> Any:
    with trace.get_tracer("activity").start_as_current_span(f"inner {call['x']}"):
        return call["x"]


async def awaited(call: dict[str, Any], *_: Any) -> Any:
    await asyncio.sleep(0)
    return plain(call)


def chain(otel: Telemetry, name: str) -> list[str]:  # noqa: F811 - the fixture
    """The names from span ``name`` up to its root."""
    spans = {s.context.span_id: s for s in otel.spans()}
    [found] = [s for s in spans.values() if s.name == name]
    names = [found.name]
    while found.parent is not None:
        found = spans[found.parent.span_id]
        names.append(found.name)
    return names


@pytest.mark.parametrize("activity", [plain, awaited], ids=["thread", "asyncio"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_span_the_activity_opens_is_a_child_of_its_calls_span(
        otel: Telemetry, activity: Any, stream: bool) -> None:  # noqa: F811
    calls = [{"_tool": "step", "x": n, "_outputPath": f"†state.v{n}"} for n in range(2)]
    llm = ScriptedLLM([{"calls": calls, "output": "†state.v1"}],
                      delays=0.01 if stream else None)
    result = obelisk.run_agent_sync([{"type": "task", "text": "go"}], llm, tools=[STEP],
                                    activities={"step": activity}, stream=stream)
    assert result.status == "completed"
    for n in range(2):
        assert chain(otel, f"inner {n}") == [f"inner {n}", "execute_tool step",
                                             "invoke_agent obelisk"]
    inner = {s.name: s for s in otel.named("inner")}
    tools = {s.attributes["obelisk.call"]: s for s in otel.named("execute_tool")}  # type: ignore[index]
    assert inner["inner 1"].parent.span_id == tools[1].context.span_id  # type: ignore[union-attr]
