"""The run state machine (docs/semantics.md §7): pure functions over an immutable run state.

Every interpreter drives the same steps and differs only in how it invokes activities and
how many run at once:

    state = begin(plan)                       # every call PENDING
    state, ready = advance(state)             # WAIT / READY / SKIPPED for the candidates
    state, inv = decide(state, inv, verdict)  # optional: the approval hook's answer
    state = complete(state, node, outcome, date)  # write outputs or record the failure
    result = finish(state)                    # error messages appended, in call order

``cancel(state)`` ends a cancelled run (running calls become CANCELLED).

Invariants (kept by every function here, stated once):
- ``waiting[n]`` counts ``n``'s predecessors that have not finished;
- ``candidates`` holds (in any order, each once) PENDING nodes whose ``waiting`` is 0; an
  open run may also hold such nodes outside ``candidates``: they are *parked*, waiting for
  a value no call seen so far writes (see "streaming" below);
- ``running`` counts the RUNNING nodes; a run is over when no candidate is left and
  nothing runs;
- the context only grows, by messages written by ``complete``; error messages are kept
  aside in ``errors`` and appended by ``finish``, ordered by node (call index, instance).
Scheduling touches only the successors of what finished: O(edges) for a whole run.

Seams (each function says more):
- keep going: ``begin(plan, isolate_invalid=True)`` runs a plan with errors; each node of
  ``plan.invalid`` ends at once as INVALID with an ``Invalid`` error listing its
  diagnostics (code, message, pointer), writing nothing: its readers become dead branches;
- streaming: ``begin(plan, open=True)``; ``admit(state, plan)`` appends new nodes, PENDING
  on their unfinished predecessors; while open, a call reading a MISSING value that no call
  seen so far writes (or that its writers wrote without the key) is parked instead of
  skipped, until ``admit`` or ``close(state)``;
- executors: what runs a node is chosen in ``executors.choose_executor`` only;
- events: each step an interpreter takes here is a ``RunEvent`` for its observer, and
  ``replay.replay`` rebuilds a state from them through these same functions.
All functions are pure (the plan's ``CallCache`` only memoises).
"""

from __future__ import annotations

from typing import Any

from attrs import evolve, field, frozen
from pyrsistent import PMap, PVector, pmap, pvector

from obelisk.compiler.diagnostics import render_text
from obelisk.compiler.nodes import Node, Param
from obelisk.compiler.plan import CompiledPlan
from obelisk.compiler.tools import validate_output
from obelisk.core.context import Context
from obelisk.core.errors import PlanRefused, WriteError
from obelisk.core.messages import Write
from obelisk.core.paths import Path
from obelisk.core.resolve import evaluate, lookup_in
from obelisk.core.values import MAX_VALUE_NODES, MISSING, Frozen, Missing, present, thaw
from obelisk.interpreters import calls
from obelisk.interpreters.admission import admit, close
from obelisk.interpreters.calls import CallCache, Invocation
from obelisk.interpreters.cancel import cancel
from obelisk.interpreters.events import Event, EventKind, Status
from obelisk.interpreters.outcomes import (
    Approve,
    Chose,
    Deny,
    Outcome,
    Raised,
    Replace,
    Returned,
    Verdict,
)
from obelisk.interpreters.readiness import Absence, absences, written_but_absent
from obelisk.interpreters.result import CallOutcome, RunResult, build_result

#: Re-exported: these names were defined here before the machine was split.
__all__ = ["Approve", "CallOutcome", "Deny", "PlanRefused", "Replace", "RunResult", "Status",
           "admit", "cancel", "close"]  # admit, close (streaming) and cancel: own modules


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
    #: True while more calls may be admitted (streaming); see :func:`admit`.
    open: bool = False
    max_nodes: int = MAX_VALUE_NODES  #: the size limit of values: see :func:`begin`
    #: Node id -> the alternative of its ``_outputPath`` whose write was applied, for every
    #: EXECUTED node that wrote (what §7's readiness rule asks of a possible writer).
    took: PMap[int, int] = field(factory=pmap)
    #: Node id -> the approval message recording the hook's answer (§7 step 3); appended
    #: with the error messages at the run's end, in node order, so timing never shows.
    approvals: PMap[int, Any] = field(factory=pmap)
    #: The plan's memo of call templates and message bases (not part of the value).
    cache: CallCache = field(factory=CallCache, eq=False, repr=False)

    @property
    def done(self) -> bool:
        """True when no call can make progress: nothing pending is ready, nothing runs."""
        return not self.candidates and self.running == 0


