"""A run as the report shows it, folded from its typed events: each call's times (made
ready, approved, started, finished), outcome and details; each tick's LLM request and
answer; each plan's nodes and edges; the summary (status, duration, critical path,
tokens)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallView", "PlanView", "RunView", "TickView", "fold"]


@dataclass
class CallView:
    """One call (one node of one tick's plan)."""

    tick: int | None
    node: int
    call: int
    tool: str | None = None
    instance: str | None = None
    output: str | None = None
    written: Any = None  # the call as written (content)
    ready: float | None = None
    approved: float | None = None
    verdict: str | None = None
    started: float | None = None
    finished: float | None = None
    outcome: str = "pending"
    alternative: int | None = None
    reason: str = ""
    error: dict[str, Any] | None = None
    params: Any = None
    result: Any = None
    has_result: bool = False

    @property
    def key(self) -> str:
        return f"{self.tick if self.tick is not None else 0}:{self.node}"

    @property
    def label(self) -> str:
        text = f"call {self.call}" + (f" {self.tool}" if self.tool else "")
        return text + (f" [{self.instance}]" if self.instance is not None else "")


@dataclass
class PlanView:
    """One plan: the plain run's, or one tick's."""

    tick: int | None
    nodes: list[int] = field(default_factory=list)
    edges: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)
    edges_omitted: int = 0


@dataclass
class TickView:
    """One agent tick: its LLM request and answer."""

    tick: int
    started: float | None = None
    ended: float | None = None
    asked: float | None = None
    answered: float | None = None
    model: str = ""
    size: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    request: Any = None
    solution: Any = None
    error: str | None = None
    errors: list[str] = field(default_factory=list)
    review_asked: float | None = None  # on_plan (lazy mode): when asked, answered, what
    reviewed: float | None = None
    review: str = ""


@dataclass
class RunView:
    """The whole run."""

    kind: str = "plan"
    name: str = ""
    run: str | None = None
    status: str = "unfinished"
    reason: str = ""
    started: float | None = None
    ended: float | None = None
    calls: dict[str, CallView] = field(default_factory=dict)
    plans: dict[int | None, PlanView] = field(default_factory=dict)
    ticks: dict[int, TickView] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    events: int = 0

    @property
    def duration(self) -> float:
        if self.started is None or self.ended is None:
            return 0.0
        return max(0.0, self.ended - self.started)

    def call_of(self, event: dict[str, Any]) -> CallView:
        tick, node = event.get("tick"), int(event["node"])
        key = f"{tick if tick is not None else 0}:{node}"
        found = self.calls.get(key)
        if found is None:
            found = self.calls[key] = CallView(tick, node, int(event.get("call", node)))
            self.plans.setdefault(tick, PlanView(tick)).nodes.append(node)
        for name in ("tool", "instance"):
            if event.get(name) is not None:
                setattr(found, name, event[name])
        return found

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for call in self.calls.values():
            out[call.outcome] = out.get(call.outcome, 0) + 1
        return out

    def critical_path(self) -> list[CallView]:
        """The chain of calls, along the plan's edges, whose run times add up most: what
        the run could not have finished sooner than."""
        best: dict[str, tuple[float, str | None]] = {}
        for plan in self.plans.values():
            preds: dict[int, list[int]] = {}
            for writer, reader, _ in plan.edges:
                preds.setdefault(reader, []).append(writer)
            order = sorted(plan.nodes, key=lambda n: self._end(plan.tick, n))
            for node in order:
                key = _key(plan.tick, node)
                call = self.calls.get(key)
                if call is None:
                    continue
                own = _spent(call)
                before = [(best[_key(plan.tick, p)][0], _key(plan.tick, p))
                          for p in preds.get(node, ()) if _key(plan.tick, p) in best]
                prior = max(before, default=(0.0, None))
                best[key] = (own + prior[0], prior[1])
        if not best:
            return []
        last: str | None = max(best, key=lambda k: best[k][0])
        path: list[CallView] = []
        while last is not None and last in best:
            path.append(self.calls[last])
            last = best[last][1]
        return [c for c in reversed(path) if _spent(c) > 0 or len(path) == 1]

    def _end(self, tick: int | None, node: int) -> float:
        call = self.calls.get(_key(tick, node))
        return (call.finished or 0.0) if call is not None else 0.0


def _key(tick: int | None, node: int) -> str:
    return f"{tick if tick is not None else 0}:{node}"


def _spent(call: CallView) -> float:
    if call.started is None or call.finished is None:
        return 0.0
    return max(0.0, call.finished - call.started)


