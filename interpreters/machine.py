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

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from attrs import evolve, field, frozen
from pyrsistent import PMap, PVector, pmap, pvector

from obelisk.compiler.diagnostics import render_text
from obelisk.compiler.nodes import Node, Param
from obelisk.compiler.plan import CompiledPlan
from obelisk.compiler.tools import validate_output
from obelisk.core import slots
from obelisk.core.ast import Reference
from obelisk.core.context import Appender, Context
from obelisk.core.errors import PlanRefused, WriteError
from obelisk.core.messages import Write
from obelisk.core.methods import Method
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


# The members every transition reads, as module constants: reading an Enum member through
# its class costs about 70 ns on Python 3.11, and a module constant about 6.
_PENDING, _RUNNING, _EXECUTED = Status.PENDING, Status.RUNNING, Status.EXECUTED
_STARTED, _WROTE, _EXECUTED_EVENT = EventKind.STARTED, EventKind.WROTE, EventKind.EXECUTED

@frozen(slots=False)  # its fields in a __dict__: see _new_state
class RunState:
    """An immutable snapshot of a run. See the module docstring for its invariants."""

    plan: CompiledPlan
    context: Context
    status: PVector[Status]
    waiting: PVector[int]
    candidates: PVector[int]
    running: int
    errors: PMap[int, Any]
    reasons: PMap[int, str]
    trace: PVector[Event]
    #: True while more calls may be admitted (streaming); see :func:`admit`.
    open: bool = False
    max_nodes: int = MAX_VALUE_NODES  #: the size limit of values: see :func:`begin`
    #: Node id -> the alternative of its ``_outputPath`` whose write was applied, when
    #: that was not the first (a chosen branch, an exception routed to the last): what
    #: :attr:`took` is derived from.
    alts: PMap[int, int] = field(factory=pmap)
    #: Node id -> the approval message recording the hook's answer (§7 step 3); appended
    #: with the error messages at the run's end, in node order, so timing never shows.
    approvals: PMap[int, Any] = field(factory=pmap)
    #: True when the transitions record the trace (see :func:`begin`); else it stays empty.
    tracing: bool = True
    #: The plan's memo of call templates and message bases (not part of the value).
    cache: CallCache = field(factory=CallCache, eq=False, repr=False)

    @property
    def done(self) -> bool:
        """True when no call can make progress: nothing pending is ready, nothing runs."""
        return not self.candidates and self.running == 0

    @property
    def took(self) -> Took:
        """Node id -> the alternative of its ``_outputPath`` whose write was applied, for
        every EXECUTED node that wrote (what §7's readiness rule asks of a possible
        writer)."""
        return Took(self.alts, self.status, self.plan)


class Took(Mapping[int, int]):
    """Node id -> the alternative whose write it applied, for every node that wrote: a
    view of a run's statuses and alternatives, made when asked for.

    A node wrote exactly when it is EXECUTED and has an ``_outputPath``: a write that
    fails fails the call, and a call without ``_outputPath`` writes nothing (both paths
    to EXECUTED are in ``_complete`` and ``_write``). Nearly every call that writes takes
    its first alternative, so only the others are recorded (``alts``): the common call
    records nothing, where keeping a mapping of every writer cost each call 4% of its
    transition.
    """

    __slots__ = ("_alts", "_status", "_plan")

    def __init__(self, alts: Mapping[int, int], status: Sequence[Status],
                 plan: CompiledPlan) -> None:
        self._alts = alts
        self._status = status
        self._plan = plan

    def __getitem__(self, node: int) -> int:
        if 0 <= node < len(self._status) and self._status[node] is _EXECUTED \
                and self._plan.nodes[node].output is not None:
            return self._alts.get(node, 0)
        raise KeyError(node)

    def __iter__(self) -> Iterator[int]:
        nodes = self._plan.nodes
        return (node for node, status in enumerate(self._status)
                if status is _EXECUTED and nodes[node].output is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self) == dict(other)

    def __hash__(self) -> int:
        return hash(tuple(self.items()))

    def __repr__(self) -> str:
        return f"Took({dict(self)!r})"