def refuse(plan: CompiledPlan) -> PlanRefused:
    """The error refusing a plan with error diagnostics, its first ten rendered."""
    return PlanRefused(plan, [render_text(d) for d in plan.errors[:10]])


def begin(plan: CompiledPlan, context: Context | None = None, *,
          isolate_invalid: bool = False, open: bool = False,
          max_value_nodes: int | None = None) -> RunState:
    """The state before anything has run.

    Raises :class:`PlanRefused` for a plan with error diagnostics, unless
    ``isolate_invalid``: then the nodes in ``plan.invalid`` finish at once as INVALID
    (see the module docstring). ``open`` starts a run that admits more calls. A result,
    written value or resolved call over ``max_value_nodes`` JSON values (default
    :data:`MAX_VALUE_NODES`) fails its call with ``ValueTooLarge``.
    """
    if not plan.ok and not isolate_invalid:
        raise refuse(plan)
    waiting = pvector(len(p) for p in plan.predecessors)
    invalid = plan.invalid if isolate_invalid else pmap()
    state = RunState(
        plan=plan, context=context if context is not None else plan.context,
        status=pvector([Status.PENDING] * len(plan.nodes)), waiting=waiting,
        candidates=tuple(n for n, count in enumerate(waiting) if count == 0 and n not in invalid),
        running=0, errors=pmap(), reasons=pmap(), trace=pvector(), open=open,
        max_nodes=MAX_VALUE_NODES if max_value_nodes is None else max_value_nodes,
        cache=calls.cache_of(plan),
    )
    for node_id in sorted(invalid):
        state = invalidate(state, node_id)
    return state


def invalidate(state: RunState, node_id: int) -> RunState:
    diagnostics = [{"code": d.to_json()["code"], "message": d.message, "pointer": d.pointer}
                   for d in state.plan.invalid[node_id]]
    text = "; ".join(d["message"] for d in diagnostics) or "the call is invalid"
    return _fail(state, node_id, "Invalid", text, data={"diagnostics": diagnostics},
                 status=Status.INVALID, event=EventKind.INVALID)


# -- advance: decide what the candidates do ------------------------------------------------


def advance(state: RunState) -> tuple[RunState, tuple[Invocation, ...]]:
    """Evaluate every candidate against the current context.

    A candidate whose parameters are all present becomes RUNNING and is returned as an
    invocation (after its resolved parameters pass the tool's schema). One with a
    parameter that is not present is SKIPPED, by the first of §7's four cases one of its
    references is in (see :class:`Absence`): written-but-absent and unwritten add a
    ``MissingValue`` error (in an open run such a call is parked instead); dead (a dead
    branch) and null are silent. Skips finish the node, which may make its successors
    candidates in turn.
    """
    ready: list[Invocation] = []
    while state.candidates:
        batch = sorted(state.candidates)
        state = evolve(state, candidates=())  # skips below may add new candidates
        for node_id in batch:
            if state.status[node_id] is not Status.PENDING:
                continue  # finished before its turn (an invalid node of a cycle)
            state, invocation = _evaluate(state, node_id)
            if invocation is not None:
                ready.append(invocation)
    return state, tuple(ready)


