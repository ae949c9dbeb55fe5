"""What the LLM answered, judged (issue 25 items 2, 5, 6, 7): each call on its own
against its branch, unusable answers fed back with their tokens counted, a streamed
solution judged as a whole one, ``\\†`` in the output, and the small texts of the trial."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import pytest
from clirun import cli

from obelisk.agent import AgentResult, AgentStatus, run_agent_sync, solution_schema, strict_schema
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING
from obelisk.llm import AnthropicLLM, LLMError, ScriptedLLM, Unusable, Usage

DATE = "2026-11-23T00:00:00Z"
LOOKUP = {"type": "object", "description": "Look up an order.",
          "properties": {"_tool": {"const": "lookupOrder"}, "orderId": {"type": "string"},
                         "_output": {"type": "object"}}, "required": ["orderId"]}
REFUND = {"type": "object", "description": "Refund an order.",
          "properties": {"_tool": {"const": "refund"}, "orderId": {"type": "string"},
                         "amount": {"type": "number"}, "_output": {"type": "object"}},
          "required": ["orderId", "amount"]}
TOOLS = [LOOKUP, REFUND]
CONTEXT = [{"type": "input", "input": {"orderId": "o-1"}}]
GOOD = {"_tool": "lookupOrder", "orderId": "†input.orderId", "_outputPath": "†state.order"}
DONE = {"calls": [], "output": 1}


def lookup(call: dict[str, Any], tool: Any, context: Any) -> dict[str, str]:
    return {"status": "delivered"}


def agent(solutions: Any, **kw: Any) -> AgentResult:
    kw.setdefault("tools", TOOLS)
    kw.setdefault("activities", {"lookupOrder": lookup, "refund": lookup})
    return run_agent_sync(CONTEXT, ScriptedLLM(solutions), clock=lambda: DATE, **kw)


def errors(result: AgentResult) -> list[dict[str, Any]]:
    return [thaw(m)["data"] for m in result.context.messages if m.get("type") == "error"]


# -- item 2: each call judged on its own -------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_one_wrongly_typed_literal_does_not_throw_away_the_tick(stream: bool) -> None:
    bad = {"_tool": "refund", "orderId": "†input.orderId", "amount": "twenty",
           "_outputPath": "†state.refund"}
    result = agent([{"calls": [GOOD, bad], "output": None}, DONE], stream=stream)
    assert result.context.value("state") == {"order": {"status": "delivered"}}
    (error,) = errors(result)
    assert error["call"] == bad and error["error"]["type"] == "Invalid"
    assert error["error"]["message"] == "amount: 'twenty' is not of type 'number'"
    (diagnostic,) = error["error"]["data"]["diagnostics"]
    assert (diagnostic["code"], diagnostic["pointer"]) == ("param-schema", "/amount")
    assert list(result.ticks[0].errors) == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_misspelled_tool_reads_like_the_compilers_diagnostic(stream: bool) -> None:
    typo = {"_tool": "lookupOrdr", "orderId": "†input.orderId", "_outputPath": "†state.x"}
    result = agent([{"calls": [typo, GOOD], "output": None}, DONE], stream=stream)
    (error,) = errors(result)
    message = error["error"]["message"]
    assert "lookupOrdr" in message and "did you mean 'lookupOrder'?" in message
    assert "valid under any of the given schemas" not in message
    assert result.context.value("state") == {"order": {"status": "delivered"}}


def test_only_a_wrong_shape_is_an_invalid_solution() -> None:
    for answer in ({"calls": [GOOD]}, {"output": 1}, {"calls": {}, "output": None},
                   {"calls": [GOOD, 3], "output": None}, {"calls": [], "output": 1, "x": 2}):
        result = agent([answer, DONE])
        assert [e["error"]["type"] for e in errors(result)] == ["InvalidSolution"], answer
        assert result.context.value("state") is MISSING  # none of its calls ran


@pytest.mark.parametrize("strict", [False, True])
def test_tool_is_required_and_never_null_in_every_branch(strict: bool) -> None:
    schema = solution_schema(TOOLS)
    if strict:
        schema = strict_schema(schema)
    for branch in schema["properties"]["calls"]["items"]["anyOf"]:
        assert branch["required"][0] == "_tool"
        assert "null" not in json.dumps(branch["properties"]["_tool"])


def test_a_call_without_tool_is_invalid_alone_and_named_by_its_index() -> None:
    result = agent([{"calls": [GOOD, {"orderId": "x", "_outputPath": "†state.y"}],
                     "output": None}, DONE])
    (error,) = errors(result)
    assert error["error"]["type"] == "Invalid" and "no _tool" in error["error"]["message"]
    assert [o.to_json() for o in result.ticks[0].outcomes][1]["outcome"] == "invalid"


def test_a_call_without_tool_is_shown_as_such_and_told_the_known_tools(
        tmp_path: pathlib.Path) -> None:
    path, script = tmp_path / "a.json", tmp_path / "s.json"
    path.write_text(json.dumps({"context": [], "tools": TOOLS,
                                "mocks": {"lookupOrder": {"return": {}}}}))
    script.write_text(json.dumps([{"calls": [{"orderId": "x"}], "output": None}, DONE]))
    code, out, err = cli("agent", str(path), "--llm", f"script:{script}")
    assert code == 0, err
    assert "call 0 (no _tool): invalid" in out and "None" not in out
    assert 'name the tool: "_tool": "lookupOrder" (known tools: lookupOrder, refund)' in out


# -- item 5: unusable answers are fed back ------------------------------------------------


@pytest.mark.parametrize(("answer", "why"), [
    ("Sure! {calls: []}", "not JSON"), ("", "empty"), ('{"calls": [', "not JSON"),
    ("[1, 2]", "not an object"), ("x" * 5000, "5,000 characters")])
def test_an_unusable_answer_is_fed_back_and_the_loop_goes_on(answer: str, why: str) -> None:
    result = agent([answer, DONE])
    assert result.status is AgentStatus.COMPLETED and len(result.ticks) == 2
    (error,) = errors(result)
    assert error["error"]["type"] == "InvalidSolution" and why in error["error"]["message"]
    assert len(error["error"]["message"]) < 600  # a bounded excerpt, not the answer
    second = result.ticks[1]
    assert second.usage.input_tokens > 0
    assert result.ticks[0].usage.output_tokens > 0  # an unusable answer's tokens count


def test_unusable_answers_end_the_run_only_at_max_ticks() -> None:
    result = agent(["no", "no", "no"], max_ticks=3)
    assert result.status is AgentStatus.MAX_TICKS
    assert [list(t.errors) for t in result.ticks] == [["InvalidSolution"]] * 3


class Once(ScriptedLLM):
    """Answers with an Unusable, as a provider adapter does, and counts requests."""

    def __init__(self) -> None:
        super().__init__([DONE])
        self.asked = 0

    async def solve(self, request: Any) -> Any:
        self.asked += 1
        if self.asked == 1:
            from obelisk.llm import Reply
            return Reply(Unusable("the model refused", "no"), Usage(100, 20))
        return await super().solve(request)


def test_an_adapters_unusable_answer_is_one_request_per_tick_and_its_tokens_count() -> None:
    llm = Once()
    result = run_agent_sync(CONTEXT, llm, tools=TOOLS, clock=lambda: DATE)
    assert llm.asked == 2 and result.status is AgentStatus.COMPLETED
    assert result.ticks[0].usage == Usage(100, 20)
    assert errors(result)[0]["error"]["data"] == {"reason": "the model refused", "answer": "no"}


# -- item 6: streaming is the same run ------------------------------------------------------


@pytest.mark.parametrize("answer", [{"calls": [GOOD]}, {"output": 1}])
def test_a_streamed_solution_without_output_or_calls_is_invalid(answer: Any) -> None:
    streamed = agent([answer, DONE], stream=True)
    whole = agent([answer, DONE])
    assert [e["error"]["type"] for e in errors(streamed)] == ["InvalidSolution"]
    assert [e["error"]["message"] for e in errors(streamed)] == \
        [e["error"]["message"] for e in errors(whole)]


@pytest.mark.parametrize("stream", [False, True])
def test_an_escaped_dagger_in_the_output_is_literal(stream: bool) -> None:
    result = agent([{"calls": [GOOD], "output": {"a": "\\†state.order", "b": "†state.order"}}],
                   stream=stream)
    assert result.output == {"a": "†state.order", "b": {"status": "delivered"}}


@pytest.mark.parametrize("answer", ["Sure!", '{"calls": [{"_tool": "lookupOrder"'])
def test_an_unusable_streamed_answer_is_fed_back_as_a_whole_one(answer: str) -> None:
    streamed, whole = agent([answer, DONE], stream=True), agent([answer, DONE])
    assert streamed.context == whole.context and streamed.status is AgentStatus.COMPLETED


@pytest.mark.slow
@pytest.mark.parametrize("answer", [{"calls": [GOOD]}, {"output": 1}])
def test_a_streamed_solution_without_a_key_is_invalid_through_the_sdks(answer: Any) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    from obelisk.llm import OpenAILLM, RetryPolicy
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "llm"))
    from servers import anthropic_stream, openai_stream, serve
    policy = RetryPolicy(max_attempts=1, timeout=10)
    done = json.dumps(DONE)
    with serve([openai_stream(json.dumps(answer)), openai_stream(done)]) as server:
        openai = OpenAILLM("m", api_key="sk-test-0123456789abcdef", base_url=server.base_url, policy=policy)
        via_openai = run_agent_sync(CONTEXT, openai, tools=TOOLS, stream=True,
                                    activities={"lookupOrder": lookup}, clock=lambda: DATE)
    with serve([anthropic_stream(answer), anthropic_stream(DONE)]) as server:
        claude = AnthropicLLM("m", api_key="sk-test-0123456789abcdef", base_url=server.root_url, policy=policy)
        via_anthropic = run_agent_sync(CONTEXT, claude, tools=TOOLS, stream=True,
                                       activities={"lookupOrder": lookup}, clock=lambda: DATE)
    whole = agent([answer, DONE])
    for result in (via_openai, via_anthropic):
        assert [e["error"]["type"] for e in errors(result)] == ["InvalidSolution"]
        assert errors(result) == errors(whole) and result.status is AgentStatus.COMPLETED


# -- item 7: the smaller ones ------------------------------------------------------------


def test_anthropic_with_a_base_url_sends_a_placeholder_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("anthropic")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    AnthropicLLM("m", base_url="http://127.0.0.1:9")  # no key asked for
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        AnthropicLLM("m")


def test_the_command_line_names_the_provider_once(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"context": [], "tools": TOOLS}))
    code, _, err = cli("agent", str(path), "--llm", "openai:gpt")
    assert code == 2 and "openai: openai:" not in err and "OPENAI_API_KEY" in err


def test_max_ticks_is_named_as_the_user_wrote_it(tmp_path: pathlib.Path) -> None:
    path, script = tmp_path / "a.json", tmp_path / "s.json"
    path.write_text(json.dumps({"context": [], "tools": TOOLS, "max_ticks": 0}))
    script.write_text(json.dumps([DONE]))
    code, _, err = cli("agent", str(path), "--llm", f"script:{script}", "--max-ticks", "0")
    assert code == 2 and "--max-ticks must be a positive integer, got 0" in err
    code, _, err = cli("agent", str(path), "--llm", f"script:{script}")
    assert code == 2 and '"max_ticks" must be a positive integer, got 0' in err


def test_a_missing_activities_attribute_is_named_as_missing(tmp_path: pathlib.Path) -> None:
    (tmp_path / "acts_mod.py").write_text("ACTIVITIES = {}\n")
    path, script = tmp_path / "a.json", tmp_path / "s.json"
    path.write_text(json.dumps({"context": [], "tools": TOOLS}))
    script.write_text(json.dumps([DONE]))
    import sys
    sys.path.insert(0, str(tmp_path))
    try:
        code, _, err = cli("agent", str(path), "--llm", f"script:{script}",
                           "--activities", "acts_mod:ACTIVITIE")
    finally:
        sys.path.remove(str(tmp_path))
    assert code == 2 and "has no attribute 'ACTIVITIE'" in err
    assert "did you mean 'ACTIVITIES'?" in err and "must be a dict" not in err


class RefusingLatent(ScriptedLLM):
    """Answers a latent sub-request with an Unusable, as a provider adapter does."""

    async def latent(self, request: Any) -> Any:
        from obelisk.llm import Reply
        return Reply(Unusable("the model refused", "no"), Usage(5, 1))


def test_an_unusable_latent_answer_fails_its_call_saying_why() -> None:
    think = {"type": "object", "properties": {"_tool": {"const": "think"},
                                              "q": {"type": "string"}}}
    call = {"_tool": "think", "q": "why?", "_outputPath": "†state.t"}
    result = run_agent_sync([], RefusingLatent([{"calls": [call], "output": None}, DONE]),
                            tools=[think], clock=lambda: DATE)
    (error,) = errors(result)
    assert error["error"]["type"] == "NotJSON"
    assert "not usable: the model refused: 'no'" in error["error"]["message"]
    assert result.ticks[0].usage.input_tokens > 5  # the latent answer's tokens count too
