"""The run state machine (docs/semantics.md §7): pure functions over an immutable run state.

Every interpreter drives the same steps and differs only in how it invokes activities and
how many run at once:

    state = begin(plan)                       # every call PENDING
    state, ready = advance(state)             # WAIT / READY / SKIPPED for the candidates
    state, inv = decide(state, inv, verdict)  # optional: the approval hook's answer
    state = complete(state, node, outcome, date)  # write outputs or record the failure
    state = complete_all(state, [(node, outcome, date), ...])  # several, one transition
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

from collections.abc import Iterable
from typing import Any

from attrs import evolve
from pyrsistent import PMap, PVector, pmap, pvector

from obelisk.compiler.diagnostics import render_text
from obelisk.compiler.nodes import CompiledPlan, Node, Param
from obelisk.core.ast import Reference
from obelisk.core.context import Context
from obelisk.core.errors import PlanRefused, WriteError
from obelisk.core.paths import Path
from obelisk.core.plain import thaw
from obelisk.core.resolve import evaluate, lookup_in
from obelisk.core.size import MAX_VALUE_BYTES
from obelisk.core.values import MAX_VALUE_NODES, Frozen, Missing, present
from obelisk.interpreters import calls, records
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.completion import complete_call, complete_many
from obelisk.interpreters.events import EventKind, Status
from obelisk.interpreters.outcomes import (
    Approve,
    Deny,
    Outcome,
    Raised,
    Replace,
    Verdict,
)
from obelisk.interpreters.readiness import (
    Absence,
    absences,
    skip_reason,
    written_but_absent,
)
from obelisk.interpreters.result import RunResult, build_result
from obelisk.interpreters.state import (
    RunState,
    Step,
    end_call,
    fail_call,
    invalidate_call,
)

# The members every transition reads, as module constants: reading an Enum member through
# its class costs about 70 ns on Python 3.11, and a module constant about 6.
_PENDING, _RUNNING, _STARTED = Status.PENDING, Status.RUNNING, EventKind.STARTED

def refuse(plan: CompiledPlan) -> PlanRefused:
    """The error refusing a plan with error diagnostics, its first ten rendered."""
    return PlanRefused(plan, [render_text(d) for d in plan.errors[:10]])


def begin(plan: CompiledPlan, context: Context | None = None, *,
          isolate_invalid: bool = False, open: bool = False,
          max_value_nodes: int | None = None, max_value_bytes: int | None = None,
          trace: bool = True) -> RunState:
    """The state before anything has run.

    Raises :class:`PlanRefused` for a plan with error diagnostics, unless
    ``isolate_invalid``: then the nodes in ``plan.invalid`` finish at once as INVALID
    (see the module docstring). ``open`` starts a run that admits more calls. A result,
    written value or resolved call over ``max_value_nodes`` JSON values (default
    :data:`MAX_VALUE_NODES`), or a result whose JSON text is over ``max_value_bytes``
    (default :data:`~obelisk.core.size.MAX_VALUE_BYTES`, 16 MiB; shared structure counted
    as it will be written), fails its call with ``ValueTooLarge``. ``trace=False`` keeps
    the trace empty (a run nobody reads the trace of need not pay for it).
    """
    if not plan.ok and not isolate_invalid:
        raise refuse(plan)
    waiting = pvector([len(p) for p in plan.predecessors])
    invalid = plan.invalid if isolate_invalid else pmap()
    state = RunState(
        plan=plan, context=context if context is not None else plan.context,
        status=pvector([Status.PENDING] * len(plan.nodes)), waiting=waiting,
        candidates=pvector([n for n, count in enumerate(waiting)
                            if count == 0 and n not in invalid]),
        running=0, errors=pmap(), reasons=pmap(), trace=pvector(), open=open,
        max_nodes=MAX_VALUE_NODES if max_value_nodes is None else max_value_nodes,
        max_bytes=MAX_VALUE_BYTES if max_value_bytes is None else max_value_bytes,
        tracing=trace, cache=calls.cache_of(plan),
    )
    if invalid:
        step = Step(state)
        for node_id in sorted(invalid):
            invalidate_call(step, node_id)
        state = step.state()
    return state


def invalidate(state: RunState, node_id: int) -> RunState:
    """The run with node ``node_id`` finished INVALID (see the module docstring)."""
    step = Step(state)
    invalidate_call(step, node_id)
    return step.state()


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
    if not state.candidates:
        return state, ()
    step = Step(state)
    ready = _advance(step)
    return step.state(), ready


def _advance(step: Step) -> tuple[Invocation, ...]:
    ready: list[Invocation] = []
    batched = False
    while step.candidates:
        batch = sorted(step.candidates)
        step.candidates = _NONE  # skips below may add new candidates
        if len(batch) > 1 and not step.batching:  # many calls start: statuses in place
            step.batch()
            batched = True
        for node_id in batch:
            if step.status[node_id] is not _PENDING:
                continue  # finished before its turn (an invalid node of a cycle)
            invocation = _evaluate(step, node_id)
            if invocation is not None:
                ready.append(invocation)
    if batched:
        step.unbatch()
    return tuple(ready)


_NONE: PVector[int] = pvector()
_NO_PRESCRIBED: PMap[str, Any] = pmap()  # pmap() is one object, shared


def _evaluate(step: Step, node_id: int) -> Invocation | None:
    plan = step.plan
    node = plan.nodes[node_id]
    context = step.context
    instance = node.instance
    values: dict[Path, Frozen] = {}
    absent: list[Param] = []
    value: Frozen | Missing
    for param in node.params:
        expr = param.expr
        try:
            if type(expr) is Reference:  # the common case, read without a closure
                value = context.value(expr.kind, expr.path, instance)
            else:
                value = evaluate(expr, lookup_in(context, instance))
        except WriteError as exc:
            fail_call(step, node_id, "WriteError", str(exc))
            return None
        if present(value):
            values[param.path] = value
        else:
            absent.append(param)
    if absent:
        _skip(step, node_id, absent)
        return None
    call = calls.bounded_call(node, values, step.cache, step.max_nodes)
    if isinstance(call, Raised):  # ValueTooLarge: a value read twice is handed out twice
        fail_call(step, node_id, call.type, call.message)
        return None
    # Most calls prescribe nothing: their map is pyrsistent's one empty map (telling an
    # empty PMap by its length is a Python call).
    if node.prescribed is not _NO_PRESCRIBED and node.prescribed:
        for key, prescribed in node.prescribed.items():  # §5: as if the call wrote it
            call.setdefault(key, thaw(prescribed))
    tool = plan.tool_of(node)
    if tool is not None:
        problems = calls.param_problems(tool, call)
        if problems:
            fail_call(step, node_id, "ParamSchema", f"resolved parameters fail {problems}")
            return None
    step.status = step.status.set(node_id, _RUNNING)
    step.running += 1
    if step.tracing:
        step.record(_STARTED, node_id)
    return calls.new_invocation(
        node=node_id, call=call, tool=tool,
        context=calls.scoped_context(context, node) if node.scopes else calls.NO_CONTEXT)


def _skip(step: Step, node_id: int, params: list[Param]) -> None:
    # A call with a parameter that is not present never runs; how it ends is decided by
    # the first of §7's four cases that one of its references is in.
    found = absences(step, node_id, params)
    cases = {case for case, _ in found}
    if step.open and cases & {Absence.WRITTEN_BUT_ABSENT, Absence.UNWRITTEN}:
        return  # parked: a call admitted later may write it
    if Absence.WRITTEN_BUT_ABSENT in cases:
        fail_call(step, node_id, "MissingValue",
              "; ".join(written_but_absent(step, read) for case, read in found
                        if case is Absence.WRITTEN_BUT_ABSENT),
              status=Status.SKIPPED)
        return
    if Absence.DEAD in cases:
        reason = skip_reason(step, Absence.DEAD, found)
    elif Absence.UNWRITTEN in cases:
        refs = ", ".join(str(read.reference) for case, read in found
                         if case is Absence.UNWRITTEN)
        fail_call(step, node_id, "MissingValue",
              f"{refs} has no value, and no call in the plan writes it", status=Status.SKIPPED)
        return
    else:
        reason = skip_reason(step, Absence.NULL, found)
    step.record(EventKind.SKIPPED, node_id, reason)
    end_call(step, node_id, Status.SKIPPED, reason)


# -- approval -----------------------------------------------------------------------------


def decide(state: RunState, invocation: Invocation,
           verdict: Verdict) -> tuple[RunState, Invocation | None]:
    """Apply an approval verdict to a ready invocation: the invocation to run, or None.

    Every answer is recorded as an approval message (§7 step 3), whatever follows from it.
    """
    node_id = invocation.node
    node = state.plan.nodes[node_id]
    step = Step(state)
    match verdict:
        case Approve(by=by, reason=reason):
            _approved(step, node, "approve", by=by, reason=reason)
            return step.state(), invocation
        case Deny(reason=reason, by=by):
            _approved(step, node, "deny", by=by, reason=reason)
            fail_call(step, node_id, "Denied", reason, event=EventKind.DENIED)
            return step.state(), None
        case Replace(call=replacement, by=by, reason=reason):
            call = {k: v for k, v in invocation.call.items() if k.startswith("_")}
            call.update({k: v for k, v in replacement.items() if not k.startswith("_")})
            _approved(step, node, "replace", replacement=call, by=by, reason=reason)
            problems = calls.param_problems(invocation.tool, call)
            if problems:
                fail_call(step, node_id, "ParamSchema", f"the replacement call fails {problems}")
                return step.state(), None
            step.record(EventKind.REPLACED, node_id)
            # A copy: the activity is handed this call, and the hook may keep its values.
            return step.state(), evolve(invocation, call=calls.fresh(call))
    raise TypeError(f"not a verdict: {verdict!r}")  # pragma: no cover


def _approved(step: Step, node: Node, decision: str, **details: Any) -> None:
    message = records.approval_message(node, decision, **details)
    step.approvals = step.approvals.set(node.id, message)


# -- complete: handle an outcome ----------------------------------------------------------


def complete(state: RunState, node_id: int, outcome: Outcome, date: str) -> RunState:
    """Record what a RUNNING call produced (§7 step 6) and release its successors.

    A plain value goes to the first alternative, a choice to the named one, an exception
    to the last alternative when there are two or more (else an error message). Broken
    contracts (NotJSON, ValueTooLarge, BranchContract...) fail the call, writing nothing.
    Raises ``ValueError`` if the node is not running (messages: ``records.output_message``).
    """
    step = Step(state)
    complete_call(step, node_id, outcome, date)
    return step.state()


def complete_all(state: RunState,
                 finished: Iterable[tuple[int, Outcome, str]]) -> RunState:
    """:func:`complete` of each ``(node_id, outcome, date)`` in turn, as one transition.

    The same rules, applied in the order given, make the same state as completing them
    one by one; only the intermediate states are never built (an interpreter settling
    many calls at once pays for one). Raises ``ValueError`` if a node is not running.
    """
    step = Step(state)
    complete_many(step, finished)
    return step.state()


def settle(state: RunState, finished: Iterable[tuple[int, Outcome, str]]
           ) -> tuple[RunState, tuple[Invocation, ...]]:
    """:func:`complete_all`, then :func:`advance`, as one transition.

    The same rules in the same order make the same state and the same invocations as
    the two calls; only the state between them is never built (along a chain, where
    every completion releases the next call, that is one state in two).
    """
    step = Step(state)
    complete_many(step, finished)
    if step.batching:
        step.unbatch()
    ready = _advance(step)
    return step.state(), ready


def finish(state: RunState, *, cancelled: bool = False) -> RunResult:
    """The result of a finished (or cancelled) run: error messages appended in order."""
    return build_result(state.plan, state.context, state.status, state.errors,
                        state.reasons, state.trace, cancelled=cancelled,
                        approvals=state.approvals)
