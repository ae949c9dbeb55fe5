"""The typed event stream: what a run did, one JSON object per step, for an ``on_event``
callback, ``--events FILE``, OpenTelemetry spans (:mod:`obelisk.interpreters.spans`) and
``obelisk report``.

Every event is a dict with ``seq`` (counting up by one from 1 in a run), ``type`` and
``time`` (seconds since the epoch); call events carry ``call`` (the call's index), ``node``
(the node id: one per call and instance) and ``instance`` when there is one, and agent
runs' events ``tick``. The types and their fields are the package's JSON Schema
(``obelisk/interpreters/events.schema.json``) and docs/observability.md.

An :class:`Emitter` numbers events and hands them to the sinks. A :class:`PlanFollower`
turns one plan run's machine events (the interpreters' observer events) into call events:
it folds them through the machine (``replay_open``/``replay_more``, the functions the run
used, no rule of its own) to learn each call's final status, its alternative and the calls
the machine skipped, with their reasons. A run no one watches (no ``on_event``, no tracer
provider) makes no follower and pays nothing.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.core.plain import thaw
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.common import reads_calls
from obelisk.interpreters.events import (
    Admitted,
    Cancelled,
    Closed,
    Decided,
    Finished,
    RunEvent,
    Started,
    Status,
)
from obelisk.interpreters.executors import AsyncExecutor, SyncExecutor
from obelisk.interpreters.machine import advance
from obelisk.interpreters.outcomes import Approve, Deny, Outcome
from obelisk.interpreters.replaying import Replayed, replay_more, replay_open
from obelisk.interpreters.state import RunState

__all__ = ["CONTENT_VARIABLE", "Emitter", "EventSink", "PlanFollower", "content_opted_in",
           "emitter_for", "event_schema", "masked"]

#: The OpenTelemetry GenAI conventions' opt-in for recording content (prompts, arguments,
#: results): obelisk's events and spans record content only when it is set.
CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CONTENT_ON = frozenset({"true", "1", "span_only", "span_and_event", "event_only"})

#: The fields that hold content (recorded only when opted in, masked always).
_CONTENT_FIELDS = frozenset({"params", "result", "content"})

#: Where events go: a callable given each event dict.
EventSink = Callable[[dict[str, Any]], None]


class Tracer(Protocol):
    """A sink that also makes the OpenTelemetry context current while a call runs."""

    def __call__(self, event: dict[str, Any], /) -> None: ...

    def scope(self, event: dict[str, Any]) -> AbstractContextManager[Any]: ...


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
        value = _BEARER.sub(r"\1 ***", value)
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
            (sink for sink in self.sinks if hasattr(sink, "scope")), None)
        self.content = content_opted_in() if content is None else content
        self.clock = clock
        self.seq = 0

    def emit(self, kind: str, /, **fields: Any) -> dict[str, Any]:
        """Make the next event of type ``kind`` and hand it to the sinks."""
        self.seq += 1
        for name in _CONTENT_FIELDS.intersection(fields):
            fields[name] = masked(fields[name])
        event = {"seq": self.seq, "type": kind, "time": self.clock(), **fields}
        for sink in self.sinks:
            sink(event)
        return event

    def scope(self, event: dict[str, Any]) -> AbstractContextManager[Any]:
        """The tracer's context for the call of ``event`` while it runs (else nothing)."""
        return nullcontext() if self.tracer is None else self.tracer.scope(event)


def emitter_for(on_event: EventSink | None, *, content: bool | None = None) -> Emitter | None:
    """The emitter of a run: ``on_event`` and, when a tracer provider is set, the span
    maker; None when neither (the run then makes no event at all)."""
    sinks: list[EventSink] = [] if on_event is None else [on_event]
    if tracing_on():
        from obelisk.interpreters.spans import SpanMaker

        sinks.append(SpanMaker())
    return Emitter(sinks, content=content) if sinks else None


