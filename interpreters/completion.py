"""Completing calls: what a call's outcome does to a run (docs/semantics.md §7 step 6),
applied to a transition under way (:class:`~obelisk.interpreters.state.Step`). The
machine's ``complete``, ``complete_all`` and ``settle`` are built on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from obelisk.compiler.conform import validate_output
from obelisk.core.errors import WriteError
from obelisk.core.messages import Write
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING
from obelisk.interpreters import calls, records
from obelisk.interpreters.events import EventKind, Status
from obelisk.interpreters.outcomes import Chose, Outcome, Raised, Returned
from obelisk.interpreters.state import Step, end_call, fail_call

__all__ = ["complete_call", "complete_many"]

# Read on every completion: module constants (an Enum member through its class costs more).
_RUNNING, _EXECUTED = Status.RUNNING, Status.EXECUTED
_WROTE, _EXECUTED_EVENT = EventKind.WROTE, EventKind.EXECUTED


def complete_many(step: Step, finished: Iterable[tuple[int, Outcome, str]]) -> None:
    """:func:`complete_call` of each in turn; several in place (see :meth:`Step.batch`),
    one as it is."""
    if type(finished) is not tuple and type(finished) is not list:
        finished = list(finished)
    if len(finished) > 1:
        step.batch()
    for node_id, outcome, date in finished:
        complete_call(step, node_id, outcome, date)


def complete_call(step: Step, node_id: int, outcome: Outcome, date: str) -> None:
    """Record what a RUNNING call produced (see :func:`obelisk.interpreters.machine.complete`)."""
    if step.status[node_id] is not _RUNNING:
        raise ValueError(f"node {node_id} is not running")
    node = step.plan.nodes[node_id]  # _finish takes it out of ``running``
    output = node.output
    match outcome:
        case Returned(value=value):
            if output is None:  # fire-and-forget: the result is dropped
                step.record(_EXECUTED_EVENT, node_id)
                end_call(step, node_id, _EXECUTED, "")
            else:
                _write(step, node_id, 0, value, date, "")
        case Raised(type=etype, message=message, data=data, contract=contract):
            if output is not None and len(output.alternatives) >= 2 and not contract:
                error: dict[str, Any] = {"type": etype, "message": message}
                if data is not MISSING:
                    error["data"] = records.json_or_repr(data, step.max_nodes,  # as in _fail
                                                         step.max_bytes)
                _write(step, node_id, len(output.alternatives) - 1, error, date,
                       f"{etype} routed to alternative {len(output.alternatives)}")
            else:
                fail_call(step, node_id, etype, message, data=data)
        case Chose(path=path, value=value):
            alt = calls.alternative_of(node, path) if isinstance(path, str) else None
            if alt is None:
                declared = node.output_text or "(no _outputPath)"
                fail_call(step, node_id, "BranchContract", f"the activity chose "
                      f"{records.shown(path)}, which is not an alternative of {declared}")
            else:
                _write(step, node_id, alt, value, date, f"chose alternative {alt + 1}")
        case _:  # pragma: no cover
            raise TypeError(f"not an outcome: {outcome!r}")


def _write(step: Step, node_id: int, alt: int, value: Any, date: str, note: str) -> None:
    node = step.plan.nodes[node_id]
    assert node.output is not None
    frozen = records.checked_result(node, value, step.max_nodes, step.max_bytes)
    if isinstance(frozen, Raised):
        fail_call(step, node_id, frozen.type, frozen.message)
        return
    tool = step.plan.tool_of(node)
    if alt == 0 and tool is not None:
        problems = validate_output(tool, thaw(frozen))
        if problems:
            text = "; ".join(f"{p or '/'}: {m}" for p, m in problems)
            fail_call(step, node_id, "OutputSchema",
                  f"the result fails {tool.name}'s _output schema: {text}")
            return
    targets = node.output.alternatives[alt].targets
    if len(targets) == 1:  # the common case: one write, no Write made
        target = targets[0]
        text = node.sole_text or records.target_text(node, target)
        wrote = [text]
        error = step.append_output(
            records.output_message(node, target, frozen, date, text), target.kind,
            node.instance, target.path, node.method, frozen)
    else:
        writes = []
        wrote = []
        for target in targets:
            text = records.target_text(node, target)
            writes.append((records.output_message(node, target, frozen, date, text),
                           Write(target.kind, node.instance, target.path, node.method, frozen)))
            wrote.append(text)
        error = step.append_writes(writes)
    if error is not None:  # nothing of a failed fan-out is kept
        # Leave out the message's position in the context: it depends on timing, and
        # the report must not (docs/semantics.md §7, determinism).
        timeless = WriteError(error.reason, kind=error.kind, path=error.path,
                              method=error.method, instance=error.instance)
        fail_call(step, node_id, "WriteError", str(timeless))
        return
    if step.tracing:
        for path_text in wrote:
            step.record(_WROTE, node_id, path_text)
        step.record(_EXECUTED_EVENT, node_id, note)
    if alt:  # the first alternative is not recorded (see Took)
        step.alts = step.alts.set(node_id, alt)
    end_call(step, node_id, _EXECUTED, note)
