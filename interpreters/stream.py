"""The typed event stream: what a run did, one JSON object per step, for an ``on_event``
callback, ``--events FILE``, OpenTelemetry spans (:mod:`obelisk.interpreters.spans`) and
``obelisk report``.

Every event is a dict with ``seq`` (counting up by one from 1 in a run), ``type`` and
``time`` (seconds since the epoch); call events carry ``call`` (the call's index), ``node``
(the node id: one per call and instance) and ``instance`` when there is one, and agent
runs' events ``tick``. The types and their fields are the package's JSON Schema
(``obelisk/interpreters/events.schema.json``) and docs/observability.md.

An :class:`Emitter` numbers events and hands them to the sinks; a
:class:`~obelisk.interpreters.follower.PlanFollower` turns one plan run's machine events
into call events. A run no one watches (no ``on_event``, no tracer provider) makes no
emitter and pays nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

__all__ = ["CONTENT_VARIABLE", "Emitter", "EventSink", "content_opted_in", "emitter_for",
           "event_schema", "following", "masked", "scoped", "span_event", "trace_carrier",
           "tracing_on"]

#: The OpenTelemetry GenAI conventions' opt-in for recording content (prompts, arguments,
#: results): obelisk's events and spans record content only when it is set.
CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CONTENT_ON = frozenset({"true", "1", "span_only", "span_and_event", "event_only"})

#: The fields that hold content (recorded only when opted in, masked always): a ``plan``
#: event's ``calls`` too (a ``run_started`` event's is a number, which masking keeps).
_CONTENT_FIELDS = frozenset({"params", "result", "content", "calls"})

#: Where events go: a callable given each event dict.
EventSink = Callable[[dict[str, Any]], None]

#: Where an observer's failure is reported (a warning with its traceback); obelisk never
#: configures logging: the program that runs it does.
LOG = logging.getLogger("obelisk.observe")


@runtime_checkable
class Tracer(Protocol):
    """A sink that also makes the OpenTelemetry context current while a call runs."""

    def __call__(self, event: dict[str, Any], /) -> None: ...

    def scope(self, event: dict[str, Any]) -> AbstractContextManager[Any]: ...

    def traceparent(self) -> str | None: ...


def content_opted_in() -> bool:
    """Whether the user opted in to recording content (:data:`CONTENT_VARIABLE`)."""
    return os.environ.get(CONTENT_VARIABLE, "").strip().lower() in _CONTENT_ON


def event_schema() -> dict[str, Any]:
    """The JSON Schema of the events (shipped in the package: ``events.schema.json``)."""
    import json
    from importlib import resources

    text = resources.files("obelisk.interpreters").joinpath("events.schema.json").read_text(
        encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


_SECRET_KEY = re.compile(r"(api[_-]?key|authorization|password|secret|token)$", re.I)
#: Such a key's string value in JSON text (a request's turns hold the calls and results
#: of earlier ticks as JSON).
_SECRET_IN_JSON = re.compile(
    r'("[^"\\]*(?:api[_-]?key|authorization|password|secret|token)"\s*:\s*)"(?:[^"\\]|\\.)*"',
    re.I)
_BEARER = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+")
_SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def masked(value: Any) -> Any:
    """Content as events and spans record it: the values of keys that name a secret
    (``api_key``, ``Authorization``, ``password``...), ``Bearer`` credentials and the
    provider keys of the environment made ``***``."""
    if isinstance(value, dict):
        return {k: "***" if isinstance(k, str) and _SECRET_KEY.search(k) else masked(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [masked(item) for item in value]
    if isinstance(value, str):
        value = _SECRET_IN_JSON.sub(r'\1"***"', _BEARER.sub(r"\1 ***", value))
        for name in _SECRET_VARIABLES:
            secret = os.environ.get(name)
            if secret and len(secret) >= 8 and secret in value:
                value = value.replace(secret, "***")
    return value


def tracing_on() -> bool:
    """Whether the user set an OpenTelemetry tracer provider. Imports nothing: without
    ``opentelemetry.trace`` imported, nobody set one."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    provider = trace.get_tracer_provider()
    return type(provider).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider")


