"""Hostile answers and activities in the agent loop (issue 26 items 2, 3, 7, 8, 9, 10, 12, 14, 15).

Every test here failed on the code before its fix:

- a deep answer (505 levels, under the 512-level limit of values; 100,000 levels of text)
  is an ``InvalidSolution`` fed back, never a ``RecursionError``: from ``ScriptedLLM``, a
  script file, and the real ``openai`` SDK against a loopback server, whole and streamed;
- a streamed tick never hangs when an activity raises its own ``CancelledError`` or
  another ``BaseException``; ``timeout=`` ends a hanging one;
- a provider response of the wrong shape is an unusable answer, fed back;
- a stream that breaks after a call ran keeps that call's outcome and writes;
- the API key is masked, and an answer quoted only as a bounded excerpt.
"""

from __future__ import annotations

import asyncio
import io
import json
import pathlib
import sys
from typing import Any

import pytest
from attrs import evolve

from obelisk.agent import AgentResult, AgentStatus, Budgets, run_agent, run_agent_sync
from obelisk.cli import main
from obelisk.core.plain import thaw
from obelisk.llm import AnthropicLLM, OpenAILLM, RetryPolicy, ScriptedLLM

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "llm"))
from servers import (  # noqa: E402
    Answer,
    anthropic_message,
    anthropic_stream,
    openai_completion,
    openai_stream,
    serve,
)

DATE = "2026-11-23T00:00:00Z"
KEY = "sk-test-THIS-IS-A-SECRET-0123456789abcdef"
ECHO = {"type": "object", "properties": {"_tool": {"const": "echo"}, "x": {}, "_output": {}}}
DONE = {"calls": [], "output": 1}


def echo(call: dict[str, Any], tool: Any, context: Any) -> Any:
    return {"got": call.get("x")}


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def deep_solution(depth: int) -> dict[str, Any]:
    return {"calls": [{"_tool": "echo", "x": nested(depth), "_outputPath": "†state.e"}],
            "output": None}


def errors(result: AgentResult) -> list[dict[str, Any]]:
    return [thaw(m)["data"]["error"] for m in result.context.messages
            if m.get("type") == "error"]


def openai(url: str) -> OpenAILLM:
    return OpenAILLM("test-model", api_key=KEY, base_url=url,
                     policy=RetryPolicy(max_attempts=1, timeout=10))


def with_openai(answers: list[Answer], **kw: Any) -> AgentResult:
    with serve(answers) as server:
        return run_agent_sync([], openai(server.base_url), tools=[ECHO],
                              activities={"echo": echo}, clock=lambda: DATE, **kw)