def _evaluate(state: RunState, node_id: int) -> tuple[RunState, Invocation | None]:
    plan = state.plan
    node = plan.nodes[node_id]
    lookup = lookup_in(state.context, node.instance)
    values: dict[Path, Frozen] = {}
    absent: list[Param] = []
    value: Frozen | Missing
    for param in node.params:
        try:
            value = evaluate(param.expr, lookup)
        except WriteError as exc:
            return _fail(state, node_id, "WriteError", str(exc)), None
        if present(value):
            values[param.path] = value
        else:
            absent.append(param)
    if absent:
        return _skip(state, node_id, absent), None
    call = calls.bounded_call(plan, node, values, state.cache, state.max_nodes)
    if isinstance(call, Raised):  # ValueTooLarge: a value read twice is handed out twice
        return _fail(state, node_id, call.type, call.message), None
    for key, prescribed in node.prescribed.items():  # §5: as if the call had written it
        call.setdefault(key, thaw(prescribed))
    tool = plan.tool_of(node)
    problems = calls.param_problems(tool, call)
    if problems:
        return _fail(state, node_id, "ParamSchema", f"resolved parameters fail {problems}"), None
    state = RunState(
        plan=plan, context=state.context, status=state.status.set(node_id, Status.RUNNING),
        waiting=state.waiting, candidates=state.candidates, running=state.running + 1,
        errors=state.errors, reasons=state.reasons,
        trace=state.trace.append(Event(EventKind.STARTED, node_id)),
        open=state.open, max_nodes=state.max_nodes, took=state.took,
        approvals=state.approvals, cache=state.cache,
    )
    return state, Invocation(node_id, call, tool, calls.scoped_context(state.context, node))


def _skip(state: RunState, node_id: int, params: list[Param]) -> RunState:
    # A call with a parameter that is not present never runs; how it ends is decided by
    # the first of §7's four cases that one of its references is in.
    found = absences(state, node_id, params)
    cases = {case for case, _ in found}
    if state.open and cases & {Absence.WRITTEN_BUT_ABSENT, Absence.UNWRITTEN}:
        return state  # parked: a call admitted later may write it
    if Absence.WRITTEN_BUT_ABSENT in cases:
        return _fail(state, node_id, "MissingValue",
                     "; ".join(written_but_absent(state, read) for case, read in found
                               if case is Absence.WRITTEN_BUT_ABSENT),
                     status=Status.SKIPPED)
    if Absence.DEAD in cases:
        dead = [p.text for p in params
                if any(case is Absence.DEAD and read in p.reads for case, read in found)]
        reason = f"dead branch: {', '.join(dead)} was not written"
    elif Absence.UNWRITTEN in cases:
        refs = ", ".join(str(read.reference) for case, read in found
                         if case is Absence.UNWRITTEN)
        return _fail(state, node_id, "MissingValue",
                     f"{refs} has no value, and no call in the plan writes it",
                     status=Status.SKIPPED)
    else:
        reason = f"{', '.join(p.text for p in params)} is null"
    return _finish(state, node_id, Status.SKIPPED, reason,
                   Event(EventKind.SKIPPED, node_id, reason))


# -- approval -----------------------------------------------------------------------------


def decide(state: RunState, invocation: Invocation,
           verdict: Verdict) -> tuple[RunState, Invocation | None]:
    """Apply an approval verdict to a ready invocation: the invocation to run, or None.

    Every answer is recorded as an approval message (§7 step 3), whatever follows from it.
    """
    node_id = invocation.node
    node = state.plan.nodes[node_id]
    match verdict:
        case Approve():
            return _approved(state, node, "approve"), invocation
        case Deny(reason=reason):
            state = _approved(state, node, "deny", reason=reason)
            return _fail(state, node_id, "Denied", reason, event=EventKind.DENIED), None
        case Replace(call=replacement):
            call = {k: v for k, v in invocation.call.items() if k.startswith("_")}
            call.update({k: v for k, v in replacement.items() if not k.startswith("_")})
            state = _approved(state, node, "replace", replacement=call)
            problems = calls.param_problems(invocation.tool, call)
            if problems:
                return _fail(state, node_id, "ParamSchema",
                             f"the replacement call fails {problems}"), None
            state = evolve(state, trace=state.trace.append(Event(EventKind.REPLACED, node_id)))
            return state, evolve(invocation, call=call)
    raise TypeError(f"not a verdict: {verdict!r}")  # pragma: no cover


def _approved(state: RunState, node: Node, decision: str, **details: Any) -> RunState:
    message = calls.approval_message(node, decision, **details)
    return evolve(state, approvals=state.approvals.set(node.id, message))


