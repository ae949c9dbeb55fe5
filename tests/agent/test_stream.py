"""Streaming a tick (obelisk/agent/stream.py): calls start while the solution is still
arriving, readers wait for writers seen later, late writers and invalid solutions are
reported, and a property that a streamed run equals the same plan run whole."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.agent import AgentError, AgentResult, AgentStatus, run_agent_sync
from obelisk.agent.hooks import CallStarted
from obelisk.core.plain import thaw
from obelisk.llm import ScriptedLLM, StreamedCall
from obelisk.llm.streaming import SolutionParser

DATE = "2026-11-23T00:00:00Z"
STEP = {"type": "object", "properties": {"_tool": {"const": "step"},
                                         "x": {}, "_output": {}}}


async def step(call: dict[str, Any], tool: Any, context: Any) -> Any:
    await asyncio.sleep(0)
    return {"got": call.get("x")}


def agent(solutions: Any, *, stream: bool = True, delays: Any = 0.0,
          **kw: Any) -> AgentResult:
    kw.setdefault("activities", {"step": step})
    return run_agent_sync([{"type": "state", "state": {"seed": 1}}],
                          ScriptedLLM(solutions, delays=delays), tools=[STEP],
                          clock=lambda: DATE, stream=stream, **kw)


def errors(result: AgentResult) -> list[dict[str, Any]]:
    return [thaw(m)["data"]["error"] for m in result.context.messages
            if m.get("type") == "error"]


def write(n: int, x: Any = 0) -> dict[str, Any]:
    return {"_tool": "step", "x": x, "_outputPath": f"†state.v{n}"}


def test_calls_start_while_the_solution_is_still_arriving() -> None:
    seen: list[Any] = []
    solution = {"calls": [write(0), write(1), write(2)], "output": "†state.v2.got"}
    result = agent([solution], delays=0.01, observer=seen.append)
    assert result.status is AgentStatus.COMPLETED and result.output == 0
    started = [e for e in seen if isinstance(e, CallStarted)]
    assert [(e.call, e.seen, e.open) for e in started][:1] == [(0, 1, True)]


def test_a_reader_that_arrives_before_its_writer_waits_for_it() -> None:
    solution = {"calls": [write(1, "†state.v0.got"), write(0, 7)], "output": "†state.v1.got"}
    result = agent([solution])
    assert result.output == 7 and errors(result) == []


def test_a_streamed_tick_records_the_plan_message_as_a_whole_tick_does() -> None:
    solution = {"calls": [write(0, 1), write(1, "†state.v0.got")], "output": "†state.v1"}
    streamed, whole = agent([solution]), agent([solution], stream=False)
    assert streamed.context == whole.context and streamed.output == whole.output


def test_a_call_arriving_after_its_reader_started_is_a_late_writer() -> None:
    solution = {"calls": [write(0, "†state.seed"), {"_tool": "step", "x": 2,
                                                     "_outputPath": "†state.seed"}],
                "output": "†state.v0.got"}
    result = agent([solution], delays=0.01)
    late = [e for e in errors(result) if e["type"] == "late-writer"]
    assert late and late[0]["data"] == {"writer": 1, "reader": 0}


def test_a_value_nothing_writes_makes_its_parked_reader_invalid_when_the_stream_closes() -> None:
    # §9 "Streaming is the same run": what the whole plan gives it (Invalid, dangling).
    solution = {"calls": [write(0, "†state.never")], "output": None}
    result = agent([solution, {"calls": [], "output": 1}])
    whole = agent([solution, {"calls": [], "output": 1}], stream=False)
    assert [e["type"] for e in errors(result)] == ["Invalid"]
    assert result.context == whole.context
    assert errors(result)[0]["data"]["diagnostics"][0]["code"] == "dangling-reference"


def test_an_invalid_solution_adds_one_error_and_keeps_what_ran() -> None:
    solution = {"calls": [write(0), {"_tool": "nope"}, 5], "output": None}
    result = agent([solution, {"calls": [], "output": "†state.v0.got"}])
    assert result.output == 0
    types = [e["type"] for e in errors(result)]
    assert types.count("InvalidSolution") == 1 and "Invalid" in types


def test_a_streamed_call_of_an_unknown_tool_is_invalid_under_its_own_index() -> None:
    solution = {"calls": [write(0), write(1, 1), {"_tool": "stpe", "x": 1}], "output": None}
    result = agent([solution, {"calls": [], "output": "†state.v1.got"}])
    whole = agent([solution, {"calls": [], "output": "†state.v1.got"}], stream=False)
    assert result.output == 1 and result.context == whole.context
    (invalid,) = [thaw(m)["data"] for m in result.context.messages if m.get("type") == "error"]
    assert invalid["call"] == {"_tool": "stpe", "x": 1}
    assert "did you mean 'step'?" in invalid["error"]["message"]


def test_an_adapter_that_cannot_stream_is_an_agent_error() -> None:
    class Whole(ScriptedLLM):
        def stream(self, request: Any) -> Any:
            raise NotImplementedError

    with pytest.raises(AgentError, match="cannot stream"):
        run_agent_sync([], Whole([{"calls": [], "output": 1}]), stream=True)


# -- the property: streamed equals whole, for plans whose writers come first -------------


@st.composite
def plans(draw: st.DrawFn) -> list[dict[str, Any]]:
    calls = []
    for n in range(draw(st.integers(1, 6))):
        reads = draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=2)) if n else []
        x: Any = [f"†state.v{r}.got" for r in reads] if reads else n
        calls.append(write(n, x))
    return calls


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(plans(), st.lists(st.sampled_from([0.0, 0.001, 0.003]), min_size=1, max_size=6),
       st.lists(st.sampled_from([0.0, 0.001, 0.002]), min_size=6, max_size=6))
def test_a_streamed_run_equals_the_plan_run_whole(
        calls: list[dict[str, Any]], delays: list[float], pauses: list[float]) -> None:
    async def slow(call: dict[str, Any], tool: Any, context: Any) -> Any:
        await asyncio.sleep(pauses[int(call["_outputPath"][len("†state.v"):])])
        return {"got": call.get("x")}

    solution = {"calls": calls, "output": None}
    done = {"calls": [], "output": 1}
    streamed = agent([solution, done], delays=delays, activities={"step": slow})
    whole = agent([solution, done], stream=False, activities={"step": slow})
    assert streamed.context.value("state") == whole.context.value("state")
    assert errors(streamed) == errors(whole) == []


class ChunkedLLM(ScriptedLLM):
    """A scripted adapter that streams each solution as JSON text cut at random places
    (``cuts``), parsed back by the provider adapters' incremental parser, with a pause
    (``pause`` seconds) after every piece."""

    def __init__(self, solutions: Any, cuts: list[int], pause: float) -> None:
        super().__init__(solutions)
        self.cuts, self.pause = cuts, pause

    async def stream(self, request: Any) -> Any:
        reply = await self.solve(request)
        text = json.dumps(reply.value, ensure_ascii=False)
        parser, start, turn = SolutionParser("test"), 0, 0
        while start < len(text):
            size = self.cuts[turn % len(self.cuts)]
            turn += 1
            for call in parser.feed(text[start:start + size]):
                yield StreamedCall(call)
            start += size
            await asyncio.sleep(self.pause)
        yield parser.end(reply.usage)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(plans(), st.lists(st.integers(1, 60), min_size=1, max_size=8),
       st.sampled_from([0.0, 0.0005]),
       st.lists(st.sampled_from([0.0, 0.001, 0.002]), min_size=6, max_size=6))
def test_a_run_streamed_in_random_chunks_equals_the_plan_run_whole(
        calls: list[dict[str, Any]], cuts: list[int], pause: float,
        pauses: list[float]) -> None:
    async def slow(call: dict[str, Any], tool: Any, context: Any) -> Any:
        await asyncio.sleep(pauses[int(call["_outputPath"][len("†state.v"):])])
        return {"got": call.get("x")}

    solutions = [{"calls": calls, "output": None}, {"calls": [], "output": 1}]
    context = [{"type": "state", "state": {"seed": 1}}]
    streamed = run_agent_sync(context, ChunkedLLM(solutions, cuts, pause), tools=[STEP],
                              activities={"step": slow}, clock=lambda: DATE, stream=True)
    whole = agent(solutions, stream=False, activities={"step": slow})
    assert streamed.context.value("state") == whole.context.value("state")
    assert errors(streamed) == errors(whole) == []


def test_a_streamed_call_past_the_timeout_fails_with_timeout() -> None:
    async def stuck(call: dict[str, Any], tool: Any, context: Any) -> Any:
        await asyncio.sleep(30)

    solution = {"calls": [write(0)], "output": None}
    result = agent([solution, {"calls": [], "output": 1}], activities={"step": stuck},
                   timeout=0.01)
    assert [e["type"] for e in errors(result)] == ["Timeout"]


def test_the_streamed_approval_hook_keeps_what_it_was_shown() -> None:
    # The hook has a deep copy of its own (a shallow one would share the nested list the
    # activity changes).
    shown: list[dict[str, Any]] = []

    def approve(call: dict[str, Any]) -> bool:
        shown.append(call)
        return True

    async def meddle(call: dict[str, Any], tool: Any, context: Any) -> Any:
        await asyncio.sleep(0)
        call["x"]["deep"].append("changed")
        return 1

    result = agent([{"calls": [write(0, {"deep": [1]})], "output": "†state.v0"}],
                   activities={"step": meddle}, approve=approve)
    assert result.status is AgentStatus.COMPLETED
    assert shown == [write(0, {"deep": [1]})]