# -- item 2: deep answers ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("depth", [200, 505, 5000])
def test_a_deep_scripted_answer_is_fed_back_not_a_recursion_error(
        depth: int, stream: bool) -> None:
    result = run_agent_sync([], ScriptedLLM([deep_solution(depth), DONE]), tools=[ECHO],
                            activities={"echo": echo}, clock=lambda: DATE, stream=stream)
    assert result.status is AgentStatus.COMPLETED and len(result.ticks) == 2
    (error,) = errors(result)
    assert error["type"] == "InvalidSolution" and "128 levels" in error["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_deep_latent_answer_fails_its_call_not_a_recursion_error(stream: bool) -> None:
    think = {"type": "object", "properties": {"_tool": {"const": "think"}, "q": {}}}
    solution = {"calls": [{"_tool": "think", "q": 1, "_outputPath": "†state.t"}],
                "output": None}
    llm = ScriptedLLM([solution, DONE], latent={"think": [nested(5000)]})
    result = run_agent_sync([], llm, tools=[think], clock=lambda: DATE, stream=stream)
    assert result.status is AgentStatus.COMPLETED, result.reason
    (error,) = errors(result)
    assert error["type"] == "NotJSON" and "128 levels" in error["message"]


def test_a_deep_answer_in_a_script_file_is_fed_back(tmp_path: pathlib.Path) -> None:
    agent, script = tmp_path / "agent.json", tmp_path / "script.json"
    agent.write_text(json.dumps({"context": [], "tools": [ECHO], "mocks": {"echo": {"echo": True}}}))
    script.write_text(json.dumps([deep_solution(505), DONE]))
    out, err = io.StringIO(), io.StringIO()
    code = main(["agent", str(agent), "--llm", f"script:{script}"], out=out, err=err)
    assert code == 0, err.getvalue()
    assert "InvalidSolution" in out.getvalue() and "Recursion" not in out.getvalue() + err.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("text", [json.dumps(deep_solution(505)), "[" * 100_000 + "]" * 100_000,
                                  '{"calls": ' + "[" * 100_000])
def test_a_deep_answer_through_the_openai_sdk_is_fed_back(text: str) -> None:
    result = with_openai([openai_completion(text), openai_completion(json.dumps(DONE))])
    assert result.status is AgentStatus.COMPLETED, result.reason
    (error,) = errors(result)
    assert error["type"] == "InvalidSolution" and len(error["message"]) < 800
    assert result.ticks[0].usage.input_tokens == 11  # its tokens count


@pytest.mark.slow
@pytest.mark.parametrize("depth", [505, 5000])
def test_a_deep_streamed_answer_through_the_openai_sdk_is_fed_back(depth: int) -> None:
    text = ('{"calls": [{"_tool": "echo", "_outputPath": "†state.e", "x": '
            + "[" * depth + "1" + "]" * depth + '}], "output": null}')
    result = with_openai([openai_stream(text, size=4000),
                          openai_stream(json.dumps(DONE))], stream=True)
    assert result.status is AgentStatus.COMPLETED, result.reason
    assert [e["type"] for e in errors(result)] == ["InvalidSolution"]


# -- item 3: a streamed tick never hangs -------------------------------------------------------


class Odd(BaseException):
    """A BaseException that is neither KeyboardInterrupt nor SystemExit."""


async def streamed(activity: Any, **kw: Any) -> AgentResult:
    solution = {"calls": [{"_tool": "echo", "x": 1, "_outputPath": "†state.a"},
                          {"_tool": "echo", "x": 2, "_outputPath": "†state.b"}],
                "output": None}
    return await asyncio.wait_for(run_agent(
        [], ScriptedLLM([solution, DONE]), tools=[ECHO], activities={"echo": activity},
        clock=lambda: DATE, stream=True, **kw), timeout=10)


def test_an_activitys_own_cancelled_error_is_its_outcome_in_a_streamed_tick() -> None:
    async def cancelled(call: dict[str, Any], tool: Any, context: Any) -> Any:
        if call["x"] == 1:
            raise asyncio.CancelledError
        return {"got": 2}

    result = asyncio.run(streamed(cancelled))
    assert result.status is AgentStatus.COMPLETED
    assert [e["type"] for e in errors(result)] == ["CancelledError"]
    assert thaw(result.context.value("state")) == {"b": {"got": 2}}


@pytest.mark.parametrize("exc", [Odd, KeyboardInterrupt, SystemExit])
def test_a_base_exception_from_an_activity_stops_a_streamed_tick_without_a_hang(
        exc: type[BaseException]) -> None:
    async def raising(call: dict[str, Any], tool: Any, context: Any) -> Any:
        if call["x"] == 1:
            raise exc()
        await asyncio.sleep(30)  # cancelled and awaited when the tick stops

    with pytest.raises(exc):
        asyncio.run(streamed(raising))


def test_generator_exit_from_an_activity_is_its_outcome_in_a_streamed_tick() -> None:
    async def closing(call: dict[str, Any], tool: Any, context: Any) -> Any:
        raise GeneratorExit

    result = asyncio.run(streamed(closing))
    assert [e["type"] for e in errors(result)] == ["GeneratorExit", "GeneratorExit"]


def test_timeout_ends_a_hanging_activity_in_a_streamed_tick() -> None:
    async def hangs(call: dict[str, Any], tool: Any, context: Any) -> Any:
        await asyncio.Event().wait()

    result = asyncio.run(streamed(hangs, timeout=0.05))
    assert [e["type"] for e in errors(result)] == ["Timeout", "Timeout"]


# -- item 8: malformed provider responses ----------------------------------------------------


def completion(**fields: Any) -> Answer:
    body = dict(openai_completion("{}").body)
    body.update(fields)
    return Answer(body=body)


@pytest.mark.slow
@pytest.mark.parametrize("answer", [
    completion(choices=None), completion(choices="no"), completion(choices=[5]),
    completion(choices=[{"index": 0, "message": None}]), completion(choices=[]),
    completion(usage={"prompt_tokens": "many", "completion_tokens": -3}),
    completion(choices=[{"index": 0, "message": {"role": "assistant", "content": 5}}])])
def test_a_malformed_provider_response_is_an_unusable_answer(answer: Answer) -> None:
    result = with_openai([answer, openai_completion(json.dumps(DONE))])
    assert result.status is AgentStatus.COMPLETED, result.reason
    assert [e["type"] for e in errors(result)] == ["InvalidSolution"]


def message(**fields: Any) -> Answer:
    body = dict(anthropic_message(DONE).body)
    body.update(fields)
    return Answer(body=body)


@pytest.mark.slow
@pytest.mark.parametrize("answer", [
    message(content=None), message(content="no"), message(content=[5, None]),
    message(content=[{"type": "tool_use", "id": "t", "name": "solution", "input": "{}"}]),
    message(usage={"input_tokens": "many", "output_tokens": None}, content=[])])
def test_a_malformed_anthropic_response_is_an_unusable_answer(answer: Answer) -> None:
    pytest.importorskip("anthropic")
    with serve([answer, anthropic_message(DONE)]) as server:
        llm = AnthropicLLM("test-model", api_key=KEY, base_url=server.root_url,
                           policy=RetryPolicy(max_attempts=1, timeout=10))
        result = run_agent_sync([], llm, tools=[ECHO], activities={"echo": echo},
                                clock=lambda: DATE)
    assert result.status is AgentStatus.COMPLETED, result.reason
    assert [e["type"] for e in errors(result)] == ["InvalidSolution"]


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(("body", "why"), [
    ('{"choices": [{"index": 0, "junk": ' + DEEP + "}]}", "nested too deep to read"),
    ("<html>oops</html>", "not JSON"), ('{"choices": [{"index"', "not JSON")])
def test_a_response_body_the_sdk_cannot_read_is_an_unusable_answer(
        provider: str, body: str, why: str) -> None:
    pytest.importorskip(provider)
    last = openai_completion(json.dumps(DONE)) if provider == "openai" \
        else anthropic_message(DONE)
    with serve([Answer(raw=body), last]) as server:
        policy = RetryPolicy(max_attempts=1, timeout=10)
        llm = openai(server.base_url) if provider == "openai" else AnthropicLLM(
            "test-model", api_key=KEY, base_url=server.root_url, policy=policy)
        result = run_agent_sync([], llm, tools=[ECHO], activities={"echo": echo},
                                clock=lambda: DATE)
    assert result.status is AgentStatus.COMPLETED, result.reason
    (error,) = errors(result)
    assert error["type"] == "InvalidSolution" and why in error["message"]


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(("junk", "why"), [(DEEP, "nested too deep to read"),
                                           ("{", "not JSON")])
def test_a_streamed_event_the_sdk_cannot_read_is_an_unusable_answer(
        provider: str, junk: str, why: str) -> None:
    pytest.importorskip(provider)
    make = openai_stream if provider == "openai" else anthropic_stream
    first = make(json.dumps(DONE) if provider == "openai" else DONE)
    assert first.events is not None
    name, data = first.events[1]
    events = (*first.events[:2], (name, json.dumps(data)[:-1] + ', "junk": ' + junk + "}"),
              *first.events[2:])
    last = make(json.dumps(DONE) if provider == "openai" else DONE)
    with serve([evolve(first, events=events), last]) as server:
        policy = RetryPolicy(max_attempts=1, timeout=10)
        llm = openai(server.base_url) if provider == "openai" else AnthropicLLM(
            "test-model", api_key=KEY, base_url=server.root_url, policy=policy)
        result = run_agent_sync([], llm, tools=[ECHO], activities={"echo": echo},
                                clock=lambda: DATE, stream=True)
    assert result.status is AgentStatus.COMPLETED, result.reason
    (error,) = errors(result)
    assert error["type"] == "InvalidSolution" and why in error["message"]


# -- item 12: a broken stream keeps what ran --------------------------------------------------


@pytest.mark.slow
def test_a_stream_broken_after_a_call_ran_keeps_its_outcome_and_writes() -> None:
    solution = {"calls": [{"_tool": "echo", "x": 1, "_outputPath": "†state.a"},
                          {"_tool": "echo", "x": 2, "_outputPath": "†state.b"}],
                "output": None}
    text = json.dumps(solution)
    broken = evolve(openai_stream(text[:text.index("}") + 1] + ", " + " " * 30, size=8,
                                  gap=0.05), broken=True)
    result = with_openai([broken], stream=True)
    assert result.status is AgentStatus.FAILED and "broke off" in result.reason
    assert thaw(result.context.value("state")) == {"a": {"got": 1}}
    (tick,) = result.ticks
    assert [o.outcome for o in tick.outcomes] == ["executed"]
    assert [m["type"] for m in map(thaw, result.context.messages)] == ["data", "plan"]


# -- items 14 and 15: the key masked, excerpts bounded -----------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("content", [f"Sure! Your key is {KEY}.",
                                     json.dumps({"calls": [], "output": KEY})])
