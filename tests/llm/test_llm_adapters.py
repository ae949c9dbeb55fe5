"""The provider adapters against a loopback server speaking their HTTP APIs; the scripted
adapter. No test touches the network and no test waits for a backoff (the sleep is
injected)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import pytest
from servers import anthropic_message, error, openai_completion, serve

from obelisk import Context
from obelisk.agent import build_latent_request, build_request, strict_schema
from obelisk.llm import (
    LLM,
    AnthropicLLM,
    Failure,
    LLMError,
    OpenAILLM,
    RetryPolicy,
    ScriptedLLM,
    ScriptExhausted,
    StreamedCall,
    StreamedOutput,
    Unusable,
    Usage,
)

KEY = "sk-test-THIS-IS-A-SECRET-0123456789abcdef"

TOOL = {
    "type": "object", "description": "Look up a customer.",
    "properties": {
        "_tool": {"type": "string", "const": "lookup"},
        "customerId": {"type": "string"},
        "verbose": {"type": "boolean"},
    },
    "required": ["customerId"],
}
THINK = {
    "type": "object",
    "properties": {"_tool": {"const": "think"}, "topic": {"type": "string"},
                   "_output": {"type": "object", "properties": {"idea": {"type": "string"}},
                               "required": ["idea"]}},
}
CONTEXT = Context.of([{"type": "input", "input": {"customerId": "c-1"}}])
SOLUTION = {"calls": [{"_tool": "lookup", "customerId": "†input.customerId",
                       "_outputPath": "†state.customer"}], "output": None}


def request() -> Any:
    return build_request(CONTEXT, tools=[TOOL, THINK])


class Sleeps:
    """An injected sleep that records how long it was asked to wait."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def openai(server: Any, sleeps: Sleeps | None = None, **policy: Any) -> OpenAILLM:
    return OpenAILLM("test-model", api_key=KEY, base_url=server.base_url,
                     policy=RetryPolicy(**{"max_attempts": 3, "timeout": 5.0, **policy}),
                     sleep=sleeps or Sleeps())


def anthropic(server: Any, sleeps: Sleeps | None = None, **policy: Any) -> AnthropicLLM:
    return AnthropicLLM("test-model", api_key=KEY, base_url=server.root_url,
                        policy=RetryPolicy(**{"max_attempts": 3, "timeout": 5.0, **policy}),
                        sleep=sleeps or Sleeps())


# -- OpenAI ------------------------------------------------------------------------------


@pytest.mark.slow
def test_openai_sends_the_strict_schema_and_reads_the_solution() -> None:
    # Strict mode forces a null into the optional "verbose": the adapter drops it again.
    content = {"calls": [{**SOLUTION["calls"][0], "verbose": None}], "output": None}
    with serve([openai_completion(json.dumps(content))]) as server:
        reply = run(openai(server).solve(request()))
    assert reply.value == SOLUTION
    assert reply.usage == Usage(11, 7)
    [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "test-model"
    assert sent.body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "solution", "strict": True, "schema": strict_schema(request().schema)}}
    assert sent.body["messages"] == request().turns_json()


@pytest.mark.slow
def test_openai_refusal_is_an_unusable_answer() -> None:
    with serve([openai_completion(None, refusal="I can't help with that.")]) as server:
        reply = run(openai(server).solve(request()))
    assert reply.value == Unusable("the model refused", "I can't help with that.")
    assert reply.usage == Usage(11, 7)
    assert len(server.requests) == 1  # a refusal is not asked again


@pytest.mark.slow
@pytest.mark.parametrize(("content", "reason"), [
    ("{not json", "not JSON"), ("[1, 2]", "not an object"), ("", "empty"),
    ("Sure! {calls: []}", "not JSON"), (None, "empty"), ('{"calls": [', "not JSON")])
def test_openai_unusable_content_is_one_request_and_its_tokens_count(
        content: str | None, reason: str) -> None:
    with serve([openai_completion(content, prompt_tokens=100, completion_tokens=20)]) as s:
        reply = run(openai(s).solve(request()))
    assert isinstance(reply.value, Unusable) and reason in reply.value.reason
    assert reply.usage == Usage(100, 20) and len(s.requests) == 1


@pytest.mark.slow
def test_openai_retries_429_with_retry_after_and_5xx_with_backoff() -> None:
    sleeps = Sleeps()
    answers = [error(429, retry_after="7"), error(500), openai_completion(json.dumps(SOLUTION))]
    with serve(answers) as server:
        reply = run(openai(server, sleeps, base_delay=0.5).solve(request()))
    assert reply.value == SOLUTION
    assert sleeps.waits == [7.0, 1.0]  # the server's hint, then 0.5 * 2**1
    assert len(server.requests) == 3


