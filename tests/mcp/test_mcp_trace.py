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