# -- complete: handle an outcome ----------------------------------------------------------


def complete(state: RunState, node_id: int, outcome: Outcome, date: str) -> RunState:
    """Record what a RUNNING call produced (§7 step 6) and release its successors.

    A plain value goes to the first alternative, a choice to the named one, an exception
    to the last alternative when there are two or more (else an error message). Broken
    contracts (NotJSON, ValueTooLarge, BranchContract...) fail the call, writing nothing.
    Raises ``ValueError`` if the node is not running (messages: ``calls.output_message``).
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
                    error["data"] = calls.json_or_repr(data, state.max_nodes)  # as in _fail
                return _write(state, node_id, len(output.alternatives) - 1, error, date,
                              f"{etype} routed to alternative {len(output.alternatives)}")
            return _fail(state, node_id, etype, message, data=data)
        case Returned(value=value):
            if output is None:  # fire-and-forget: the result is dropped
                return _finish(state, node_id, Status.EXECUTED, "",
                               Event(EventKind.EXECUTED, node_id))
            return _write(state, node_id, 0, value, date, "")
        case Chose(path=path, value=value):
            alt = calls.alternative_of(node, path) if isinstance(path, str) else None
            if alt is None:
                declared = node.output_text or "(no _outputPath)"
                return _fail(state, node_id, "BranchContract", f"the activity chose "
                         f"{calls.shown(path)}, which is not an alternative of {declared}")
            return _write(state, node_id, alt, value, date, f"chose alternative {alt + 1}")
    raise TypeError(f"not an outcome: {outcome!r}")  # pragma: no cover


def _write(state: RunState, node_id: int, alt: int, value: Any, date: str, note: str) -> RunState:
    node = state.plan.nodes[node_id]
    assert node.output is not None
    frozen = calls.checked_result(node, value, state.max_nodes)
    if isinstance(frozen, Raised):
        return _fail(state, node_id, frozen.type, frozen.message)
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
        base = state.cache.base(node, alt, number, target)
        write = Write(target.kind, node.instance, target.path, node.method, frozen)
        context, error = context.append_write(
            calls.output_message(node, target, frozen, date, base), write)
        if error is not None:  # nothing of a failed fan-out is kept
            # Leave out the message's position in the context: it depends on timing,
            # and the report must not (docs/semantics.md §7, determinism).
            timeless = WriteError(error.reason, kind=error.kind, path=error.path,
                                  method=error.method, instance=error.instance)
            return _fail(state, node_id, "WriteError", str(timeless))
        events.append(Event(EventKind.WROTE, node_id, base["_outputPath"]))
    events.append(Event(EventKind.EXECUTED, node_id, note))
    return _finish(state, node_id, Status.EXECUTED, note, *events, context=context, took=alt)


def _fail(state: RunState, node_id: int, etype: str, message: str, *, data: Any = MISSING,
          status: Status = Status.FAILED, event: EventKind | None = None) -> RunState:
    node = state.plan.nodes[node_id]
    if data is not MISSING:
        data = calls.json_or_repr(data, state.max_nodes)
    errors = state.errors.set(node_id, calls.error_message(node, etype, message, data))
    kind = event or (EventKind.SKIPPED if status is Status.SKIPPED else EventKind.FAILED)
    return _finish(state, node_id, status, f"{etype}: {message}",
                   Event(kind, node_id, f"{etype}: {message}"), errors=errors)


def _finish(state: RunState, node_id: int, status: Status, reason: str, *events: Event,
            context: Context | None = None, errors: PMap[int, Any] | None = None,
            took: int | None = None) -> RunState:
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
        trace=trace, open=state.open, max_nodes=state.max_nodes,
        took=state.took if took is None else state.took.set(node_id, took),
        approvals=state.approvals, cache=state.cache,
    )


def finish(state: RunState, *, cancelled: bool = False) -> RunResult:
    """The result of a finished (or cancelled) run: error messages appended in order."""
    return build_result(state.plan, state.context, state.status, state.errors,
                        state.reasons, state.trace, cancelled=cancelled,
                        approvals=state.approvals)
