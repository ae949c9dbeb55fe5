"""An MCP call carries its span: with a tracer provider set, the server gets a W3C
``traceparent`` in ``_meta`` inside the call's ``execute_tool`` span (none without one)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp_servers import stdio_spec
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_observe_matrix import check_events, check_spans
from test_spans import Telemetry, otel  # noqa: F401 - the fixture

import obelisk
from obelisk.mcp import McpServers

pytestmark = pytest.mark.slow

PLAN = [{"_tool": "t.echo_meta", "value": "v", "_outputPath": "†state.meta"}]


def echoed() -> Any:
    async def main() -> obelisk.RunResult:
        async with McpServers([stdio_spec()]) as servers:
            return await obelisk.run_async(PLAN, tools=servers.tools,
                                           activities=servers.activities)

    return obelisk.resolve(asyncio.run(main()).context, "†state.meta.meta")


def test_the_call_span_reaches_the_server_in_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "traceparent" not in (echoed() or {})  # nothing is traced: nothing is sent
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    meta = echoed()
    spans = exporter.get_finished_spans()
    (call,) = [s for s in spans if s.name == "execute_tool t.echo_meta"]
    _, trace_id, span_id, _ = meta["traceparent"].split("-")
    assert int(trace_id, 16) == call.context.trace_id
    # The MCP SDK sends the context of its own client span, made inside the call's span
    # (obelisk's _meta entry is what an SDK that does not trace would send).
    (sent,) = [s for s in spans if s.context.span_id == int(span_id, 16)]
    assert sent.parent is not None and sent.parent.span_id == call.context.span_id


def test_an_mcp_call_is_told_and_traced_as_every_call(otel: Telemetry) -> None:  # noqa: F811
    # Issue 30's matrix (tests/test_observe_matrix.py), its MCP row: the events and spans
    # of a run whose call is an MCP server's tool.
    events: list[dict[str, Any]] = []

    async def main() -> obelisk.RunResult:
        async with McpServers([stdio_spec()]) as servers:
            return await obelisk.run_async(
                [*PLAN, {"_tool": "t.refuse", "reason": "no", "_outputPath": "†state.r"}],
                tools=servers.tools, activities=servers.activities, on_event=events.append)

    assert asyncio.run(main()).status.value == "completed"
    check_events(events, {"run_started", "plan", "call_ready", "call_started",
                          "call_finished", "run_ended"}, errors=("McpToolError",))
    check_spans(otel, events)  # the refused call: failed, its span in error with its type
    (refused,) = otel.named("execute_tool t.refuse")
    assert refused.attributes["obelisk.outcome"] == "failed"
    assert refused.attributes["error.type"] == "McpToolError"
