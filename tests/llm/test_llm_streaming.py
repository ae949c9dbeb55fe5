"""Streaming adapters: the incremental solution parser (ijson) under random chunking, and
the OpenAI and Anthropic adapters' ``stream`` against loopback servers answering with
server-sent events; the agent streaming through them from the command line."""

from __future__ import annotations

import asyncio
import io
import json
import pathlib
from typing import Any

import pytest
from attrs import evolve
from hypothesis import given, settings
from hypothesis import strategies as st
from servers import anthropic_stream, openai_stream, serve

from obelisk import Context
from obelisk.agent import build_request
from obelisk.cli import main
from obelisk.llm import AnthropicLLM, LLMError, OpenAILLM, StreamedCall, StreamedOutput, Usage
from obelisk.llm.streaming import SolutionParser

KEY = "sk-test-THIS-IS-A-SECRET-0123456789abcdef"
TOOL = {"type": "object", "description": "Look up a customer.",
        "properties": {"_tool": {"type": "string", "const": "lookup"},
                       "customerId": {"type": "string"}, "verbose": {"type": "boolean"}},
        "required": ["customerId"]}
CALLS = [{"_tool": "lookup", "customerId": "†input.customerId", "_outputPath": "†state.a"},
         {"_tool": "lookup", "customerId": "c-2 ✓", "_outputPath": "†state.b"}]
SOLUTION = {"calls": CALLS, "output": {"a": "†state.a"}}
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "agent"


def request() -> Any:
    return build_request(Context.of([{"type": "input", "input": {"customerId": "c-1"}}]),
                         tools=[TOOL])


async def collect(items: Any) -> list[Any]:
    return [item async for item in items]


JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=10)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), JSON, max_size=3), max_size=4), JSON,
       st.lists(st.integers(1, 40), min_size=1, max_size=30))
