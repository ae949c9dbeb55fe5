"""The run report: what a run (real or dry) produced, as one JSON object.

``report(result)`` gives status, diagnostics, calls, errors, views and trace;
``views(context)`` is every data kind's value, globally and per instance. The CLI prints
these for ``obelisk run`` and ``obelisk dry-run`` alike; the conformance vectors compare
them.
"""

from __future__ import annotations

from typing import Any

from pyrsistent import PMap, PVector

from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.core.errors import WriteError
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING
from obelisk.interpreters.result import RunResult


def views(context: Context) -> dict[str, Any]:
    """For every data kind: the value of ``†kind`` globally and per instance (MISSING
    left out; a kind whose writes cannot be read shows ``{"error": ...}``)."""
    out: dict[str, Any] = {}
    for kind in sorted(context.kinds):
        per: dict[str, Any] = {}
        for instance in (None, *context.instances):
            try:
                value = context.value(kind, (), instance)
            except WriteError as exc:
                per["global" if instance is None else instance] = {"error": str(exc)}
                continue
            if value is not MISSING:
                per["global" if instance is None else instance] = thaw(value)
        out[kind] = per
    return out


def report(result: RunResult) -> dict[str, Any]:
    """The report of a run: status, diagnostics, calls, errors, views, trace."""
    return {
        "status": result.status.value,
        "diagnostics": [d.to_json() for d in result.plan.diagnostics],
        "calls": [c.to_json() for c in result.calls],
        "errors": [thaw(e) if isinstance(e, (PMap, PVector)) else e for e in result.errors],
        "views": views(result.context),
        "trace": list(result.trace),
    }


def invalid_report(plan: CompiledPlan) -> dict[str, Any]:
    """The report of a plan that was refused: status ``invalid`` and its diagnostics."""
    return {"status": "invalid", "diagnostics": [d.to_json() for d in plan.diagnostics],
            "calls": [], "errors": [], "views": {}, "trace": []}