class _Step:
    """One transition under way: the fields of the state it derives, changed in place.

    Every transition copies its state's fields into a ``_Step`` (their values are
    persistent, so nothing is copied but references), applies its rules to it, and makes
    one new :class:`RunState` at the end (:meth:`state`): the old state is never changed,
    and an event costs one state however many calls it touches. A ``_Step`` never leaves
    the machine's functions.
    """

    __slots__ = ("plan", "_context", "appender", "batching", "status",
                 "waiting", "candidates", "running", "errors", "reasons", "trace", "open",
                 "max_nodes", "alts", "approvals", "tracing", "cache")

    def __init__(self, state: RunState) -> None:
        self.plan = state.plan
        self._context = state.context
        # The writes of this step's completions, appended to its context in one go (made
        # into a context when the context is read, and when the step ends).
        self.appender: Appender | None = None
        # Whether this step completes several calls (see batch).
        self.batching = False
        self.status = state.status
        self.waiting = state.waiting
        self.candidates = state.candidates
        self.running = state.running
        self.errors = state.errors
        self.reasons = state.reasons
        self.trace = state.trace
        self.open = state.open
        self.max_nodes = state.max_nodes
        self.alts = state.alts
        self.approvals = state.approvals
        self.tracing = state.tracing
        self.cache = state.cache

    def batch(self) -> None:
        """Prepare to complete (or start) several calls: their writes go through an
        :class:`Appender`, and statuses, counts and alternatives taken are changed in
        place (evolvers of the persistent vectors, so the old state is untouched) until
        :meth:`unbatch`. A step that completes or starts one call does none of this: it
        costs more for one."""
        self.batching = True
        self.status = self.status.evolver()  # type: ignore[assignment]
        self.waiting = self.waiting.evolver()  # type: ignore[assignment]

    def unbatch(self) -> None:
        """End :meth:`batch`: the step's fields are persistent values again."""
        if not self.batching:
            return
        self.batching = False
        self.status = self.status.persistent()  # type: ignore[attr-defined]
        self.waiting = self.waiting.persistent()  # type: ignore[attr-defined]
        self._context = self.context  # the appender's writes, made into the context

    def appending(self) -> Appender:
        """The appender of a step that completes several calls (see :meth:`batch`)."""
        if self.appender is None:
            self.appender = Appender(self._context)
        return self.appender

    @property
    def took(self) -> Took:
        """:attr:`RunState.took` of the state under way."""
        return Took(self.alts, self.status, self.plan)

    @property
    def context(self) -> Context:
        """The context with every write this step made so far."""
        if self.appender is not None:
            self._context = self.appender.context()
            self.appender = None
        return self._context

    def append_writes(self, writes: list[tuple[Any, Write]]) -> WriteError | None:
        """Append one call's output messages and writes, all or none (the error then).

        A step that completes several calls appends them through an :class:`Appender`;
        one that completes a single call appends to its context directly, which costs
        less for one write."""
        if self.batching:
            return self.appending().append_writes(writes, output=True)
        self._context, error = self._context.append_writes(writes, output=True)
        return error

    def append_output(self, message: PMap[str, Any], kind: str, instance: str | None,
                      path: Path, method: Method, value: Frozen) -> WriteError | None:
        """Append one output message and its write, given by its fields (see
        :meth:`Context.append_output`): the error, and nothing appended, if it fails."""
        if self.batching:
            return self.appending().append_output(message, kind, instance, path, method, value)
        self._context, error = self._context.append_output(message, kind, instance, path,
                                                           method, value)
        return error

    def state(self) -> RunState:
        """The new run state this step made."""
        if self.batching:  # (a step that touched one call never batched: no call)
            self.unbatch()
        return _new_state(
            self.plan, self.context, self.status, self.waiting, self.candidates,
            self.running, self.errors, self.reasons, self.trace, self.open, self.max_nodes,
            self.alts, self.approvals, self.tracing, self.cache)

    def record(self, kind: EventKind, node_id: int, detail: str = "") -> None:
        """Add a line to the trace, when the run records one."""
        if self.tracing:
            self.trace = self.trace.append(Event(kind, node_id, detail))


#: How every transition makes its new state: ``RunState(*fields)``, its ``__dict__`` built
#: whole and handed over in one call (see :mod:`obelisk.core.slots`).
_new_state = slots.maker(RunState)
#: ``Invocation(*fields)`` through its slots: one per call that starts.
_new_invocation = slots.maker(Invocation)


