"""OpenTelemetry spans and metrics (obelisk/interpreters/spans.py), with the real SDK and
its in-memory exporter and reader: names, parents, attributes, content only when opted
in, spans closed on failure and cancellation, the GenAI metrics."""

from __future__ import annotations

import asyncio
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import obelisk
from obelisk.interpreters.stream import CONTENT_VARIABLE
from obelisk.llm.scripted import ScriptedLLM


class Telemetry:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def metric(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        points = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for found in scope.metrics:
                    if found.name == name:
                        points.extend(found.data.data_points)
        return points


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """The SDK's providers as the global ones for one test (restored after it: the API
    sets a global provider only once per process)."""
    telemetry = Telemetry()
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", telemetry.provider)
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", telemetry.meters)
    monkeypatch.delenv(CONTENT_VARIABLE, raising=False)
    yield telemetry
    telemetry.provider.shutdown()


def boom(*_: Any) -> Any:
    raise ValueError("no")


ROUTED = [{"_tool": "a", "x": 1, "_outputPath": "†r || †err"},
          {"_tool": "b", "y": "†r", "_outputPath": "†s"},
          {"_tool": "c", "z": "†err", "_outputPath": "†t"},
          {"_tool": "d", "_outputPath": "†u"}]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_a_plan_run_is_a_root_span_with_an_execute_tool_span_per_call(otel: Telemetry) -> None:
    seen: list[Any] = []

    def c(*_: Any) -> Any:
        seen.append(trace.get_current_span().get_span_context().span_id)
        return 3

    obelisk.run_sync(ROUTED, [], activities={"a": boom, "b": lambda *_: 2, "c": c, "d": boom})
    (root,) = otel.named("invoke_workflow obelisk")
    assert root.parent is None and root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["obelisk.calls"] == 4
    tools = {s.attributes["obelisk.call"]: s for s in otel.named("execute_tool ")}
    assert sorted(tools) == [0, 1, 2, 3]
    assert all(parent_of(s) == root.context.span_id for s in tools.values())
    assert all(s.context.trace_id == root.context.trace_id for s in tools.values())
    routed, skipped, ran, failed = tools[0], tools[1], tools[2], tools[3]
    assert routed.name == "execute_tool a" and routed.attributes["gen_ai.tool.name"] == "a"
    assert routed.attributes["obelisk.alternative"] == 1
    assert routed.attributes["obelisk.outcome"] == "executed"
    assert routed.status.status_code is StatusCode.UNSET
    assert skipped.name == "execute_tool b"  # (was "execute_tool latent": no tool told)
    assert skipped.attributes["obelisk.outcome"] == "skipped"
    assert skipped.attributes["obelisk.skip_reason"].startswith("dead branch: †r was not written")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "ValueError"
    # The activity runs inside its span: an MCP call's _meta, a delegate, carry it.
    assert seen == [ran.context.span_id]
    assert not any("gen_ai.tool.call.arguments" in s.attributes for s in tools.values())
    assert root.status.status_code is StatusCode.UNSET


def test_arguments_and_results_are_recorded_only_when_opted_in(
        otel: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONTENT_VARIABLE, "true")
    obelisk.run_sync([{"_tool": "e", "api_key": "k-1", "v": 2, "_outputPath": "†x"}], [],
                     activities={"e": lambda call, *_: {"v": call["v"]}})
    (span,) = otel.named("execute_tool e")
    assert '"v": 2' in span.attributes["gen_ai.tool.call.arguments"]
    assert "k-1" not in span.attributes["gen_ai.tool.call.arguments"]
    assert span.attributes["gen_ai.tool.call.result"] == '{"v": 2}'


def test_approvals_are_span_events_and_a_denial_an_error(otel: Telemetry) -> None:
    obelisk.run_sync([{"_tool": "e", "_outputPath": "†x"}], [],
                     activities={"e": lambda *_: 1}, approve=lambda call: "no thanks")
    (span,) = otel.named("execute_tool e")
    (event,) = span.events
    assert event.name == "obelisk.approval" and event.attributes["obelisk.verdict"] == "deny"
    assert span.status.status_code is StatusCode.ERROR and span.attributes["error.type"] == "Denied"


def test_spans_close_when_the_run_is_cancelled(otel: Telemetry) -> None:
    async def hang(*_: Any) -> Any:
        await asyncio.sleep(60)

    async def go() -> None:
        task = asyncio.ensure_future(obelisk.run_async(
            [{"_tool": "h", "_outputPath": "†x"}, {"_tool": "i", "_outputPath": "†y"}], [],
            activities={"h": hang, "i": hang}))
        await asyncio.sleep(0.05)
        task.cancel()
        await task

    asyncio.run(go())
    (root,) = otel.named("invoke_workflow")
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "cancelled"
    calls = otel.named("execute_tool")
    assert len(calls) == 2 and all(s.attributes["obelisk.outcome"] == "cancelled" for s in calls)
    assert all(s.end_time is not None for s in otel.spans())


def test_spans_close_when_the_run_raises(otel: Telemetry) -> None:
    def stop(*_: Any) -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        obelisk.run_sync([{"_tool": "k", "_outputPath": "†x"}], [], activities={"k": stop})
    (root,) = otel.named("invoke_workflow")
    assert root.attributes["error.type"] == "KeyboardInterrupt"
    (call,) = otel.named("execute_tool k")  # left open by the interrupt, closed with the run
    assert call.end_time is not None and call.end_time <= root.end_time


TOOL = {"type": "object", "properties": {"_tool": {"type": "string", "const": "add"},
                                         "a": {"type": "integer"}}}
SUMMARISE = {"type": "object", "properties": {
    "_tool": {"const": "summarise"}, "text": {"type": "string"},
    "_delegate": {"const": "anonymous"}, "_output": {"type": "string"}}}


def test_an_agent_run_with_a_delegate_makes_the_span_tree(otel: Telemetry) -> None:
    llm = ScriptedLLM([
        {"calls": [{"_tool": "summarise", "text": "long", "_outputPath": "†state.s"},
                   {"_tool": "add", "a": 1, "_outputPath": "†sum"}], "output": None},
        {"calls": [], "output": "short"},
        {"calls": [], "output": "†sum"}])
    result = obelisk.run_agent_sync([{"type": "task", "text": "go"}], llm,
                                    tools=[TOOL, SUMMARISE], activities={"add": lambda *_: 3})
    assert result.status == "completed"
    agents = otel.named("invoke_agent")
    outer = next(s for s in agents if s.parent is None)
    inner = next(s for s in agents if s.parent is not None)
    assert outer.attributes["gen_ai.agent.name"] == "obelisk"
    assert inner.attributes["gen_ai.agent.name"] == "anonymous"
    plans = [s for s in otel.named("plan ") if parent_of(s) == outer.context.span_id]
    assert [s.attributes["obelisk.tick"] for s in plans] == [1, 2]
    chats = [s for s in otel.named("chat ") if parent_of(s) in {p.context.span_id for p in plans}]
    assert len(chats) == 2
    chat = chats[0]
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert chat.attributes["gen_ai.provider.name"] == "obelisk.scripted"
    tools = [s for s in otel.named("execute_tool") if parent_of(s) == outer.context.span_id]
    assert {s.name for s in tools} == {"execute_tool summarise", "execute_tool add"}
    delegated = next(s for s in tools if s.name == "execute_tool summarise")
    assert parent_of(inner) == delegated.context.span_id  # the delegate nests in its call
    assert inner.context.trace_id == outer.context.trace_id
    usage = otel.metric("gen_ai.client.token.usage")
    assert {p.attributes["gen_ai.token.type"] for p in usage} == {"input", "output"}
    assert sum(p.sum for p in usage if p.attributes["gen_ai.token.type"] == "input") == sum(
        s.attributes["gen_ai.usage.input_tokens"] for s in otel.named("chat "))
    assert otel.metric("gen_ai.client.operation.duration")


def test_the_request_content_is_on_the_chat_span_only_when_opted_in(
        otel: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    def run() -> ReadableSpan:
        otel.exporter.clear()
        obelisk.run_agent_sync([{"type": "input", "input": {"request": "the-request-text"}}],
                               ScriptedLLM([{"calls": [], "output": "the-answer-text"}]))
        (chat,) = otel.named("chat ")
        return chat

    assert "gen_ai.input.messages" not in run().attributes
    monkeypatch.setenv(CONTENT_VARIABLE, "true")
    chat = run()
    # (was "go" in a task message the request never shows: "goes" in its system text)
    assert "the-request-text" in chat.attributes["gen_ai.input.messages"]
    assert "the-answer-text" in chat.attributes["gen_ai.output.messages"]


def test_without_a_tracer_provider_nothing_is_imported() -> None:
    code = ("import sys, obelisk\n"
            "obelisk.run_sync([{'_tool': 'a', '_outputPath': '†x'}], [], "
            "activities={'a': lambda *_: 1})\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry') "
            "or m.endswith('.spans')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "opentelemetry" not in out and "spans" not in out


def test_a_resumed_run_is_a_new_trace_linked_to_the_last_one(
        otel: Telemetry, tmp_path: pathlib.Path) -> None:
    plan = [{"_tool": "a", "_outputPath": "†x"}, {"_tool": "b", "v": "†x", "_outputPath": "†y"}]
    calls: list[str] = []

    def stop_at_b(call: dict[str, Any], *_: Any) -> Any:
        calls.append(call["_tool"])
        if call["_tool"] == "b" and calls.count("b") == 1:
            raise KeyboardInterrupt  # the process is stopped while b runs
        return 1

    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        with pytest.raises(KeyboardInterrupt):
            obelisk.run_durable(plan, [], journal=journal, run_id="R",
                                activities={"a": stop_at_b, "b": stop_at_b})
        (first,) = otel.named("invoke_workflow")
        assert first.attributes["obelisk.run.id"] == "R"
        otel.exporter.clear()
        result = obelisk.resume(journal, "R", activities={"a": stop_at_b, "b": stop_at_b})
        assert result.status == "completed" and calls == ["a", "b", "b"]
        (second,) = otel.named("invoke_workflow")
        assert second.context.trace_id != first.context.trace_id
        (link,) = second.links
        assert link.context.trace_id == first.context.trace_id
        assert link.context.span_id == first.context.span_id
        (call,) = otel.named("execute_tool")  # b, run again; a's outcome was recorded
        assert call.attributes["obelisk.call"] == 1
        assert call.parent is not None and call.parent.span_id == second.context.span_id
        rows = obelisk.journal.history(journal, "R")["events"]
        assert [r["event"] for r in rows].count("trace") == 2
        third = obelisk.resume(journal, "R", activities={})  # ended: links to the resume
        assert third.status == "completed"
        last = otel.named("invoke_workflow")[-1]
        assert last.links[0].context.span_id == second.context.span_id


def test_a_latent_calls_sub_request_is_a_chat_span_inside_the_call(otel: Telemetry) -> None:
    think = {"type": "object", "properties": {"_tool": {"const": "think"},
                                              "q": {"type": "string"},
                                              "_output": {"type": "string"}}}
    llm = ScriptedLLM([{"calls": [{"_tool": "think", "q": "why", "_outputPath": "†state.t"}],
                        "output": "†state.t"}], latent={"think": ["because"]})
    events: list[dict[str, Any]] = []
    result = obelisk.run_agent_sync([{"type": "task", "text": "go"}], llm, tools=[think],
                                    on_event=events.append)
    assert result.output == "because"
    (call,) = otel.named("execute_tool think")
    chats = otel.named("chat ")
    inside = [c for c in chats if parent_of(c) == call.context.span_id]
    assert len(chats) == 2 and len(inside) == 1
    assert inside[0].attributes["gen_ai.usage.output_tokens"] > 0
    sub = [e for e in events if e["type"] == "llm_request" and "node" in e]
    assert [(e["tick"], e["call"]) for e in sub] == [(1, 0)]
    assert events[-1]["input_tokens"] == sum(t.usage.input_tokens for t in result.ticks)


def test_an_llm_requests_retries_are_events_of_its_span(otel: Telemetry) -> None:
    from obelisk.llm.base import Failure
    from obelisk.llm.retry import Malformed, RetryPolicy, Transient, with_retries

    failures: list[Exception] = [Transient("busy", failure=Failure.RATE_LIMITED),
                                 Malformed("not JSON")]

    async def attempt() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    async def no_sleep(_: float) -> None:
        return None

    async def asked() -> str:
        with otel.provider.get_tracer("t").start_as_current_span("chat m"):
            return await with_retries(attempt, provider="p", policy=RetryPolicy(),
                                      sleep=no_sleep)

    assert asyncio.run(asked()) == "ok"
    (span,) = otel.named("chat m")
    assert [(e.name, e.attributes["obelisk.failure"]) for e in span.events] == [
        ("obelisk.retry", "rate_limited"), ("obelisk.retry", "malformed")]


def test_a_resumed_agent_run_links_to_its_last_trace(otel: Telemetry,
                                                     tmp_path: pathlib.Path) -> None:
    runs: list[int] = []

    def add(*_: Any) -> Any:
        runs.append(1)
        if len(runs) == 1:
            raise KeyboardInterrupt  # the process stops while tick 1's call runs
        return 3

    tick1 = {"calls": [{"_tool": "add", "a": 1, "_outputPath": "†sum"}], "output": None}
    tick2 = {"calls": [], "output": "†sum"}
    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        with pytest.raises(KeyboardInterrupt):
            obelisk.run_agent_sync([{"type": "task", "text": "add"}], ScriptedLLM([tick1]),
                                   tools=[TOOL], activities={"add": add}, journal=journal,
                                   run_id="A")
        (first,) = otel.named("invoke_agent")
        otel.exporter.clear()
        result = asyncio.run(obelisk.resume_agent(journal, "A", llm=ScriptedLLM([tick2]),
                                                  activities={"add": add}))
        assert result.status == "completed" and result.output == 3
        (second,) = otel.named("invoke_agent")
        (link,) = second.links
        assert link.context.span_id == first.context.span_id
        assert second.context.trace_id != first.context.trace_id


@pytest.mark.slow
def test_an_openai_request_is_a_chat_span_with_the_providers_answer(otel: Telemetry) -> None:
    import json
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).parent / "llm"))
    from servers import openai_completion, serve

    from obelisk.llm import OpenAILLM

    with serve([openai_completion(json.dumps({"calls": [], "output": "done"}))]) as server:
        llm = OpenAILLM("test-model", api_key="sk-test-key-for-spans",
                        base_url=server.base_url)
        result = obelisk.run_agent_sync([{"type": "task", "text": "go"}], llm)
    assert result.output == "done"
    (chat,) = otel.named("chat ")
    assert chat.name == "chat test-model"
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.response.id"] == "chatcmpl-1"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert (chat.attributes["gen_ai.usage.input_tokens"],
            chat.attributes["gen_ai.usage.output_tokens"]) == (11, 7)