class PlanFollower:
    """One plan run's call events, from the machine's run events (an observer)."""

    def __init__(self, emitter: Emitter, plan: CompiledPlan, context: Context | None, *,
                 tick: int | None = None, isolate_invalid: bool = False, open: bool = False,
                 approvals: bool = False, resumed: Replayed | None = None) -> None:
        self.emitter, self.plan, self.tick = emitter, plan, tick
        self.approvals = approvals
        self.replayed = resumed if resumed is not None else replay_open(
            plan, context, (), isolate_invalid=isolate_invalid, open=open)
        self.reported = set(self.replayed.state.reasons)  # skips told already
        self.ended: set[int] = set()
        self.cancelled = False
        self.lost = False  # the fold failed (a run picked up midway): events go on, unfolded
        self.reads_calls = emitter.content  # the call of a Started event: only as content

    def _call(self, node: int, **fields: Any) -> dict[str, Any]:
        found = self.replayed.state.plan.nodes[node]
        out: dict[str, Any] = {"call": found.index, "node": node}
        if found.instance is not None:
            out["instance"] = found.instance
        if self.tick is not None:
            out["tick"] = self.tick
        out.update(fields)
        return out

    def _fold(self, event: RunEvent) -> None:
        if self.lost:
            return
        try:
            self.replayed = replay_more(self.replayed, (event,), approvals=self.approvals)
        except Exception:  # noqa: BLE001 - a run the follower did not see begin: it
            self.lost = True  # still tells what it sees, and never stops the run
            return
        self._skips(self.replayed.state)

    def _skips(self, state: RunState) -> None:
        """``call_skipped`` for each call the machine skipped since last told."""
        reasons = state.reasons
        if len(reasons) == len(self.reported):
            return
        for node in sorted(set(reasons) - self.reported):
            self.reported.add(node)
            if state.status[node] is Status.SKIPPED:
                self.emitter.emit("call_skipped", **self._call(node, reason=reasons[node]))

    def __call__(self, event: RunEvent) -> None:
        """Observe one machine event."""
        emit = self.emitter.emit
        match event:
            case Started(node=node, call=call):
                found = self.replayed.state.plan.nodes[node]
                fields: dict[str, Any] = {"tool": found.tool}
                if self.emitter.content:
                    fields["params"] = call
                self._fold(event)
                emit("call_ready", **self._call(node, **fields))
            case Decided(node=node, verdict=verdict):
                self._fold(event)
                emit("call_approved", **self._call(node, **_verdict(verdict)))
                self._ended(node)
            case Finished(node=node, outcome=outcome):
                self._fold(event)
                self._ended(node, outcome)
            case Cancelled():
                self.cancelled = True
                running = [n for n, s in enumerate(self.replayed.state.status)
                           if s is Status.RUNNING]
                self._fold(event)
                for node in running:
                    self._ended(node)
            case Admitted(plan=extended):
                before = len(self.replayed.state.plan.nodes)
                self._fold(event)
                for added in extended.nodes[before:]:
                    emit("call_admitted", **self._call(added.id, tool=added.tool))
            case Closed():
                self._fold(event)

    def _ended(self, node: int, outcome: Outcome | None = None) -> None:
        """``call_finished`` for a call that reached a final status (once)."""
        state = self.replayed.state
        status = state.status[node] if node < len(state.status) else Status.RUNNING
        if self.lost and outcome is not None:
            status = Status.FAILED if type(outcome).__name__ == "Raised" else Status.EXECUTED
        if status in (Status.PENDING, Status.RUNNING) or node in self.ended:
            return
        self.ended.add(node)
        fields: dict[str, Any] = {"outcome": status.value,
                                  "alternative": state.alts.get(node, 0)}
        if node in state.reasons:
            fields["reason"] = state.reasons[node]
        error = state.errors.get(node)
        if error is not None:
            fields["error"] = _error_of(thaw(error))
        if self.emitter.content and outcome is not None and hasattr(outcome, "value"):
            fields["result"] = _plain(outcome.value)
        self.emitter.emit("call_finished", **self._call(node, **fields))

    def started(self, invocation: Invocation) -> dict[str, Any]:
        """``call_started``: the call's activity is about to run."""
        return self.emitter.emit("call_started", **self._call(invocation.node))

    def end(self) -> None:
        """The run's last skips: those the machine's final ``advance`` makes (a run
        returns without asking it once nothing can run)."""
        state = self.replayed.state
        if not self.cancelled and not self.lost and state.done and not state.open:
            self._skips(advance(state)[0])

    def wrap_sync(self, invoke: SyncExecutor) -> SyncExecutor:
        """The sync executor ``invoke``, telling ``call_started`` first and running in
        the tracer's context."""
        def run(invocation: Invocation, wait: Callable[[Any], Any]) -> Outcome:
            with self.emitter.scope(self.started(invocation)):
                return invoke(invocation, wait)
        return run

    def wrap_async(self, invoke: AsyncExecutor) -> AsyncExecutor:
        """The asyncio executor ``invoke``, as :meth:`wrap_sync`."""
        async def run(invocation: Invocation) -> Outcome:
            with self.emitter.scope(self.started(invocation)):
                return await invoke(invocation)
        return run


class Joined:
    """Two observers of one run, in order (the caller's, then the follower)."""

    def __init__(self, first: Any, second: PlanFollower) -> None:
        self.first, self.second = first, second
        self.reads_calls = reads_calls(first) or second.reads_calls

    def __call__(self, event: RunEvent) -> None:
        self.first(event)
        self.second(event)


def joined(observer: Any, follower: PlanFollower) -> Any:
    """The run's observer: ``follower`` alone, or after the caller's ``observer``."""
    return follower if observer is None else Joined(observer, follower)


def _error_of(message: Any) -> dict[str, str]:
    """An error message's type and text."""
    data = message.get("data") if isinstance(message, dict) else None
    found = data.get("error") if isinstance(data, dict) else None
    if not isinstance(found, dict):
        return {"type": "", "message": ""}
    return {"type": str(found.get("type", "")), "message": str(found.get("message", ""))}


def _verdict(verdict: Any) -> dict[str, Any]:
    if isinstance(verdict, Approve):
        return {"verdict": "approve"}
    if isinstance(verdict, Deny):
        return {"verdict": "deny", "reason": verdict.reason}
    return {"verdict": "replace"}


def _plain(value: Any) -> Any:
    """A value as JSON can hold it (its repr when it is not JSON)."""
    from obelisk.interpreters.records import json_or_repr

    return json_or_repr(value)


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