def test_the_key_is_masked_wherever_an_answer_is_quoted(content: str, stream: bool) -> None:
    first = openai_stream(content) if stream else openai_completion(content)
    last = openai_stream(json.dumps(DONE)) if stream else openai_completion(json.dumps(DONE))
    result = with_openai([first, last], stream=stream, output_schema={"type": "number"})
    text = json.dumps([thaw(m) for m in result.context.messages])
    assert errors(result) and KEY not in text and KEY[:12] not in text


@pytest.mark.slow
def test_an_invalid_solution_quotes_a_bounded_excerpt_and_later_requests_stay_small() -> None:
    huge = {"calls": [], "output": None, "junk": "x" * 5_000_000}
    llm = ScriptedLLM([huge, json.dumps(huge), DONE])
    result = run_agent_sync([], llm, tools=[ECHO], clock=lambda: DATE,
                            budgets=Budgets(max_tokens=10**8))  # 1.25 M tokens an answer
    assert [e["type"] for e in errors(result)] == ["InvalidSolution", "InvalidSolution"]
    assert all(len(json.dumps(e)) < 2_000 for e in errors(result))
    assert max(len(r.render()) for r in llm.requests) < 20_000


# -- item 9: timeout bounds the whole request ----------------------------------------------


def slow_openai(url: str) -> OpenAILLM:
    return OpenAILLM("test-model", api_key=KEY, base_url=url,
                     policy=RetryPolicy(max_attempts=2, timeout=0.5, stream_timeout=1.0,
                                        base_delay=0.0))


