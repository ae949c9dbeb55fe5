"""The run state machine (SEMANTICS §7): pure functions over an immutable run state.

Every interpreter drives the same four steps and differs only in how it invokes
activities and how many run at once:

    state = begin(plan)                       # every call PENDING
    state, ready = advance(state)             # WAIT / READY / SKIPPED for the candidates
    state, inv = decide(state, inv, verdict)  # optional: the approval hook's answer
    state = complete(state, node, outcome, date)  # write outputs or record the failure
    result = finish(state)                    # error messages appended, in call order

Invariants (kept by every function here, stated once):
- ``waiting[n]`` counts ``n``'s predecessors that have not finished;
- ``candidates`` holds (in any order, each once) the PENDING nodes whose ``waiting`` is 0;
- ``running`` counts the RUNNING nodes; a run is over when no candidate is left and
  nothing runs;
- the context only grows, by messages written by ``complete``; error messages are kept
  aside in ``errors`` and appended by ``finish``, ordered by node (call index, instance).
Scheduling touches only the successors of what finished: O(edges) for a whole run.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Collection, Mapping
from typing import Any, TypeAlias, Union

from attrs import evolve, field, frozen
from pyrsistent import PMap, PVector, pmap, pvector

from obelisk.compiler.parse import parse_reference, unescape_literal
from obelisk.compiler.plan import CompiledPlan, Node
from obelisk.compiler.tools import Tool, resolve_activity, validate_output, validate_params
from obelisk.core.ast import Reference
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, ObeliskError, WriteError
from obelisk.core.messages import PAYLOAD_KEYS, Write
from obelisk.core.paths import Path
from obelisk.core.resolve import evaluate, lookup_in
from obelisk.core.values import MISSING, Frozen, Json, NotJSONError, freeze, present, thaw


class Status(str, enum.Enum):
    """Where a call is in its life. The last four are final."""

    PENDING = "pending"
    RUNNING = "running"
    EXECUTED = "executed"
    SKIPPED = "skipped"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL = frozenset({Status.EXECUTED, Status.SKIPPED, Status.FAILED, Status.CANCELLED})


# -- outcomes: what an invocation produced -----------------------------------------------


@frozen
class Returned:
    """A plain result: goes to the first alternative of ``_outputPath``."""

    value: Any


@frozen
class Chose:
    """An explicit choice of alternative (``obelisk.Branch``, a mock's ``branch``)."""

    path: str
    value: Any


@frozen
class Raised:
    """The activity failed (an exception, a timeout, a mock's ``raise``)."""

    type: str
    message: str
    data: Any = MISSING
    #: A broken contract (NotJSON, NoMock...) never goes to an error branch.
    contract: bool = False


Outcome: TypeAlias = Union[Returned, Chose, Raised]


# -- approval: what the hook answered ----------------------------------------------------


@frozen
class Approve:
    """Run the call as it is."""


@frozen
class Deny:
    """Do not run the call; it fails with an error of type ``Denied``."""

    reason: str = "denied"


@frozen
class Replace:
    """Run this call instead: its parameters replace the resolved ones (meta-properties
    stay as compiled, since the dataflow graph was built from them)."""

    call: Mapping[str, Any]


Verdict: TypeAlias = Union[Approve, Deny, Replace]


def as_verdict(answer: Any) -> Verdict:
    """An approval hook's answer as a Verdict: ``True``/``None`` approve, ``False`` denies,
    a string denies with that reason, a dict replaces the call."""
    if isinstance(answer, (Approve, Deny, Replace)):
        return answer
    if answer is True or answer is None:
        return Approve()
    if answer is False:
        return Deny()
    if isinstance(answer, str):
        return Deny(answer)
    if isinstance(answer, Mapping):
        return Replace(answer)
    raise TypeError(
        f"an approval hook returns True, False, a reason string, a replacement call, or "
        f"Approve/Deny/Replace, not {type(answer).__name__}"
    )


# -- the state ---------------------------------------------------------------------------


@frozen
class Event:
    """One step of a run, for the trace: ``kind`` is ready, skipped, started, wrote,
    executed, failed, denied or cancelled."""

    kind: str
    node: int
    detail: str = ""

    def to_json(self, plan: CompiledPlan) -> dict[str, Any]:
        node = plan.nodes[self.node]
        out: dict[str, Any] = {"event": self.kind, "call": node.index}
        if node.instance is not None:
            out["instance"] = node.instance
        if self.detail:
            out["detail"] = self.detail
        return out


@frozen
class Invocation:
    """A call ready to run: its node, the resolved call, the tool, the scoped context."""

    node: int
    call: dict[str, Any] = field(eq=False)
    tool: Tool | None
    context: Context


@frozen
class RunState:
    """An immutable snapshot of a run. See the module docstring for its invariants."""

    plan: CompiledPlan
    context: Context
    status: PVector[Status]
    waiting: PVector[int]
    candidates: tuple[int, ...]
    running: int
    errors: PMap[int, Any]
    reasons: PMap[int, str]
    trace: PVector[Event]

    @property
    def done(self) -> bool:
        """True when no call can make progress: nothing pending is ready, nothing runs."""
        return not self.candidates and self.running == 0


def begin(plan: CompiledPlan, context: Context | None = None) -> RunState:
    """The state before anything has run. Refuses a plan with error diagnostics."""
    if not plan.ok:
        raise PlanRefused(plan)
    waiting = pvector(len(p) for p in plan.predecessors)
    return RunState(
        plan=plan, context=context if context is not None else plan.context,
        status=pvector([Status.PENDING] * len(plan.nodes)), waiting=waiting,
        candidates=tuple(n for n, count in enumerate(waiting) if count == 0),
        running=0, errors=pmap(), reasons=pmap(), trace=pvector(),
    )


class PlanRefused(ObeliskError):
    """A plan with error diagnostics cannot run; ``diagnostics`` says why."""

    def __init__(self, plan: CompiledPlan) -> None:
        from obelisk.compiler.diagnostics import render_text

        self.plan = plan
        self.diagnostics = plan.errors
        shown = "\n".join(render_text(d) for d in self.diagnostics[:10])
        more = len(self.diagnostics) - 10
        super().__init__(
            f"the plan has {len(self.diagnostics)} error(s) and cannot run:\n{shown}"
            + (f"\n... and {more} more" if more > 0 else "")
        )


# -- advance: decide what the candidates do ------------------------------------------------


def advance(state: RunState) -> tuple[RunState, tuple[Invocation, ...]]:
    """Evaluate every candidate against the current context.

    A candidate whose parameters are all present becomes RUNNING and is returned as an
    invocation (after its resolved parameters pass the tool's schema). One with a MISSING
    parameter is SKIPPED: silently when a call of the plan could have written it (a dead
    branch), with a ``MissingValue`` error when nothing in the plan writes it. Skips
    finish the node, which may make its successors candidates in turn.
    """
    ready: list[Invocation] = []
    while state.candidates:
        batch = sorted(state.candidates)
        state = evolve(state, candidates=())  # skips below may add new candidates
        for node_id in batch:
            state, invocation = _evaluate(state, node_id)
            if invocation is not None:
                ready.append(invocation)
    return state, tuple(ready)


def _evaluate(state: RunState, node_id: int) -> tuple[RunState, Invocation | None]:
    plan = state.plan
    node = plan.nodes[node_id]
    lookup = lookup_in(state.context, node.instance)
    values: dict[Path, Frozen] = {}
    dead: list[str] = []
    missing: list[str] = []
    for param in node.params:
        try:
            value = evaluate(param.expr, lookup)
        except WriteError as exc:
            return _fail(state, node_id, "WriteError", str(exc)), None
        if present(value):
            values[param.path] = value
            continue
        if any(read.writers for read in param.reads):
            dead.append(param.text)
        else:
            missing.append(param.text)
    if missing:
        refs = ", ".join(missing)
        return _fail(state, node_id, "MissingValue",
                     f"{refs} has no value, and no call in the plan writes it",
                     status=Status.SKIPPED), None
    if dead:
        reason = f"dead branch: {', '.join(dead)} was not written"
        return _finish(state, node_id, Status.SKIPPED, reason, Event("skipped", node_id, reason)), None
    call = resolved_call(plan, node, values)
    tool = plan.tool_of(node)
    if tool is not None:
        problems = validate_params(tool, call)
        if problems:
            text = "; ".join(f"{p or '/'}: {m}" for p, m in problems)
            return _fail(state, node_id, "ParamSchema", f"resolved parameters fail {tool.name}'s "
                         f"schema: {text}"), None
    state = RunState(
        plan=plan, context=state.context, status=state.status.set(node_id, Status.RUNNING),
        waiting=state.waiting, candidates=state.candidates, running=state.running + 1,
        errors=state.errors, reasons=state.reasons,
        trace=state.trace.append(Event("started", node_id)),
    )
    return state, Invocation(node_id, call, tool, scoped_context(state.context, node))


def resolved_call(plan: CompiledPlan, node: Node, values: Mapping[Path, Frozen]) -> dict[str, Any]:
    """The call as written with every parameter expression replaced by its value.

    Parameter strings that start with ``\\†`` lose the backslash; meta-properties are
    never resolved. A copy made by instancing carries its ``_instance``, so the activity
    knows which instance it works for. Returns a fresh plain dict each time.
    """
    call: Any = json.loads(_template(plan, node))
    for path, value in values.items():
        target = call
        for segment in path[:-1]:
            target = target[segment]
        target[path[-1]] = thaw(value)
    return call  # type: ignore[no-any-return]


def _template(plan: CompiledPlan, node: Node) -> str:
    key = ("call-template", node.id)
    text = plan.memo.get(key)
    if text is None:
        text = plan.memo[key] = _call_text(node)
    return text


def _call_text(node: Node) -> str:
    # The call as JSON text, its instance added and literal \† strings unescaped:
    # json.loads of it is the cheapest fresh copy to resolve parameters into (nodes are
    # immutable, so the text is cached).
    call: Any = thaw(node.call)
    if node.instance is not None:
        call["_instance"] = node.instance
    for key in [k for k in call if not k.startswith("_")]:
        call[key] = _unescape(call[key])
    return json.dumps(call, ensure_ascii=False)


def _unescape(value: Any) -> Any:
    if isinstance(value, str):
        return unescape_literal(value)
    if isinstance(value, dict):
        return {k: _unescape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unescape(v) for v in value]
    return value


_EMPTY = Context()


def scoped_context(context: Context, node: Node) -> Context:
    """What an activity sees (§7.5): messages of the kinds in ``_scopes`` that are global
    or this call's instance. No ``_scopes``: an empty context."""
    if not node.scopes:
        return _EMPTY
    kinds = set(node.scopes)
    kept = []
    for message in context.messages:
        mtype = message.get("type")
        kind = message.get("kind", mtype) if mtype in PAYLOAD_KEYS else mtype
        instance = message.get("_instance")
        if kind in kinds and (instance is None or instance == node.instance):
            kept.append(message)
    return Context.of(kept)


# -- approval -----------------------------------------------------------------------------


def decide(state: RunState, invocation: Invocation, verdict: Verdict) -> tuple[RunState, Invocation | None]:
    """Apply an approval verdict to a ready invocation: the invocation to run, or None."""
    node_id = invocation.node
    match verdict:
        case Approve():
            return state, invocation
        case Deny(reason=reason):
            return _fail(state, node_id, "Denied", reason, event="denied"), None
        case Replace(call=replacement):
            call = {k: v for k, v in invocation.call.items() if k.startswith("_")}
            call.update({k: v for k, v in replacement.items() if not k.startswith("_")})
            if invocation.tool is not None:
                problems = validate_params(invocation.tool, call)
                if problems:
                    text = "; ".join(f"{p or '/'}: {m}" for p, m in problems)
                    return _fail(state, node_id, "ParamSchema",
                                 f"the replacement call fails {invocation.tool.name}'s schema: {text}"), None
            state = evolve(state, trace=state.trace.append(Event("replaced", node_id)))
            return state, evolve(invocation, call=call)
    raise TypeError(f"not a verdict: {verdict!r}")  # pragma: no cover


# -- complete: handle an outcome ----------------------------------------------------------


def complete(state: RunState, node_id: int, outcome: Outcome, date: str) -> RunState:
    """Record what a RUNNING call produced (§7 step 6) and release its successors.

    A plain value goes to the first alternative, a choice to the named one, an exception
    to the last alternative when there are two or more (else an error message). Broken
    contracts (NotJSON, OutputSchema, BranchContract, WriteError) write nothing and fail
    the call. Every written path is one message with ``_outputPath``, ``_outputMethod``,
    ``_call``, ``_date`` and ``_instance``.
    """
    if state.status[node_id] is not Status.RUNNING:
        raise ValueError(f"node {node_id} is not running")
    node = state.plan.nodes[node_id]  # _finish takes it out of ``running``
    output = node.output
    match outcome:
        case Raised(type=etype, message=message, data=data, contract=contract):
            if output is not None and len(output.alternatives) >= 2 and not contract:
                error: dict[str, Any] = {"type": etype, "message": message}
                if data is not MISSING:
                    error["data"] = _json_or_repr(data)  # as in an error message (_fail)
                return _write(state, node_id, len(output.alternatives) - 1, error, date,
                              f"{etype} routed to alternative {len(output.alternatives)}")
            return _fail(state, node_id, etype, message, data=data)
        case Returned(value=value):
            if output is None:  # fire-and-forget: the result is dropped
                return _finish(state, node_id, Status.EXECUTED, "", Event("executed", node_id))
            return _write(state, node_id, 0, value, date, "")
        case Chose(path=path, value=value):
            alt = _alternative(node, path)
            if alt is None:
                declared = node.output_text or "(no _outputPath)"
                return _fail(state, node_id, "BranchContract",
                             f"the activity chose {path!r}, which is not an alternative of "
                             f"{declared}")
            return _write(state, node_id, alt, value, date, f"chose alternative {alt + 1}")
    raise TypeError(f"not an outcome: {outcome!r}")  # pragma: no cover


def _alternative(node: Node, path: str) -> int | None:
    if node.output is None:
        return None
    try:
        chosen = parse_reference(path.strip())
    except (ExpressionSyntaxError, TypeError):
        return None
    for alt, group in enumerate(node.output.alternatives):
        if any(t.kind == chosen.kind and t.path == chosen.path for t in group.targets):
            return alt
    return None


def _write(state: RunState, node_id: int, alt: int, value: Any, date: str, note: str) -> RunState:
    node = state.plan.nodes[node_id]
    assert node.output is not None
    try:
        frozen = freeze(value)
    except NotJSONError as exc:
        return _fail(state, node_id, "NotJSON", f"the result is not JSON: {exc}")
    tool = state.plan.tool_of(node)
    if alt == 0 and tool is not None:
        problems = validate_output(tool, thaw(frozen))
        if problems:
            text = "; ".join(f"{p or '/'}: {m}" for p, m in problems)
            return _fail(state, node_id, "OutputSchema",
                         f"the result fails {tool.name}'s _output schema: {text}")
    context = state.context
    events = []
    for number, target in enumerate(node.output.alternatives[alt].targets):
        key = ("message-base", node_id, alt, number)
        base = state.plan.memo.get(key)
        if base is None:
            base = state.plan.memo[key] = message_base(node, target)
        write = Write(target.kind, node.instance, target.path, node.method, frozen)
        context, error = context.append_write(
            output_message(node, target, frozen, date, base), write)
        if error is not None:  # nothing of a failed fan-out is kept
            # Leave out the message's position in the context: it depends on timing,
            # and the report must not (SEMANTICS §7, determinism).
            timeless = WriteError(error.reason, kind=error.kind, path=error.path,
                                  method=error.method, instance=error.instance)
            return _fail(state, node_id, "WriteError", str(timeless))
        events.append(Event("wrote", node_id, base["_outputPath"]))
    events.append(Event("executed", node_id, note))
    return _finish(state, node_id, Status.EXECUTED, note, *events, context=context)


def output_message(node: Node, target: Reference, value: Frozen, date: str,
                   base: PMap[str, Any] | None = None) -> PMap[str, Any]:
    """The data message that writes ``value`` to one target of a call's output (§7.7),
    built frozen (every part of it already is). ``base``: :func:`message_base`'s result,
    when the caller has it cached."""
    data: Any = value
    for segment in reversed(target.path):
        data = pmap({str(segment): data})
    message = (base if base is not None else message_base(node, target)).evolver()
    message["data"] = data
    message["_date"] = date
    return message.persistent()


def message_base(node: Node, target: Reference) -> PMap[str, Any]:
    """The part of an output message that is the same every time the call writes."""
    base: dict[str, Any] = {
        "type": "data", "kind": target.kind, "_outputPath": str(target),
        "_outputMethod": node.method.value, "_call": node.call,
    }
    if node.instance is not None:
        base["_instance"] = node.instance
    return pmap(base)


def error_message(node: Node, etype: str, message: str, data: Any = MISSING) -> dict[str, Any]:
    """The error message a failed or refused call adds to the context (at the run's end)."""
    error: dict[str, Any] = {"type": etype, "message": message}
    if data is not MISSING:
        error["data"] = data
    out: dict[str, Any] = {"type": "error", "data": {"call": thaw(node.call), "error": error}}
    if node.instance is not None:
        out["_instance"] = node.instance
    return out


def _json_or_repr(data: Any) -> Any:
    # An error's details that are not JSON are kept as their repr: the failure must still
    # be recorded, routed or not.
    try:
        freeze(data)
    except NotJSONError:
        try:
            return repr(data)
        except Exception:  # noqa: BLE001 - a broken __repr__ must not crash the run
            return type(data).__name__
    return data


def _fail(state: RunState, node_id: int, etype: str, message: str, *, data: Any = MISSING,
          status: Status = Status.FAILED, event: str | None = None) -> RunState:
    node = state.plan.nodes[node_id]
    if data is not MISSING:
        data = _json_or_repr(data)
    errors = state.errors.set(node_id, error_message(node, etype, message, data))
    kind = event or ("skipped" if status is Status.SKIPPED else "failed")
    return _finish(state, node_id, status, f"{etype}: {message}",
                   Event(kind, node_id, f"{etype}: {message}"), errors=errors)


def _finish(state: RunState, node_id: int, status: Status, reason: str, *events: Event,
            context: Context | None = None, errors: PMap[int, Any] | None = None) -> RunState:
    # One new state per finished call: its status, its successors released, its events.
    waiting = state.waiting
    released = []
    for successor in state.plan.successors[node_id]:
        count = waiting[successor] - 1
        waiting = waiting.set(successor, count)
        if count == 0 and state.status[successor] is Status.PENDING:
            released.append(successor)
    was_running = state.status[node_id] is Status.RUNNING
    trace = state.trace
    for event in events:
        trace = trace.append(event)
    return RunState(
        plan=state.plan,
        context=state.context if context is None else context,
        status=state.status.set(node_id, status),
        waiting=waiting,
        candidates=state.candidates + tuple(released) if released else state.candidates,
        running=state.running - 1 if was_running else state.running,
        errors=state.errors if errors is None else errors,
        reasons=state.reasons.set(node_id, reason) if reason else state.reasons,
        trace=trace,
    )


def cancel(state: RunState) -> RunState:
    """Mark every running call CANCELLED (the run was cancelled; finished results stay)."""
    status = state.status
    trace = state.trace
    for node_id, current in enumerate(state.status):
        if current is Status.RUNNING:
            status = status.set(node_id, Status.CANCELLED)
            trace = trace.append(Event("cancelled", node_id))
    return evolve(state, status=status, running=0, candidates=(), trace=trace)


# -- the result ---------------------------------------------------------------------------


@frozen
class CallOutcome:
    """How one call (one node) ended: executed, skipped, failed, cancelled or pending."""

    call: int
    instance: str | None
    tool: str | None
    outcome: str
    reason: str
    #: The type of the error message the call added, if it added one.
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"call": self.call, "instance": self.instance, "tool": self.tool,
               "outcome": self.outcome, "reason": self.reason}
        if self.error is not None:
            out["error"] = self.error
        return out