@pytest.mark.slow
def test_openai_gives_up_after_the_budget() -> None:
    sleeps = Sleeps()
    with serve([error(503)] * 3) as server, pytest.raises(LLMError) as caught:
        run(openai(server, sleeps, base_delay=1.0, max_delay=1.5).solve(request()))
    assert caught.value.status == 503
    assert caught.value.failure is Failure.SERVER
    assert caught.value.attempts == 3
    assert sleeps.waits == [1.0, 1.5]  # capped by max_delay; no wait after the last
    assert "gave up after 3 attempts" in str(caught.value)


@pytest.mark.slow
def test_openai_client_errors_are_not_retried() -> None:
    with serve([error(400, "bad schema")]) as server, pytest.raises(LLMError) as caught:
        run(openai(server).solve(request()))
    assert caught.value.status == 400
    assert len(server.requests) == 1


@pytest.mark.slow
def test_openai_timeouts_are_retried_then_fail() -> None:
    slow = error(500, delay=30.0)  # never answered in time: the server is closed first
    with serve([slow, slow]) as server, pytest.raises(LLMError) as caught:
        run(openai(server, max_attempts=2, timeout=0.2).solve(request()))
    assert caught.value.failure is Failure.TIMEOUT
    assert len(server.requests) == 2


@pytest.mark.slow
def test_openai_latent_wraps_the_schema_as_an_object() -> None:
    sub = build_latent_request(CONTEXT, {"_tool": "think", "topic": "refunds"}, THINK)
    with serve([openai_completion(json.dumps({"value": {"idea": "ask"}}))]) as server:
        reply = run(openai(server).latent(sub))
    assert reply.value == {"idea": "ask"}
    schema = server.requests[0].body["response_format"]["json_schema"]
    assert schema["name"] == "latent"
    assert schema["schema"]["properties"]["value"]["properties"] == {"idea": {"type": "string"}}


@pytest.mark.slow
def test_openai_key_from_the_environment_and_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serve([openai_completion(json.dumps(SOLUTION))]) as server:
        adapter = OpenAILLM("m", base_url=server.base_url)
        run(adapter.solve(request()))
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        OpenAILLM("m")


@pytest.mark.slow
def test_openai_streaming_is_there() -> None:
    # Was a placeholder test (NotImplementedError) until streaming existed; the streaming
    # tests are in tests/llm/test_llm_streaming.py.
    from servers import openai_stream

    with serve([openai_stream(json.dumps(SOLUTION))]) as server:
        items = run(_collect(openai(server).stream(request())))
    assert items[0] == StreamedCall(SOLUTION["calls"][0])


async def _collect(items: Any) -> list[Any]:
    return [item async for item in items]


# -- Anthropic ---------------------------------------------------------------------------


@pytest.mark.slow
def test_anthropic_forces_one_tool_and_reads_its_input() -> None:
    with serve([anthropic_message(SOLUTION)]) as server:
        reply = run(anthropic(server).solve(request()))
    assert reply.value == SOLUTION
    assert reply.usage == Usage(13, 5)
    [sent] = server.requests
    assert sent.path == "/v1/messages"
    # The SDK sends the key as x-api-key or as a bearer token, depending on its version.
    assert KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
    assert sent.body["tool_choice"] == {"type": "tool", "name": "solution"}
    [tool] = sent.body["tools"]
    assert tool["name"] == "solution"
    assert tool["input_schema"] == request().schema
    assert sent.body["system"].startswith(request().system)
    [message] = sent.body["messages"]
    assert message["role"] == "user"
    assert [b["text"] for b in message["content"]] == [t.content for t in request().messages]


@pytest.mark.slow
def test_anthropic_refusal_and_missing_tool_call_are_unusable_answers() -> None:
    with serve([anthropic_message(refusal="No.")]) as server:
        reply = run(anthropic(server).solve(request()))
    assert reply.value == Unusable("the model refused", "No.") and reply.usage == Usage(13, 5)
    with serve([anthropic_message(text_only="hm")]) as s:
        reply = run(anthropic(s).solve(request()))
    assert reply.value == Unusable("the answer has no call of the tool 'solution'", "hm")
    assert len(s.requests) == 1


@pytest.mark.slow
def test_anthropic_retries_overloaded_and_rate_limits() -> None:
    sleeps = Sleeps()
    answers = [error(529), error(429, retry_after="2"), anthropic_message(SOLUTION)]
    with serve(answers) as server:
        assert run(anthropic(server, sleeps).solve(request())).value == SOLUTION
    assert sleeps.waits == [0.5, 2.0]


