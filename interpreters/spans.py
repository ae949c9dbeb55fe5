"""OpenTelemetry spans and metrics made from the typed event stream (the ``obelisk[otel]``
extra: the API only, imported when the user has set a tracer provider).

The spans follow the OpenTelemetry GenAI semantic conventions (see docs/observability.md
for the version followed): ``invoke_workflow obelisk`` for a plan run and
``invoke_agent {name}`` for an agent run (a delegate's run is a nested one: its parent is
the ``execute_tool`` span of the call that delegated), ``plan {name}`` per tick holding
the ``chat {model}`` span of the LLM request, and ``execute_tool {tool}`` per call, the
calls siblings under the run's span. obelisk's own attributes are under ``obelisk.``;
approvals are span events; errors are the span's status with ``error.type``. Content
(arguments, results, prompts) is recorded only when the events carry it, that is when
the user opted in (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

__all__ = ["SpanMaker", "add_span_event", "carrier", "link_to"]

_SCOPE = "obelisk"
_ERROR_OUTCOMES = frozenset({"failed", "cancelled", "invalid"})


def _ns(event: dict[str, Any]) -> int:
    return int(event["time"] * 1e9)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=repr)


def add_span_event(name: str, attributes: dict[str, Any]) -> None:
    """An event on the current span."""
    trace.get_current_span().add_event(name, attributes)


def carrier() -> dict[str, str]:
    """The current trace context as W3C headers (``traceparent``, ``tracestate``), by the
    globally set propagator: what goes into what leaves the process."""
    from opentelemetry import propagate

    headers: dict[str, str] = {}
    propagate.inject(headers)
    return headers


def link_to(traceparent: str | None) -> list[Link]:
    """A link to the span a W3C ``traceparent`` names (a resumed run's earlier trace)."""
    if not traceparent:
        return []
    parts = traceparent.split("-")
    if len(parts) != 4:
        return []
    try:
        context = trace.SpanContext(int(parts[1], 16), int(parts[2], 16), is_remote=True,
                                    trace_flags=trace.TraceFlags(int(parts[3], 16)))
    except ValueError:
        return []
    return [Link(context, {"obelisk.link": "resumed"})]


class SpanMaker:
    """A sink of the event stream that makes spans and records the GenAI metrics."""

    def __init__(self) -> None:
        self.tracer = trace.get_tracer(_SCOPE)
        meter = metrics.get_meter(_SCOPE)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}",
            description="Number of input and output tokens used")
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s",
            description="GenAI operation duration")
        self.root: Span | None = None
        self.kind = "plan"
        self.name = "obelisk"
        self.ticks: dict[int, Span] = {}
        self.chats: dict[tuple[int, int], tuple[Span, dict[str, Any]]] = {}
        self.calls: dict[tuple[int | None, int], Span] = {}

    def traceparent(self) -> str | None:
        """The run's root span as a W3C ``traceparent`` (recorded for a resume's link)."""
        if self.root is None:
            return None
        found = self.root.get_span_context()
        return f"00-{found.trace_id:032x}-{found.span_id:016x}-{int(found.trace_flags):02x}"

    def __call__(self, event: dict[str, Any]) -> None:
        if "delegate" in event or "replayed" in event:
            return  # a delegate's run makes its own spans; what a journal retells was traced
        handler = getattr(self, "_" + event["type"], None)
        if handler is not None:
            handler(event)

    @contextmanager
    def scope(self, event: dict[str, Any]) -> Iterator[None]:
        """The call's span current while its activity runs (an MCP call's ``_meta`` and
        a delegate's run then carry it); a request's while it is asked (its retries are
        its span events)."""
        if event["type"] == "llm_request":
            found = self.chats.get(_chat_key(event))
            span = None if found is None else found[0]
        else:
            span = self.calls.get((event.get("tick"), event["node"]))
        if span is None:
            yield
            return
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield
        finally:
            otel_context.detach(token)

    # -- the run ---------------------------------------------------------------------------

    def _run_started(self, event: dict[str, Any]) -> None:
        self.kind = event["kind"]
        self.name = event.get("name") or "obelisk"
        operation = "invoke_agent" if self.kind == "agent" else "invoke_workflow"
        attributes: dict[str, Any] = {"gen_ai.operation.name": operation}
        if self.kind == "agent":
            attributes["gen_ai.agent.name"] = self.name
        else:
            attributes["obelisk.calls"] = event.get("calls", 0)
        if event.get("run"):
            attributes["obelisk.run.id"] = event["run"]
            attributes["gen_ai.conversation.id"] = event["run"]
        self.root = self.tracer.start_span(
            f"{operation} {self.name}", kind=SpanKind.INTERNAL, attributes=attributes,
            start_time=_ns(event), links=link_to(event.get("resumes")))

    def _run_ended(self, event: dict[str, Any]) -> None:
        for span in [*self.calls.values(), *(s for s, _ in self.chats.values()),
                     *self.ticks.values()]:
            span.end(end_time=_ns(event))  # what a failure left open closes with the run
        self.calls.clear()
        self.chats.clear()
        self.ticks.clear()
        if self.root is None:
            return
        self.root.set_attribute("obelisk.status", event.get("status", ""))
        if event.get("status") not in ("completed",):
            error = event.get("error") or event.get("status") or "failed"
            self.root.set_attribute("error.type", error)
            self.root.set_status(Status(StatusCode.ERROR, str(event.get("reason", error))))
        self.root.end(end_time=_ns(event))

    def _parent(self, span: Span | None) -> Any:
        return None if span is None else trace.set_span_in_context(span)

    # -- agent ticks and LLM requests ---------------------------------------------------------

    def _tick_started(self, event: dict[str, Any]) -> None:
        self.ticks[event["tick"]] = self.tracer.start_span(
            f"plan {self.name}", context=self._parent(self.root), start_time=_ns(event),
            attributes={"gen_ai.operation.name": "plan", "obelisk.tick": event["tick"]})

    def _tick_ended(self, event: dict[str, Any]) -> None:
        span = self.ticks.pop(event["tick"], None)
        if span is not None:
            if event.get("errors"):
                span.set_attribute("obelisk.errors", list(event["errors"]))
            span.end(end_time=_ns(event))

    def _plan_reviewed(self, event: dict[str, Any]) -> None:
        span = self.ticks.get(event["tick"])
        if span is not None:
            attributes = {"obelisk.verdict": event["verdict"]}
            if event.get("reason"):
                attributes["obelisk.reason"] = event["reason"]
            span.add_event("obelisk.review", attributes, timestamp=_ns(event))

    def _llm_request(self, event: dict[str, Any]) -> None:
        model = event.get("model") or "unknown"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
            "gen_ai.provider.name": event.get("provider") or "unknown",
            "obelisk.request.size": event.get("size", 0),
            "obelisk.stream": bool(event.get("stream"))}
        if "content" in event:
            attributes["gen_ai.input.messages"] = _text(event["content"])
        if "node" in event:  # a latent call's sub-request: inside the call's span
            parent = self.calls.get((event.get("tick"), event["node"]))
        else:
            parent = self.ticks.get(event.get("tick", 0))
        span = self.tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT,
                                      context=self._parent(parent or self.root),
                                      start_time=_ns(event), attributes=attributes)
        self.chats[_chat_key(event)] = (span, event)

    def _llm_answer(self, event: dict[str, Any]) -> None:
        found = self.chats.pop(_chat_key(event), None)
        if found is None:
            return
        span, request = found
        common = {"gen_ai.operation.name": "chat",
                  "gen_ai.provider.name": request.get("provider") or "unknown",
                  "gen_ai.request.model": request.get("model") or "unknown"}
        for name, value in (("gen_ai.response.id", event.get("response_id")),
                            ("gen_ai.response.model", event.get("response_model")),
                            ("gen_ai.usage.input_tokens", event.get("input_tokens")),
                            ("gen_ai.usage.output_tokens", event.get("output_tokens")),
                            ("obelisk.response.time_to_first_call", event.get("first_call"))):
            if value is not None:
                span.set_attribute(name, value)
        if event.get("finish"):
            span.set_attribute("gen_ai.response.finish_reasons", [event["finish"]])
        if "content" in event:
            span.set_attribute("gen_ai.output.messages", _text(event["content"]))
        for kind in ("input", "output"):
            if event.get(f"{kind}_tokens") is not None:
                self.tokens.record(event[f"{kind}_tokens"], {**common, "gen_ai.token.type": kind})
        if event.get("error"):
            common["error.type"] = event["error"]
            span.set_attribute("error.type", event["error"])
            span.set_status(Status(StatusCode.ERROR, event["error"]))
        self.duration.record(max(0.0, event["time"] - request["time"]), common)
        span.end(end_time=_ns(event))

    # -- calls ---------------------------------------------------------------------------------

    def _call_span(self, event: dict[str, Any]) -> Span:
        tool = event.get("tool") or "latent"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": _call_id(event), "obelisk.call": event["call"],
            "obelisk.node": event["node"]}
        for name in ("instance", "tick", "key"):
            if event.get(name) is not None:
                attributes[f"obelisk.{name}" if name != "key" else "obelisk.idempotency_key"] = (
                    event[name])
        if "params" in event:
            attributes["gen_ai.tool.call.arguments"] = _text(event["params"])
        span = self.tracer.start_span(f"execute_tool {tool}", context=self._parent(self.root),
                                      start_time=_ns(event), attributes=attributes)
        self.calls[(event.get("tick"), event["node"])] = span
        return span

    def _call_ready(self, event: dict[str, Any]) -> None:
        self._call_span(event)

    def _call_started(self, event: dict[str, Any]) -> None:
        span = self.calls.get((event.get("tick"), event["node"]))
        if span is None:  # a call a resumed run picks up: made ready before the resume
            span = self._call_span(event)
        span.add_event("obelisk.started", timestamp=_ns(event))

    def _call_approved(self, event: dict[str, Any]) -> None:
        span = self.calls.get((event.get("tick"), event["node"]))
        if span is not None:
            attributes = {"obelisk.verdict": event["verdict"]}
            if event.get("reason"):
                attributes["obelisk.reason"] = event["reason"]
            span.add_event("obelisk.approval", attributes, timestamp=_ns(event))

    def _call_finished(self, event: dict[str, Any]) -> None:
        span = self.calls.pop((event.get("tick"), event["node"]), None)
        if span is None:
            return
        span.set_attribute("obelisk.outcome", event["outcome"])
        span.set_attribute("obelisk.alternative", event.get("alternative", 0))
        for field, name in (("journal_seq", "obelisk.journal.seq"),
                            ("key", "obelisk.idempotency_key"),
                            ("output_path", "obelisk.output_path")):
            if event.get(field) is not None:
                span.set_attribute(name, event[field])
        if "result" in event:
            span.set_attribute("gen_ai.tool.call.result", _text(event["result"]))
        error = event.get("error")
        if event["outcome"] in _ERROR_OUTCOMES or error:
            kind = (error or {}).get("type") or event["outcome"]
            span.set_attribute("error.type", kind)
            span.set_status(Status(StatusCode.ERROR, (error or {}).get("message", kind)))
        span.end(end_time=_ns(event))

    def _call_skipped(self, event: dict[str, Any]) -> None:
        span = self._call_span(event)
        self.calls.pop((event.get("tick"), event["node"]), None)
        span.set_attribute("obelisk.outcome", "skipped")
        span.set_attribute("obelisk.skip_reason", event.get("reason", ""))
        span.end(end_time=_ns(event))


def _chat_key(event: dict[str, Any]) -> tuple[int, int]:
    """A request's key: its tick's, or a latent call's node in its tick."""
    return event.get("tick", 0), event.get("node", -1)


def _call_id(event: dict[str, Any]) -> str:
    tick = event.get("tick")
    return (f"{tick}/" if tick is not None else "") + str(event["node"])