@frozen
class RunResult:
    """What a run produced: the final context (error messages appended), each call's
    outcome, the error messages, the trace, and the status (completed or cancelled)."""

    context: Context
    calls: tuple[CallOutcome, ...]
    errors: tuple[Json, ...]
    trace: tuple[dict[str, Any], ...] = field(eq=False)
    status: str
    plan: CompiledPlan = field(eq=False, repr=False)

    def outcome_of(self, call: int, instance: str | None = None) -> str:
        for c in self.calls:
            if c.call == call and c.instance == instance:
                return c.outcome
        raise KeyError((call, instance))


def finish(state: RunState, *, cancelled: bool = False) -> RunResult:
    """The result of a finished (or cancelled) run: error messages appended in order."""
    context = state.context
    errors = []
    for node_id in sorted(state.errors):
        message = state.errors[node_id]
        context = context.append(message)
        errors.append(message)
    plan = state.plan
    calls = tuple(
        CallOutcome(
            call=node.index, instance=node.instance, tool=node.tool,
            outcome=state.status[node.id].value, reason=state.reasons.get(node.id, ""),
            error=state.errors[node.id]["data"]["error"]["type"] if node.id in state.errors else None,
        )
        for node in plan.nodes
    )
    status = "cancelled" if cancelled or any(
        s in (Status.CANCELLED, Status.PENDING, Status.RUNNING) for s in state.status) else "completed"
    return RunResult(
        context=context, calls=calls, errors=tuple(errors),
        trace=tuple(e.to_json(plan) for e in state.trace), status=status, plan=plan,
    )


def executor_for(plan: CompiledPlan, node: Node, activity_names: Collection[str]) -> str:
    """The activity that runs a node (§7 step 4), or ``""`` when the call is latent.

    The tool's explicit ``_activity``; else an activity registered under the tool's name;
    else latent. Without a tool registry the tool's name is looked up directly.
    """
    tool = plan.tool_of(node)
    if tool is not None:
        return resolve_activity(tool, activity_names)
    return node.tool if node.tool in activity_names else ""  # type: ignore[return-value]

