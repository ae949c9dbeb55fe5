"""What a run produced: each call's :class:`CallOutcome` and the :class:`RunResult`, built
from the machine's final state by :func:`build_result`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from obelisk.compiler.nodes import CompiledPlan
from obelisk.core import slots
from obelisk.core.context import Context
from obelisk.core.values import Json
from obelisk.interpreters.events import Event, RunStatus, Status


@frozen
class CallOutcome:
    """How one call (one node) ended: executed, skipped, failed, cancelled or pending."""

    call: int
    instance: str | None
    tool: str | None
    #: The final status, a :class:`Status`: it compares equal to, prints and serialises
    #: as its word (``"executed"``...), as users print and compare it.
    outcome: Status
    reason: str
    #: The type of the error message the call added, if it added one.
    error: str | None = None

    @property
    def status(self) -> Status:
        """The outcome (kept under this name too)."""
        return self.outcome

    def to_json(self) -> dict[str, Any]:
        """The call's line in the run report."""
        out = {"call": self.call, "instance": self.instance, "tool": self.tool,
               "outcome": self.outcome.value, "reason": self.reason}
        if self.error is not None:
            out["error"] = self.error
        return out


@frozen(repr=False)
class RunResult:
    """What a run produced: the final context (error messages appended), each call's
    outcome, the error messages, the trace, and the status (completed or cancelled)."""

    context: Context
    calls: tuple[CallOutcome, ...]
    errors: tuple[Json, ...]
    trace: tuple[dict[str, Any], ...] = field(eq=False)
    status: RunStatus
    plan: CompiledPlan = field(eq=False, repr=False)

    def __repr__(self) -> str:
        # A summary: the default repr spelled out every call and trace line (megabytes
        # for a large plan, printed whole by a REPL or a failing assertion).
        counts: dict[str, int] = {}
        for outcome in self.calls:
            counts[outcome.outcome.value] = counts.get(outcome.outcome.value, 0) + 1
        shown = ", ".join(f"{word} {count}" for word, count in counts.items())
        return (f"RunResult(status={self.status.value!r}, calls={len(self.calls)} ({shown}), "
                f"errors={len(self.errors)}, trace={len(self.trace)} lines, "
                f"context={self.context!r})")

    def outcome_of(self, call: int, instance: str | None = None) -> Status:
        """The outcome of call ``call`` (for ``instance``); raises KeyError if unknown."""
        for c in self.calls:
            if c.call == call and c.instance == instance:
                return c.outcome
        raise KeyError((call, instance))


#: The statuses of a call a run left unfinished: the run was cancelled.
_UNFINISHED = (Status.CANCELLED, Status.PENDING, Status.RUNNING)

_set_call, _set_instance, _set_tool, _set_outcome, _set_reason, _set_error = (
    slots.slot_setters(CallOutcome))


def _new_outcome(*, call: int, instance: str | None, tool: str | None, outcome: Status,
                 reason: str, error: str | None) -> CallOutcome:
    # CallOutcome(**fields) through its slots: one per call of every run.
    made = slots.new(CallOutcome)
    _set_call(made, call)
    _set_instance(made, instance)
    _set_tool(made, tool)
    _set_outcome(made, outcome)
    _set_reason(made, reason)
    _set_error(made, error)
    return made


#: How a run's result makes each call's outcome (see :mod:`obelisk.core.slots`).
new_outcome = slots.checked(CallOutcome, _new_outcome)


def build_result(plan: CompiledPlan, context: Context, status: Sequence[Status],
                 errors: Mapping[int, Any], reasons: Mapping[int, str],
                 trace: Iterable[Event], *, cancelled: bool = False,
                 approvals: Mapping[int, Any] | None = None) -> RunResult:
    """The result of a finished (or cancelled) run: the approval messages, then the error
    messages, each in node order, appended to the context; one CallOutcome per node; the
    run is cancelled when asked or when a call is left unfinished."""
    approvals = approvals or {}
    for node_id in sorted(approvals):
        context = context.append(approvals[node_id])
    errors_out = []
    for node_id in sorted(errors):
        message = errors[node_id]
        context = context.append(message)
        errors_out.append(message)
    # Plain dicts read once: a persistent map's lookup costs several times a dict's, and
    # every node looks twice.
    reason_of = dict(reasons)
    error_of = {node_id: message["data"]["error"]["type"]
                for node_id, message in errors.items()}
    make = new_outcome
    calls = tuple([
        make(call=node.index, instance=node.instance, tool=node.tool, outcome=status[node.id],
             reason=reason_of.get(node.id, ""), error=error_of.get(node.id))
        for node in plan.nodes
    ])
    run_status = RunStatus.CANCELLED if cancelled or any(
        map(_UNFINISHED.__contains__, status)) else RunStatus.COMPLETED
    return RunResult(
        context=context, calls=calls, errors=tuple(errors_out),
        trace=tuple(e.to_json(plan) for e in trace), status=run_status, plan=plan,
    )