def refuse(plan: CompiledPlan) -> PlanRefused:
    """The error refusing a plan with error diagnostics, its first ten rendered."""
    return PlanRefused(plan, [render_text(d) for d in plan.errors[:10]])


def begin(plan: CompiledPlan, context: Context | None = None, *,
          isolate_invalid: bool = False, open: bool = False,
          max_value_nodes: int | None = None, trace: bool = True) -> RunState:
    """The state before anything has run.

    Raises :class:`PlanRefused` for a plan with error diagnostics, unless
    ``isolate_invalid``: then the nodes in ``plan.invalid`` finish at once as INVALID
    (see the module docstring). ``open`` starts a run that admits more calls. A result,
    written value or resolved call over ``max_value_nodes`` JSON values (default
    :data:`MAX_VALUE_NODES`) fails its call with ``ValueTooLarge``. ``trace=False`` keeps
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
        tracing=trace, cache=calls.cache_of(plan),
    )
    if invalid:
        step = _Step(state)
        for node_id in sorted(invalid):
            _invalidate(step, node_id)
        state = step.state()
    return state


def invalidate(state: RunState, node_id: int) -> RunState:
    """The run with node ``node_id`` finished INVALID (see the module docstring)."""
    step = _Step(state)
    _invalidate(step, node_id)
    return step.state()


def _invalidate(step: _Step, node_id: int) -> None:
    diagnostics = [{"code": d.to_json()["code"], "message": d.message, "pointer": d.pointer}
                   for d in step.plan.invalid[node_id]]
    text = "; ".join(d["message"] for d in diagnostics) or "the call is invalid"
    _fail(step, node_id, "Invalid", text, data={"diagnostics": diagnostics},
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
    if not state.candidates:
        return state, ()
    step = _Step(state)
    ready = _advance(step)
    return step.state(), ready


def _advance(step: _Step) -> tuple[Invocation, ...]:
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


def _evaluate(step: _Step, node_id: int) -> Invocation | None:
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
            _fail(step, node_id, "WriteError", str(exc))
            return None
        if present(value):
            values[param.path] = value
        else:
            absent.append(param)
    if absent:
        _skip(step, node_id, absent)
        return None
    call = calls.bounded_call(plan, node, values, step.cache, step.max_nodes)
    if isinstance(call, Raised):  # ValueTooLarge: a value read twice is handed out twice
        _fail(step, node_id, call.type, call.message)
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
            _fail(step, node_id, "ParamSchema", f"resolved parameters fail {problems}")
            return None
    step.status = step.status.set(node_id, _RUNNING)
    step.running += 1
    if step.tracing:
        step.record(_STARTED, node_id)
    return _new_invocation(node_id, call, tool, calls.scoped_context(context, node)
                           if node.scopes else calls.NO_CONTEXT)


def _skip(step: _Step, node_id: int, params: list[Param]) -> None:
    # A call with a parameter that is not present never runs; how it ends is decided by
    # the first of §7's four cases that one of its references is in.
    found = absences(step, node_id, params)
    cases = {case for case, _ in found}
    if step.open and cases & {Absence.WRITTEN_BUT_ABSENT, Absence.UNWRITTEN}:
        return  # parked: a call admitted later may write it
    if Absence.WRITTEN_BUT_ABSENT in cases:
        _fail(step, node_id, "MissingValue",
              "; ".join(written_but_absent(step, read) for case, read in found
                        if case is Absence.WRITTEN_BUT_ABSENT),
              status=Status.SKIPPED)
        return
    if Absence.DEAD in cases:
        dead = [p.text for p in params
                if any(case is Absence.DEAD and read in p.reads for case, read in found)]
        reason = f"dead branch: {', '.join(dead)} was not written"
    elif Absence.UNWRITTEN in cases:
        refs = ", ".join(str(read.reference) for case, read in found
                         if case is Absence.UNWRITTEN)
        _fail(step, node_id, "MissingValue",
              f"{refs} has no value, and no call in the plan writes it", status=Status.SKIPPED)
        return
    else:
        reason = f"{', '.join(p.text for p in params)} is null"
    step.record(EventKind.SKIPPED, node_id, reason)
    _finish(step, node_id, Status.SKIPPED, reason)


# -- approval -----------------------------------------------------------------------------


def decide(state: RunState, invocation: Invocation,
           verdict: Verdict) -> tuple[RunState, Invocation | None]:
    """Apply an approval verdict to a ready invocation: the invocation to run, or None.

    Every answer is recorded as an approval message (§7 step 3), whatever follows from it.
    """
    node_id = invocation.node
    node = state.plan.nodes[node_id]
    step = _Step(state)
    match verdict:
        case Approve():
            _approved(step, node, "approve")
            return step.state(), invocation
        case Deny(reason=reason):
            _approved(step, node, "deny", reason=reason)
            _fail(step, node_id, "Denied", reason, event=EventKind.DENIED)
            return step.state(), None
        case Replace(call=replacement):
            call = {k: v for k, v in invocation.call.items() if k.startswith("_")}
            call.update({k: v for k, v in replacement.items() if not k.startswith("_")})
            _approved(step, node, "replace", replacement=call)
            problems = calls.param_problems(invocation.tool, call)
            if problems:
                _fail(step, node_id, "ParamSchema", f"the replacement call fails {problems}")
                return step.state(), None
            step.record(EventKind.REPLACED, node_id)
            # A copy: the activity is handed this call, and the hook may keep its values.
            return step.state(), evolve(invocation, call=calls.fresh(call))
    raise TypeError(f"not a verdict: {verdict!r}")  # pragma: no cover


def _approved(step: _Step, node: Node, decision: str, **details: Any) -> None:
    message = calls.approval_message(node, decision, **details)
    step.approvals = step.approvals.set(node.id, message)


# -- complete: handle an outcome ----------------------------------------------------------


def complete(state: RunState, node_id: int, outcome: Outcome, date: str) -> RunState:
    """Record what a RUNNING call produced (§7 step 6) and release its successors.

    A plain value goes to the first alternative, a choice to the named one, an exception
    to the last alternative when there are two or more (else an error message). Broken
    contracts (NotJSON, ValueTooLarge, BranchContract...) fail the call, writing nothing.
    Raises ``ValueError`` if the node is not running (messages: ``calls.output_message``).
    """
    step = _Step(state)
    _complete(step, node_id, outcome, date)
    return step.state()


def complete_all(state: RunState,
                 finished: Iterable[tuple[int, Outcome, str]]) -> RunState:
    """:func:`complete` of each ``(node_id, outcome, date)`` in turn, as one transition.

    The same rules, applied in the order given, make the same state as completing them
    one by one; only the intermediate states are never built (an interpreter settling
    many calls at once pays for one). Raises ``ValueError`` if a node is not running.
    """
    step = _Step(state)
    _complete_many(step, finished)
    return step.state()


def settle(state: RunState, finished: Iterable[tuple[int, Outcome, str]]
           ) -> tuple[RunState, tuple[Invocation, ...]]:
    """:func:`complete_all`, then :func:`advance`, as one transition.

    The same rules in the same order make the same state and the same invocations as
    the two calls; only the state between them is never built (along a chain, where
    every completion releases the next call, that is one state in two).
    """
    step = _Step(state)
    _complete_many(step, finished)
    if step.batching:
        step.unbatch()
    ready = _advance(step)
    return step.state(), ready


def _complete_many(step: _Step, finished: Iterable[tuple[int, Outcome, str]]) -> None:
    # _complete of each in turn; several in place (see _Step.batch), one as it is.
    if type(finished) is not tuple and type(finished) is not list:
        finished = list(finished)
    if len(finished) > 1:
        step.batch()
    for node_id, outcome, date in finished:
        _complete(step, node_id, outcome, date)


def _complete(step: _Step, node_id: int, outcome: Outcome, date: str) -> None:
    if step.status[node_id] is not _RUNNING:
        raise ValueError(f"node {node_id} is not running")
    node = step.plan.nodes[node_id]  # _finish takes it out of ``running``
    output = node.output
    match outcome:
        case Returned(value=value):
            if output is None:  # fire-and-forget: the result is dropped
                step.record(_EXECUTED_EVENT, node_id)
                _finish(step, node_id, _EXECUTED, "")
            else:
                _write(step, node_id, 0, value, date, "")
        case Raised(type=etype, message=message, data=data, contract=contract):
            if output is not None and len(output.alternatives) >= 2 and not contract:
                error: dict[str, Any] = {"type": etype, "message": message}
                if data is not MISSING:
                    error["data"] = calls.json_or_repr(data, step.max_nodes)  # as in _fail
                _write(step, node_id, len(output.alternatives) - 1, error, date,
                       f"{etype} routed to alternative {len(output.alternatives)}")
            else:
                _fail(step, node_id, etype, message, data=data)
        case Chose(path=path, value=value):
            alt = calls.alternative_of(node, path) if isinstance(path, str) else None
            if alt is None:
                declared = node.output_text or "(no _outputPath)"
                _fail(step, node_id, "BranchContract", f"the activity chose "
                      f"{calls.shown(path)}, which is not an alternative of {declared}")
            else:
                _write(step, node_id, alt, value, date, f"chose alternative {alt + 1}")
        case _:  # pragma: no cover
            raise TypeError(f"not an outcome: {outcome!r}")


def _write(step: _Step, node_id: int, alt: int, value: Any, date: str, note: str) -> None:
    node = step.plan.nodes[node_id]
    assert node.output is not None
    frozen = calls.checked_result(node, value, step.max_nodes)
    if isinstance(frozen, Raised):
        _fail(step, node_id, frozen.type, frozen.message)
        return
    tool = step.plan.tool_of(node)
    if alt == 0 and tool is not None:
        problems = validate_output(tool, thaw(frozen))
        if problems:
            text = "; ".join(f"{p or '/'}: {m}" for p, m in problems)
            _fail(step, node_id, "OutputSchema",
                  f"the result fails {tool.name}'s _output schema: {text}")
            return
    targets = node.output.alternatives[alt].targets
    if len(targets) == 1:  # the common case: one write, no Write made
        target = targets[0]
        text = node.sole_text or calls.target_text(node, target)
        wrote = [text]
        error = step.append_output(
            calls.output_message(node, target, frozen, date, text), target.kind,
            node.instance, target.path, node.method, frozen)
    else:
        writes = []
        wrote = []
        for target in targets:
            text = calls.target_text(node, target)
            writes.append((calls.output_message(node, target, frozen, date, text),
                           Write(target.kind, node.instance, target.path, node.method, frozen)))
            wrote.append(text)
        error = step.append_writes(writes)
    if error is not None:  # nothing of a failed fan-out is kept
        # Leave out the message's position in the context: it depends on timing, and
        # the report must not (docs/semantics.md §7, determinism).
        timeless = WriteError(error.reason, kind=error.kind, path=error.path,
                              method=error.method, instance=error.instance)
        _fail(step, node_id, "WriteError", str(timeless))
        return
    if step.tracing:
        for path_text in wrote:
            step.record(_WROTE, node_id, path_text)
        step.record(_EXECUTED_EVENT, node_id, note)
    if alt:  # the first alternative is not recorded (see Took)
        step.alts = step.alts.set(node_id, alt)
    _finish(step, node_id, _EXECUTED, note)


def _fail(step: _Step, node_id: int, etype: str, message: str, *, data: Any = MISSING,
          status: Status = Status.FAILED, event: EventKind | None = None) -> None:
    node = step.plan.nodes[node_id]
    if data is not MISSING:
        data = calls.json_or_repr(data, step.max_nodes)
    step.errors = step.errors.set(node_id, calls.error_message(node, etype, message, data))
    kind = event or (EventKind.SKIPPED if status is Status.SKIPPED else EventKind.FAILED)
    step.record(kind, node_id, f"{etype}: {message}")
    _finish(step, node_id, status, f"{etype}: {message}")


def _finish(step: _Step, node_id: int, status: Status, reason: str) -> None:
    # A call has finished: its status and reason, and its successors released (its
    # trace lines were recorded by the caller, before this).
    waiting = step.waiting
    current = step.status
    candidates = step.candidates
    for successor in step.plan.successors[node_id]:
        count = waiting[successor] - 1
        waiting = waiting.set(successor, count)
        if count == 0 and current[successor] is _PENDING:
            candidates = candidates.append(successor)
    if current[node_id] is _RUNNING:
        step.running -= 1
    step.waiting = waiting
    step.candidates = candidates
    step.status = current.set(node_id, status)
    if reason:
        step.reasons = step.reasons.set(node_id, reason)


def finish(state: RunState, *, cancelled: bool = False) -> RunResult:
    """The result of a finished (or cancelled) run: error messages appended in order."""
    return build_result(state.plan, state.context, state.status, state.errors,
                        state.reasons, state.trace, cancelled=cancelled,
                        approvals=state.approvals)