def fold(events: Iterable[dict[str, Any]]) -> RunView:
    """The run the events tell (the first run in them: a delegate's are its own)."""
    view = RunView()
    for event in events:
        if "delegate" in event:  # a delegate's run, relayed: not this run's calls
            continue
        handler = _HANDLERS.get(event.get("type", ""))
        if handler is not None:
            view.events += 1
            handler(view, event)
    return view


def _run_started(view: RunView, event: dict[str, Any]) -> None:
    view.kind = event.get("kind", "plan")
    view.name = event.get("name") or "obelisk"
    view.run = event.get("run")
    view.started = event.get("time")


def _run_ended(view: RunView, event: dict[str, Any]) -> None:
    view.status = event.get("status", "unfinished")
    view.reason = event.get("reason") or event.get("error") or ""
    view.ended = event.get("time")
    if event.get("input_tokens") is not None:
        view.input_tokens = event["input_tokens"]
        view.output_tokens = event.get("output_tokens", 0)


def _plan(view: RunView, event: dict[str, Any]) -> None:
    tick = event.get("tick")
    plan = view.plans.setdefault(tick, PlanView(tick))
    calls = event.get("calls") or []
    for index, node in enumerate(event.get("nodes", [])):
        found = view.call_of({**node, "tick": tick})
        found.output = node.get("output")
        if index < len(calls):
            found.written = calls[index]
    for writer, reader, alternatives in event.get("edges", []):
        plan.edges.append((int(writer), int(reader), tuple(alternatives)))
    plan.edges_omitted += int(event.get("edges_omitted", 0))


def _tick(view: RunView, event: dict[str, Any]) -> TickView:
    number = int(event["tick"])
    return view.ticks.setdefault(number, TickView(number))


def _tick_started(view: RunView, event: dict[str, Any]) -> None:
    _tick(view, event).started = event.get("time")


def _tick_ended(view: RunView, event: dict[str, Any]) -> None:
    tick = _tick(view, event)
    tick.ended = event.get("time")
    tick.errors = list(event.get("errors", []))


def _llm_request(view: RunView, event: dict[str, Any]) -> None:
    if "tick" not in event or "node" in event:  # (a latent call's: in its call's time)
        return
    tick = _tick(view, event)
    tick.asked, tick.model, tick.size = event.get("time"), event.get("model", ""), event.get(
        "size", 0)
    tick.request = event.get("content")


def _llm_answer(view: RunView, event: dict[str, Any]) -> None:
    if "tick" not in event:
        return
    if "node" in event:  # a latent call's sub-request: its tokens count for the run
        view.input_tokens += event.get("input_tokens") or 0
        view.output_tokens += event.get("output_tokens") or 0
        return
    tick = _tick(view, event)
    tick.answered = event.get("time")
    tick.input_tokens = event.get("input_tokens") or 0
    tick.output_tokens = event.get("output_tokens") or 0
    tick.solution = event.get("content")
    tick.error = event.get("error")
    if view.kind == "agent":
        view.input_tokens += tick.input_tokens
        view.output_tokens += tick.output_tokens


def _reviewed(view: RunView, event: dict[str, Any]) -> None:
    tick = _tick(view, event)
    tick.reviewed = event.get("time")
    tick.review_asked = event.get("asked", tick.reviewed)
    said = [event.get("verdict", ""), event.get("by"), event.get("reason")]
    tick.review = " ".join(str(part) for part in said if part)


def _ready(view: RunView, event: dict[str, Any]) -> None:
    call = view.call_of(event)
    call.ready = event.get("time")
    if "params" in event:
        call.params = event["params"]


def _approved(view: RunView, event: dict[str, Any]) -> None:
    call = view.call_of(event)
    call.approved, call.verdict = event.get("time"), event.get("verdict")


def _started(view: RunView, event: dict[str, Any]) -> None:
    view.call_of(event).started = event.get("time")


def _finished(view: RunView, event: dict[str, Any]) -> None:
    call = view.call_of(event)
    call.finished = event.get("time")
    call.outcome = event.get("outcome", "executed")
    call.alternative = event.get("alternative")
    call.reason = event.get("reason", "")
    call.error = event.get("error")
    if "result" in event:
        call.result, call.has_result = event["result"], True


def _skipped(view: RunView, event: dict[str, Any]) -> None:
    call = view.call_of(event)
    call.outcome, call.reason = "skipped", event.get("reason", "")
    call.finished = call.finished or event.get("time")


_HANDLERS = {
    "run_started": _run_started, "run_ended": _run_ended, "plan": _plan,
    "tick_started": _tick_started, "tick_ended": _tick_ended, "llm_request": _llm_request,
    "llm_answer": _llm_answer, "plan_reviewed": _reviewed, "call_admitted": lambda view, event: view.call_of(event),
    "call_ready": _ready, "call_approved": _approved, "call_started": _started,
    "call_finished": _finished, "call_skipped": _skipped,
}
