"""The run state (see :mod:`obelisk.interpreters.machine` for the protocol and its
invariants) and one transition under way (:class:`Step`), with the rules every
transition shares: a call failing, a call finishing (its successors released), a call
found invalid. Pure: the machine's modules build on it, and nothing here runs a call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from attrs import field, frozen
from pyrsistent import PMap, PVector, pmap

from obelisk.compiler.nodes import CompiledPlan
from obelisk.core import slots
from obelisk.core.appender import Appender
from obelisk.core.context import Context
from obelisk.core.errors import WriteError
from obelisk.core.messages import Write
from obelisk.core.methods import Method
from obelisk.core.paths import Path
from obelisk.core.size import MAX_VALUE_BYTES
from obelisk.core.values import MAX_VALUE_NODES, MISSING, Frozen
from obelisk.interpreters import records
from obelisk.interpreters.calls import CallCache
from obelisk.interpreters.events import Event, EventKind, Status

__all__ = ["RunState", "Step", "Took", "end_call", "fail_call", "invalidate_call",
           "new_state"]

# The members every transition reads, as module constants: reading an Enum member through
# its class costs about 70 ns on Python 3.11, and a module constant about 6.
_PENDING, _RUNNING, _EXECUTED = Status.PENDING, Status.RUNNING, Status.EXECUTED


@frozen(slots=False)  # its fields in a __dict__: see new_state
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
    max_bytes: int = MAX_VALUE_BYTES  #: the limit of a value's JSON text: see :func:`begin`
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


class Step:
    """One transition under way: the fields of the state it derives, changed in place.

    Every transition copies its state's fields into a ``Step`` (their values are
    persistent, so nothing is copied but references), applies its rules to it, and makes
    one new :class:`RunState` at the end (:meth:`state`): the old state is never changed,
    and an event costs one state however many calls it touches. A ``Step`` never leaves
    the machine's functions.
    """

    __slots__ = ("plan", "_context", "appender", "batching", "status",
                 "waiting", "candidates", "running", "errors", "reasons", "trace", "open",
                 "max_nodes", "max_bytes", "alts", "approvals", "tracing", "cache")

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
        self.max_bytes = state.max_bytes
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
        return new_state(
            plan=self.plan, context=self.context, status=self.status, waiting=self.waiting,
            candidates=self.candidates, running=self.running, errors=self.errors,
            reasons=self.reasons, trace=self.trace, open=self.open, max_nodes=self.max_nodes,
            max_bytes=self.max_bytes, alts=self.alts, approvals=self.approvals,
            tracing=self.tracing, cache=self.cache)

    def record(self, kind: EventKind, node_id: int, detail: str = "") -> None:
        """Add a line to the trace, when the run records one."""
        if self.tracing:
            self.trace = self.trace.append(Event(kind, node_id, detail))


_set_state = slots.dict_setter(RunState)


def _new_state(*, plan: CompiledPlan, context: Context, status: PVector[Status],
               waiting: PVector[int], candidates: PVector[int], running: int,
               errors: PMap[int, Any], reasons: PMap[int, str], trace: PVector[Event],
               open: bool, max_nodes: int, max_bytes: int, alts: PMap[int, int],
               approvals: PMap[int, Any],
               tracing: bool, cache: CallCache) -> RunState:
    # RunState(**fields): its __dict__ built whole and handed over in one call, where
    # attrs' __init__ fills it one entry at a time (one state per transition).
    state = slots.new(RunState)
    _set_state(state, {
        "plan": plan, "context": context, "status": status, "waiting": waiting,
        "candidates": candidates, "running": running, "errors": errors, "reasons": reasons,
        "trace": trace, "open": open, "max_nodes": max_nodes, "max_bytes": max_bytes,
        "alts": alts,
        "approvals": approvals, "tracing": tracing, "cache": cache})
    return state


#: How every transition makes its new state (see :mod:`obelisk.core.slots`).
new_state = slots.checked(RunState, _new_state)
def fail_call(step: Step, node_id: int, etype: str, message: str, *, data: Any = MISSING,
              status: Status = Status.FAILED, event: EventKind | None = None) -> None:
    """The call ends ``status`` with the error ``etype: message`` (its message kept for
    the run's end), and its successors are released."""
    node = step.plan.nodes[node_id]
    if data is not MISSING:
        data = records.json_or_repr(data, step.max_nodes, step.max_bytes)
    step.errors = step.errors.set(node_id, records.error_message(node, etype, message, data))
    kind = event or (EventKind.SKIPPED if status is Status.SKIPPED else EventKind.FAILED)
    step.record(kind, node_id, f"{etype}: {message}")
    end_call(step, node_id, status, f"{etype}: {message}")


def end_call(step: Step, node_id: int, status: Status, reason: str) -> None:
    """The call has finished: its status and reason, and its successors released (its
    trace lines were recorded by the caller, before this)."""
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


def invalidate_call(step: Step, node_id: int) -> None:
    """The call ends INVALID at once: an ``Invalid`` error listing its diagnostics."""
    diagnostics = [{"code": d.to_json()["code"], "message": d.message, "pointer": d.pointer,
                    **({"hint": d.hint} if d.hint else {})}
                   for d in step.plan.invalid[node_id]]
    # Each diagnostic as the compiler words it, its hint (a did-you-mean) after it.
    text = "; ".join(d["message"] + (f": {d['hint']}" if "hint" in d else "")
                     for d in diagnostics) or "the call is invalid"
    fail_call(step, node_id, "Invalid", text, data={"diagnostics": diagnostics},
          status=Status.INVALID, event=EventKind.INVALID)