def test_the_parser_hands_on_each_call_whatever_the_chunking(
        calls: list[Any], output: Any, cuts: list[int]) -> None:
    text = json.dumps({"calls": calls, "output": output}, ensure_ascii=False)
    parser, seen, start = SolutionParser("test"), [], 0
    for size in cuts * (len(text) // max(sum(cuts), 1) + 1):
        seen += parser.feed(text[start:start + size])
        start += size
        if start >= len(text):
            break
    seen += parser.feed(text[start:])
    assert seen == calls and parser.end(Usage()).output == output


def test_a_call_is_handed_on_as_soon_as_its_object_closes() -> None:
    parser = SolutionParser("test")
    text = json.dumps(SOLUTION)
    first_end = text.index("}") + 1
    assert parser.feed(text[:first_end - 1]) == []
    assert parser.feed(text[first_end - 1:first_end]) == [CALLS[0]]


@pytest.mark.parametrize(("text", "reason"), [
    ('{"calls": [', "ended before the solution was complete"),
    ('{"calls": [}', "not JSON"), ("", "empty"), ("Sure! {calls: []}", "not JSON"),
    ('[{"calls": []}]', "not an object")])
def test_text_that_is_not_one_json_object_is_an_unusable_answer(text: str, reason: str) -> None:
    parser = SolutionParser("test")
    assert parser.feed(text) == []
    end = parser.end(Usage(3, 4))
    assert end.unusable is not None and reason in end.unusable.reason
    assert end.usage == Usage(3, 4)


@pytest.mark.parametrize("text", ['{"calls": [' + KEY, '{"calls": "' + KEY, "Sure! " + KEY])
def test_an_unusable_streamed_answer_never_quotes_the_key(text: str) -> None:
    parser = SolutionParser("test", KEY)
    parser.feed(text)
    end = parser.end(Usage())
    assert end.unusable is not None and KEY not in end.unusable.describe()
    assert KEY[:12] not in end.unusable.describe()


def test_a_refusal_makes_the_streamed_answer_unusable() -> None:
    parser = SolutionParser("test")
    assert parser.feed('{"calls": [{"_tool": "a"}, ') == [{"_tool": "a"}]
    parser.refuse("no, thanks")
    assert parser.feed('{"_tool": "b"}], "output": null}') == []
    end = parser.end(Usage())
    assert end.unusable is not None and end.unusable.describe() == "the model refused: 'no, thanks'"


def test_the_end_of_a_stream_holds_the_answer_as_a_whole() -> None:
    parser = SolutionParser("test")
    parser.feed('{"calls": [], "extra": 1}')
    end = parser.end(Usage())
    assert end.unusable is None and end.solution == {"calls": [], "extra": 1}


@pytest.mark.slow
def test_openai_streams_calls_then_the_output() -> None:
    with serve([openai_stream(json.dumps(SOLUTION), size=5)]) as server:
        llm = OpenAILLM("test-model", api_key=KEY, base_url=server.base_url)
        items = asyncio.run(collect(llm.stream(request())))
        body = server.requests[0].body
    assert items == [StreamedCall(CALLS[0]), StreamedCall(CALLS[1]),
                     StreamedOutput({"a": "†state.a"}, Usage(11, 7), solution=SOLUTION)]
    assert body["stream"] is True and body["response_format"]["json_schema"]["strict"]


@pytest.mark.slow
def test_anthropic_streams_the_forced_tools_input() -> None:
    with serve([anthropic_stream(SOLUTION, size=6)]) as server:
        llm = AnthropicLLM("test-model", api_key=KEY, base_url=server.root_url)
        items = asyncio.run(collect(llm.stream(request())))
        body = server.requests[0].body
    assert items == [StreamedCall(CALLS[0]), StreamedCall(CALLS[1]),
                     StreamedOutput({"a": "†state.a"}, Usage(13, 5), solution=SOLUTION)]
    assert body["stream"] is True and body["tool_choice"]["name"] == "solution"


@pytest.mark.slow
def test_a_stream_that_ends_early_is_an_unusable_answer_without_the_key() -> None:
    with serve([openai_stream('{"calls": [{"_tool": "lookup"}, "' + KEY, size=4)]) as server:
        llm = OpenAILLM("test-model", api_key=KEY, base_url=server.base_url)
        items = asyncio.run(collect(llm.stream(request())))
    end = items[-1]
    assert items[0] == StreamedCall({"_tool": "lookup"}) and isinstance(end, StreamedOutput)
    assert end.unusable is not None and "ended before" in end.unusable.reason
    assert KEY not in end.unusable.describe() and end.usage == Usage(11, 7)
    with serve([anthropic_stream(None, text="I'd rather not.")]) as server:
        llm2 = AnthropicLLM("test-model", api_key=KEY, base_url=server.root_url)
        end = asyncio.run(collect(llm2.stream(request())))[-1]
    assert end.unusable is not None and "empty" in end.unusable.reason


@pytest.mark.slow
def test_a_broken_stream_is_an_llm_error_without_the_key() -> None:
    answer = openai_stream('{"calls": [{"_tool": "lookup"}, ' + KEY, size=4)
    with serve([evolve(answer, broken=True)]) as server:
        llm = OpenAILLM("test-model", api_key=KEY, base_url=server.base_url)
        with pytest.raises(LLMError, match="broke off") as caught:
            asyncio.run(collect(llm.stream(request())))
    assert KEY not in str(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_agent_streams_through_a_provider_from_the_command_line(
        provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    script = json.loads((EXAMPLES / "stream.solutions.json").read_text())["solutions"][0]
    answer = (openai_stream(json.dumps(script), size=9, gap=0.01) if provider == "openai"
              else anthropic_stream(script, size=9, gap=0.01))
    with serve([answer]) as server:
        url = server.base_url if provider == "openai" else server.root_url
        out, err = io.StringIO(), io.StringIO()
        code = main(["agent", str(EXAMPLES / "stream.json"), "--llm", f"{provider}:m",
                     "--base-url", url, "--stream"], out=out, err=err)
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "call 0 started (1 call(s) arrived, the solution still arriving)" in text
    assert "output: 360" in text