@pytest.mark.slow
def test_anthropic_latent_unwraps_the_value() -> None:
    sub = build_latent_request(CONTEXT, {"_tool": "think", "topic": "x"}, THINK)
    with serve([anthropic_message({"value": {"idea": "y"}}, name="latent")]) as server:
        assert run(anthropic(server).latent(sub)).value == {"idea": "y"}
    assert server.requests[0].body["tool_choice"] == {"type": "tool", "name": "latent"}


# -- keys never leak -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("make", [openai, anthropic])
def test_the_key_never_appears_in_errors_reprs_or_logs(
        make: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    # A server that echoes the key back in its error text: the adapter must mask it.
    answers = [error(401, f"invalid key {KEY}"), error(500, f"key {KEY[:20]} broke")] + \
        [error(500, f"still {KEY}")] * 2
    with serve(answers) as server:
        adapter = make(server)
        for _ in range(2):
            with pytest.raises(LLMError) as caught:
                run(adapter.solve(request()))
            texts = [str(caught.value), repr(caught.value), str(caught.value.args)]
            assert all(KEY not in t and KEY[:20] not in t for t in texts), texts
    assert KEY not in repr(adapter) and KEY not in str(adapter)
    assert KEY not in caplog.text
    assert all(KEY in (r.headers.get("x-api-key"), r.headers.get("authorization", "")[7:])
               for r in server.requests)


def test_missing_sdk_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(LLMError, match=r"pip install 'obelisk\[openai\]'"):
        OpenAILLM("m", api_key=KEY)
    with pytest.raises(LLMError, match=r"pip install 'obelisk\[anthropic\]'"):
        AnthropicLLM("m", api_key=KEY)


# -- scripted ------------------------------------------------------------------------------


def test_scripted_answers_solutions_and_latent_lists_apart() -> None:
    second = {"calls": [], "output": "done"}
    llm = ScriptedLLM([SOLUTION, second], latent={"think": [{"idea": "a"}, {"idea": "b"}]})
    sub = build_latent_request(CONTEXT, {"_tool": "think"}, THINK)
    assert run(llm.solve(request())).value == SOLUTION
    assert run(llm.latent(sub)).value == {"idea": "a"}
    assert run(llm.solve(request())).value == second
    assert run(llm.latent(sub)).value == {"idea": "b"}
    with pytest.raises(ScriptExhausted, match="2 answer"):
        run(llm.solve(request()))
    with pytest.raises(ScriptExhausted, match="think"):
        run(llm.latent(sub))
    other = build_latent_request(CONTEXT, {"_tool": "lookup"}, TOOL)
    with pytest.raises(ScriptExhausted, match="latent="):
        run(llm.latent(other))
    assert isinstance(ScriptExhausted("x"), LLMError)


def test_scripted_functions_and_deterministic_usage() -> None:
    llm = ScriptedLLM(lambda r: {"calls": [], "output": len(r.messages)},
                      latent={"think": lambda r: {"idea": r.tool}})
    first = run(llm.solve(request()))
    assert first.value == {"calls": [], "output": 1}
    assert first.usage == run(ScriptedLLM([first.value]).solve(request())).usage
    assert first.usage.input_tokens == (len(request().render()) + 3) // 4
    sub = build_latent_request(CONTEXT, {"_tool": "think"}, THINK)
    assert run(llm.latent(sub)).value == {"idea": "think"}


def test_scripted_streams_calls_then_the_output() -> None:
    llm = ScriptedLLM([{"calls": [{"_tool": "a"}, {"_tool": "b"}], "output": 3}])

    async def collect() -> list[Any]:
        return [item async for item in llm.stream(request())]

    items = run(collect())
    assert items[:2] == [StreamedCall({"_tool": "a"}), StreamedCall({"_tool": "b"})]
    assert isinstance(items[2], StreamedOutput) and items[2].output == 3
    assert len(items) == 3


@pytest.mark.slow
def test_a_refused_connection_is_retried_then_fails() -> None:
    import socket
    with socket.socket() as sock:  # a loopback port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps = Sleeps()
    adapter = OpenAILLM("m", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1",
                        policy=RetryPolicy(max_attempts=2, timeout=5.0), sleep=sleeps)
    with pytest.raises(LLMError) as caught:
        run(adapter.solve(request()))
    assert caught.value.failure is Failure.CONNECTION
    assert caught.value.attempts == 2 and len(sleeps.waits) == 1


@pytest.mark.slow
def test_every_adapter_speaks_the_protocol() -> None:
    with serve([]) as server:
        for adapter in (ScriptedLLM(), openai(server), anthropic(server)):
            assert isinstance(adapter, LLM)