@pytest.mark.slow
def test_a_trickled_answer_is_cut_at_the_timeout_and_retried() -> None:
    trickled = evolve(openai_completion(json.dumps(DONE)), trickle=0.2)  # about 5 s in all
    with serve([trickled, trickled]) as server:
        result = run_agent_sync([], slow_openai(server.base_url), tools=[ECHO])
        asked = len(server.requests)
    assert result.status is AgentStatus.FAILED and asked == 2
    assert "took longer than 0.5 s" in result.reason


@pytest.mark.slow
@pytest.mark.parametrize(("lead", "words"), [(0.8, "first chunk took longer than 0.5 s"),
                                             (0.0, "took longer than 1 s in all")])
def test_a_trickled_stream_is_cut_at_its_deadlines(lead: float, words: str) -> None:
    solution = {"calls": [{"_tool": "echo", "x": 1, "_outputPath": "†state.a"}], "output": 1}
    stream = evolve(openai_stream(json.dumps(solution), size=4, gap=0.2), lead=lead)
    with serve([stream]) as server:
        result = run_agent_sync([], slow_openai(server.base_url), tools=[ECHO],
                                activities={"echo": echo}, stream=True)
    assert result.status is AgentStatus.FAILED and words in result.reason


# -- item 10: budgets shared with delegates ----------------------------------------------------

ASK = {"type": "object", "description": "Ask a helper.",
       "properties": {"_tool": {"const": "ask"}, "q": {"type": "string"},
                      "_delegate": {"const": "anonymous"}}}
FANOUT = {"calls": [{"_tool": "ask", "q": str(i), "_outputPath": f"†state.a{i}"}
                    for i in range(3)], "output": None}


def fanning(request: Any) -> Any:
    """Every request, the caller's and every delegate's, delegates three calls again."""
    return FANOUT


@pytest.mark.slow
def test_delegates_share_the_default_budget_of_200_requests() -> None:
    llm = ScriptedLLM(fanning)
    result = run_agent_sync([], llm, tools=[ASK], clock=lambda: DATE, max_ticks=50)
    assert result.status is AgentStatus.FAILED and len(llm.requests) == 200
    assert result.requests == 200 and "200 LLM requests" in result.reason
    assert errors(result)[-1]["type"] == "BudgetExceeded"
    assert errors(result)[-1]["data"] == {"budget": "max_requests", "limit": 200}