def test_a_resumed_agent_runs_replayed_calls_make_no_spans_and_its_new_ones_do(
        otel: Telemetry, tmp_path: pathlib.Path) -> None:
    tick1 = {"calls": [{"_tool": "add", "a": 1, "_outputPath": "†one"},
                       {"_tool": "add", "a": 2, "_outputPath": "†two"}], "output": None}
    tick2 = {"calls": [{"_tool": "add", "a": 3, "_outputPath": "†sum"}], "output": None}
    tick3 = {"calls": [], "output": "†sum"}
    events: list[dict[str, Any]] = []
    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        obelisk.run_agent_sync([{"type": "task", "text": "add"}], ScriptedLLM([tick1]),
                               tools=[TOOL], activities={"add": lambda *_: 3},
                               journal=journal, run_id="A")  # fails: no answer for tick 2
        otel.exporter.clear()
        result = asyncio.run(obelisk.resume_agent(
            journal, "A", llm=ScriptedLLM([tick2, tick3]), activities={"add": lambda *_: 3},
            on_event=events.append))
    assert result.status == "completed"
    # Tick 1's calls are told again (replayed) but were traced by the first run.
    assert sum(1 for e in events if e["type"] == "call_finished" and e.get("replayed")) == 2
    (call,) = otel.named("execute_tool")
    assert call.attributes["obelisk.tick"] == 2
    (root,) = otel.named("invoke_agent")
    assert parent_of(call) == root.context.span_id
    assert len(otel.named("chat ")) == 2  # ticks 2 and 3 asked; tick 1's answer replayed


def test_a_plan_review_is_an_event_of_its_ticks_plan_span(otel: Telemetry) -> None:
    from obelisk.agent.hooks import RejectPlan

    llm = ScriptedLLM([{"calls": [{"_tool": "add", "a": 1, "_outputPath": "†s"}],
                        "output": None}, {"calls": [], "output": 1}])
    obelisk.run_agent_sync([{"type": "task", "text": "add"}], llm, tools=[TOOL],
                           activities={"add": lambda *_: 3}, mode="lazy",
                           on_plan=lambda plan: RejectPlan("no", by="ann"))
    first = next(s for s in otel.named("plan ") if s.attributes["obelisk.tick"] == 1)
    (review,) = [e for e in first.events if e.name == "obelisk.review"]
    assert review.attributes["obelisk.verdict"] == "reject"
    assert review.attributes["obelisk.reason"] == "no"