class Emitter:
    """Numbers a run's events (``seq`` from 1) and hands each to every sink."""

    def __init__(self, sinks: Iterable[EventSink], *, content: bool | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.sinks = tuple(sinks)
        self.tracer: Tracer | None = next(
            (sink for sink in self.sinks if isinstance(sink, Tracer)), None)
        self.content = content_opted_in() if content is None else content
        self.clock = clock
        self.seq = 0

    def emit(self, kind: str, /, **fields: Any) -> dict[str, Any]:
        """Make the next event of type ``kind`` and hand it to the sinks."""
        self.seq += 1
        for name in _CONTENT_FIELDS.intersection(fields):
            fields[name] = masked(fields[name])
        event = {"seq": self.seq, "type": kind, "time": self.clock(), **fields}
        stopping: BaseException | None = None
        for sink in self.sinks:
            try:
                sink(event)
            except Exception as exc:  # noqa: BLE001 - an observer never breaks a run
                self.broke(sink, exc)
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: stop the run,
                stopping = stopping or exc  # the other sinks told first
        if stopping is not None:
            raise stopping
        return event

    def broke(self, sink: Any, exc: Exception) -> None:
        """``sink`` raised: reported once (a warning with the traceback), told nothing
        more of this run (the tracer's spans stay unfinished); the run goes on."""
        if not any(found is sink for found in self.sinks):
            return
        self.sinks = tuple(found for found in self.sinks if found is not sink)
        if sink is self.tracer:
            self.tracer = None
        LOG.warning("the run's observer %s raised at event %d (%s: %s); it is told no "
                    "more of this run, which goes on", _named(sink), self.seq,
                    type(exc).__name__, exc, exc_info=exc)

    def traceparent(self) -> str | None:
        """The tracer's root span as a W3C ``traceparent`` (None untraced, or when the
        tracer fails)."""
        tracer = self.tracer
        if tracer is None:
            return None
        try:
            return tracer.traceparent()
        except Exception as exc:  # noqa: BLE001 - an observer never breaks a run
            self.broke(tracer, exc)
            return None

    def relay(self, **marks: Any) -> EventSink | None:
        """A nested run's ``on_event`` (a delegate's): its events told in this stream,
        numbered in it and marked (``delegate``: the chain); None when only the tracer
        follows this run (the nested run traces itself)."""
        if all(sink is self.tracer for sink in self.sinks):
            return None

        def told(event: dict[str, Any]) -> None:
            # (a replayed event keeps the time its journal recorded)
            dropped = ("seq", "type") if "replayed" in event else ("seq", "type", "time")
            fields = {k: v for k, v in event.items() if k not in dropped}
            self.emit(event["type"], **fields, **marks)

        return told

    def scope(self, event: dict[str, Any]) -> AbstractContextManager[Any]:
        """The tracer's context for the call of ``event`` while it runs (else nothing)."""
        return nullcontext() if self.tracer is None else _Scope(self, self.tracer, event)


class _Scope:
    """A tracer's scope that never breaks the run: the tracer's failure to enter or
    leave it is reported (:meth:`Emitter.broke`); the block's own exception goes on."""

    __slots__ = ("emitter", "tracer", "event", "inner")

    def __init__(self, emitter: Emitter, tracer: Tracer, event: dict[str, Any]) -> None:
        self.emitter, self.tracer, self.event = emitter, tracer, event
        self.inner: AbstractContextManager[Any] | None = None

    def __enter__(self) -> None:
        try:
            inner = self.tracer.scope(self.event)
            inner.__enter__()
        except Exception as exc:  # noqa: BLE001 - an observer never breaks a run
            self.emitter.broke(self.tracer, exc)
            return
        self.inner = inner

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.inner is not None:
            try:
                self.inner.__exit__(kind, exc, traceback)
            except Exception as failure:  # noqa: BLE001 - never the block's exception
                self.emitter.broke(self.tracer, failure)


def _named(sink: Any) -> str:
    """An observer as a warning names it: a function's qualified name, else its ``repr``
    when its class says one (the command line's ``--events FILE``), else its class."""
    name = getattr(sink, "__qualname__", None)
    if isinstance(name, str):
        return name
    own_repr = "__repr__" in type(sink).__dict__
    return repr(sink) if own_repr else type(sink).__qualname__


def trace_carrier() -> dict[str, str]:
    """The current trace context as W3C ``traceparent``/``tracestate`` entries, for what
    leaves the process (an MCP call's ``_meta``, a remote executor's payload); empty when
    no tracer provider is set."""
    if not tracing_on():
        return {}
    try:
        from obelisk.interpreters.spans import carrier

        return carrier()
    except Exception as exc:  # noqa: BLE001 - tracing never breaks a run
        _failed("the trace context of a call", exc)
        return {}


def span_event(name: str, attributes: dict[str, Any]) -> None:
    """An event on the current span (an LLM request's retry), when a tracer provider is
    set; nothing otherwise."""
    if tracing_on():
        try:
            from obelisk.interpreters.spans import add_span_event

            add_span_event(name, attributes)
        except Exception as exc:  # noqa: BLE001 - tracing never breaks a run
            _failed(f"the span event {name}", exc)


_REPORTED: set[str] = set()


def _failed(what: str, exc: Exception) -> None:
    """OpenTelemetry failed outside a run's tracer (reported once a process for each
    ``what``: it would fail again for each call)."""
    if what not in _REPORTED:
        _REPORTED.add(what)
        LOG.warning("OpenTelemetry failed to make %s (%s: %s); obelisk goes on without it",
                    what, type(exc).__name__, exc, exc_info=exc)


def scoped(emitter: Emitter | None, event: dict[str, Any] | None) -> AbstractContextManager[Any]:
    """``event``'s span made current (a call's while it runs, a request's while it is
    asked), when someone traces."""
    return nullcontext() if emitter is None or event is None else emitter.scope(event)


def emitter_for(on_event: EventSink | None, *, content: bool | None = None) -> Emitter | None:
    """The emitter of a run: ``on_event`` and, when a tracer provider is set, the span
    maker; None when neither (the run then makes no event at all). An ``on_event`` whose
    ``content`` attribute is True is given content whatever the environment says (a
    journal's reader: the journal holds the content anyway)."""
    if content is None and getattr(on_event, "content", None) is True:
        content = True
    sinks: list[EventSink] = [] if on_event is None else [on_event]
    if tracing_on():
        try:
            from obelisk.interpreters.spans import SpanMaker

            sinks.append(SpanMaker())
        except Exception as exc:  # noqa: BLE001 - the run goes on, untraced
            _failed("a tracer", exc)
    return Emitter(sinks, content=content) if sinks else None


@contextmanager
def following(emitter: Emitter | None, kind: str, **fields: Any) -> Iterator[dict[str, Any]]:
    """``run_started`` then, however the block ends, ``run_ended`` (its ``status`` set by
    the block in the dict yielded, else ``failed`` on an exception)."""
    if emitter is None:
        yield {}
        return
    begun = time.monotonic()
    emitter.emit("run_started", kind=kind, **fields)
    ending: dict[str, Any] = {"status": "failed"}
    try:
        yield ending
    except BaseException as exc:
        cancelled = isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError))
        ending.update(status="cancelled" if cancelled else "failed", error=type(exc).__name__)
        raise
    finally:
        ending["duration"] = time.monotonic() - begun
        emitter.emit("run_ended", kind=kind, **ending)
