"""Diagnostics: what the compiler reports, and how it is rendered for people and machines.

A :class:`Diagnostic` names a code (CONFORMANCE.md's table, plus a few of obelisk's own),
a severity, the call index, a JSON Pointer into the call, the span inside the expression,
related calls and a hint. Diagnostics are values; the renderers are pure functions.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Any

from attrs import field, frozen

from obelisk.core.ast import Span
from obelisk.core.errors import _excerpt


class Severity(str, enum.Enum):
    """How bad a diagnostic is. Only errors stop a plan from running."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


#: Every code obelisk reports, with its severity. The first twelve are CONFORMANCE.md's.
CODES: dict[str, Severity] = {
    "syntax": Severity.ERROR,
    "unknown-tool": Severity.ERROR,
    "param-schema": Severity.ERROR,
    "invalid-output-method": Severity.ERROR,
    "invalid-output-target": Severity.ERROR,
    "dangling-reference": Severity.ERROR,
    "cycle": Severity.ERROR,
    "type-mismatch": Severity.ERROR,
    "write-race": Severity.WARNING,
    "unreachable": Severity.WARNING,
    "scope-race": Severity.WARNING,
    "external-reference": Severity.INFO,
    # obelisk's own:
    "invalid-call": Severity.ERROR,      # a call that is not a JSON object
    "invalid-meta": Severity.ERROR,      # _instance or _scopes of the wrong shape
    "no-instances": Severity.INFO,       # instances=True but the context names none
    "too-many": Severity.INFO,           # a capped kind of diagnostic was cut short
}


@frozen
class Diagnostic:
    """One problem found in a plan. ``call`` is None for plan-wide diagnostics."""

    code: str
    message: str
    call: int | None = None
    pointer: str = ""
    span: Span | None = None
    expression: str | None = None
    calls: tuple[int, ...] = ()
    hint: str | None = None
    instance: str | None = None
    tool: str | None = None
    severity: Severity = field()

    @severity.default
    def _default_severity(self) -> Severity:
        return CODES[self.code]

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[Any, ...]:
        """Deterministic order: by call, instance, pointer, column, code, related calls
        (numerically: the race of calls 0 and 2 before that of 0 and 10), message."""
        return (
            -1 if self.call is None else self.call,
            self.instance or "",
            self.pointer,
            self.span.start if self.span else -1,
            self.code,
            self.calls,
            self.message,
        )

    def to_json(self) -> dict[str, Any]:
        """The diagnostic as a JSON object (CONFORMANCE.md's fields, plus obelisk's)."""
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "call": self.call,
            "pointer": self.pointer,
        }
        if self.calls:
            out["calls"] = list(self.calls)
        if self.instance is not None:
            out["instance"] = self.instance
        if self.tool is not None:
            out["tool"] = self.tool
        if self.span is not None:
            out["span"] = {"start": self.span.start, "end": self.span.end,
                           "column": self.span.column}
        if self.expression is not None:
            out["expression"] = self.expression
        if self.hint:
            out["hint"] = self.hint
        return out


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> tuple[Diagnostic, ...]:
    """Diagnostics in their deterministic order, exact duplicates removed."""
    seen = set()
    out = []
    for diagnostic in sorted(diagnostics, key=Diagnostic.sort_key):
        if diagnostic not in seen:
            seen.add(diagnostic)
            out.append(diagnostic)
    return tuple(out)


def render_text(diagnostic: Diagnostic, source: str = "plan") -> str:
    """The diagnostic as a compiler prints it: location, severity[code], message, caret, hint.

        plan.json: call 1 (confirmOrder) /receipt: error[dangling-reference]: ...
          †state.recipt
                 ^^^^^^
          hint: did you mean †state.receipt (written by call 0)?
    """
    where = [f"{source}:"]
    if diagnostic.call is not None:
        label = f"call {diagnostic.call}"
        if diagnostic.tool:
            label += f" ({diagnostic.tool})"
        if diagnostic.instance is not None:
            label += f" [instance {diagnostic.instance}]"
        where.append(label)
    if diagnostic.pointer:
        where.append(diagnostic.pointer + ":")
    elif diagnostic.call is not None:
        where[-1] += ":"
    head = " ".join(where)
    lines = [f"{head} {diagnostic.severity.value}[{diagnostic.code}]: {diagnostic.message}"]
    if diagnostic.expression is not None and diagnostic.span is not None:
        shown, offset = _excerpt(diagnostic.expression, diagnostic.span.start)
        width = max(1, min(diagnostic.span.end - diagnostic.span.start, len(shown) - offset))
        lines.append(f"    {shown}")
        lines.append("    " + " " * offset + "^" * width)
    if diagnostic.calls:
        lines.append("    calls: " + ", ".join(str(c) for c in diagnostic.calls))
    if diagnostic.hint:
        lines.append(f"    hint: {diagnostic.hint}")
    return "\n".join(lines)


def summary(diagnostics: Sequence[Diagnostic]) -> str:
    """``2 errors, 1 warning`` (or ``no problems``)."""
    counts = {s: sum(d.severity is s for d in diagnostics) for s in Severity}
    parts = [f"{n} {s.value}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
    return ", ".join(parts) if parts else "no problems"