def test_a_delegate_past_the_budget_ends_with_delegate_failed_naming_it() -> None:
    llm = ScriptedLLM(fanning)
    result = run_agent_sync([], llm, tools=[ASK], clock=lambda: DATE,
                            budgets=Budgets(max_requests=5))
    assert len(llm.requests) == 5 and result.status is AgentStatus.FAILED
    failed = [e for e in errors(result) if e["type"] == "DelegateFailed"]
    assert failed and all("max_requests" in e["message"] for e in failed)


def test_the_token_budget_ends_the_run_failed() -> None:
    llm = ScriptedLLM([{"calls": [], "output": None}] * 10)
    result = run_agent_sync([], llm, tools=[ASK], clock=lambda: DATE, max_stalls=20,
                            max_ticks=10, budgets=Budgets(max_tokens=1000))
    assert result.status is AgentStatus.FAILED and "max_tokens" in result.reason
    assert errors(result)[-1]["data"]["budget"] == "max_tokens"
    assert sum(t.usage.input_tokens + t.usage.output_tokens for t in result.ticks) >= 1000


class Pausing(ScriptedLLM):
    """Answers after a pause, so that delegates started together run at once."""

    async def solve(self, request: Any) -> Any:
        await asyncio.sleep(0.01)
        return await super().solve(request)


def test_delegates_beyond_max_delegates_at_once_are_not_started() -> None:
    answers = [FANOUT, {"calls": [], "output": "fine"}, {"calls": [], "output": "fine"},
               {"calls": [], "output": 1}]
    result = run_agent_sync([], Pausing(answers), tools=[ASK], clock=lambda: DATE,
                            budgets=Budgets(max_delegates=2))
    assert result.status is AgentStatus.COMPLETED
    (failed,) = [e for e in errors(result) if e["type"] == "DelegateFailed"]
    assert "max_delegates" in failed["message"] and "not started" in failed["message"]


def test_the_command_line_takes_the_budgets_and_prints_the_usage(tmp_path: pathlib.Path) -> None:
    agent, script = tmp_path / "agent.json", tmp_path / "script.json"
    agent.write_text(json.dumps({"context": [], "tools": [ASK], "mocks": {}}))
    script.write_text(json.dumps([FANOUT] * 10))
    out, err = io.StringIO(), io.StringIO()
    code = main(["agent", str(agent), "--llm", f"script:{script}", "--max-requests", "4"],
                out=out, err=err)
    assert code == 1 and "failed: budget: the run's budget of 4 LLM requests" in out.getvalue()
    assert "(4 LLM requests)" in out.getvalue()
    code = main(["agent", str(agent), "--llm", f"script:{script}", "--max-tokens", "0"],
                out=out, err=err)
    assert code == 2 and "--max-tokens must be a positive integer, got 0" in err.getvalue()


# -- item 7: one tick's work is linear in its calls (counted, never timed) ----------------------


def request_lines(n: int) -> int:
    """Lines of obelisk/agent/request.py run to build the request after a tick of n calls."""
    from obelisk import Context
    from obelisk.agent import build_request

    plan = {"type": "plan", "mode": "eager",
            "plan": [{"_tool": "echo", "x": i, "_outputPath": f"†state.v{i}"} for i in range(n)],
            "outcomes": [{"call": i, "instance": None, "outcome": "executed"} for i in range(n)]}
    context = Context.of([plan])
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename.endswith("request.py"):
            if event == "line":
                count += 1
            return tracer
        return None

    sys.settrace(tracer)
    try:
        build_request(context, tools=[ECHO])
    finally:
        sys.settrace(None)
    return count


def test_building_a_request_is_linear_in_the_plans_outcomes() -> None:
    small, large = request_lines(100), request_lines(400)
    assert large < 6 * small  # linear: about 4; scanning every outcome per call: about 16


def test_a_streamed_tick_compiles_once_for_the_calls_that_arrived_together(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import obelisk.agent.tick as tick_module

    compiled: list[int] = []
    real = tick_module.compile_plan

    def counting(calls: Any, **kw: Any) -> Any:
        compiled.append(len(calls))
        return real(calls, **kw)

    monkeypatch.setattr(tick_module, "compile_plan", counting)
    calls = [{"_tool": "echo", "x": i, "_outputPath": f"†state.v{i}"} for i in range(300)]
    result = run_agent_sync([], ScriptedLLM([{"calls": calls, "output": 1}]), tools=[ECHO],
                            activities={"echo": echo}, stream=True)
    assert result.status is AgentStatus.COMPLETED
    assert len(compiled) <= 5 and sum(compiled) <= 3 * 300  # before: 300 compiles, 45,150 calls
