"""Diagnostics: what the compiler reports, and how it is rendered for people and machines.

A :class:`Diagnostic` names a code (:class:`~obelisk.compiler.codes.DiagnosticCode`: the
protocol's table, plus a few of obelisk's own),
a severity, the call index, a JSON Pointer into the call, the span inside the expression,
related calls, a hint and, for the checks over the graph, structured details (the cycle's
edges, the race's paths). Diagnostics are values; the renderers are pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from attrs import field, frozen

from obelisk.compiler.codes import CODES, DiagnosticCode, Severity, code_of
from obelisk.core.ast import Span
from obelisk.core.text import caret_line

__all__ = [
    "CODES", "CycleDetails", "CycleStep", "Details", "Diagnostic", "DiagnosticCode",
    "ReferenceDetails", "ScopeRaceDetails", "Severity", "TypeMismatchDetails",
    "UnreachableDetails", "WriteRaceDetails", "call_label", "code_of", "render_text",
    "sort_diagnostics", "summary",
]

# -- structured details: what a diagnostic is about, as data ----------------------------


@frozen
class CycleStep:
    """One edge of a cycle: node ``reader`` reads ``read``, which node ``writer`` writes
    (as ``written``)."""

    writer: int
    reader: int
    written: str
    read: str


@frozen
class CycleDetails:
    """The nodes of a cycle (sorted) and its edges, in the order the message lists them."""

    nodes: tuple[int, ...]
    steps: tuple[CycleStep, ...]


@frozen
class WriteRaceDetails:
    """Two nodes that write overlapping paths (``first_path``, ``second_path``) unordered."""

    first: int
    second: int
    first_path: str
    second_path: str


@frozen
class ScopeRaceDetails:
    """A node whose ``_scopes`` snapshot of ``kinds`` may see the writes of ``writers``
    (node id, path written), which it does not wait for."""

    node: int
    kinds: tuple[str, ...]
    writers: tuple[tuple[int, str], ...]


@frozen
class UnreachableDetails:
    """A node that needs two or more ``alternatives`` of node ``writer``'s output."""

    node: int
    writer: int
    alternatives: tuple[int, ...]


@frozen
class ReferenceDetails:
    """A node's read of ``reference`` (dangling, or an input to be supplied)."""

    node: int
    reference: str


@frozen
class TypeMismatchDetails:
    """The JSON types a parameter may receive (``produced``, from ``source``) and the types
    it accepts."""

    node: int
    produced: tuple[str, ...]
    accepted: tuple[str, ...]
    source: str


#: The structured details a diagnostic may carry (None for the ones told by text alone).
Details = (CycleDetails | WriteRaceDetails | ScopeRaceDetails | UnreachableDetails
           | ReferenceDetails | TypeMismatchDetails)


def call_label(index: int, tool: str | None, instance: str | None,
               instance_word: str = "") -> str:
    """How every message names a call: ``call 3 (tool) [①]`` (tool and instance when
    known); ``instance_word`` goes before the instance id (``[instance ①]``)."""
    name = f"call {index}"
    if tool:
        name += f" ({tool})"
    if instance is not None:
        name += f" [{instance_word}{instance}]"
    return name


@frozen
class Diagnostic:
    """One problem found in a plan. ``call`` is None for plan-wide diagnostics.

    ``code`` may be given by name (``"cycle"``); a name not in the codes table raises
    KeyError. ``severity`` defaults to the code's.
    """

    code: DiagnosticCode = field(converter=code_of)
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
    #: What the diagnostic is about, as data (not compared: two diagnostics that say the
    #: same thing at the same place are one, whatever their details).
    details: Details | None = field(default=None, eq=False, kw_only=True)

    @severity.default
    def _default_severity(self) -> Severity:
        return self.code.severity

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
        """The diagnostic as a JSON object (the protocol's fields, plus obelisk's).

        ``details`` stay out of it: the JSON form is pinned; read them as attributes."""
        out: dict[str, Any] = {
            "code": self.code.value,
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
        where.append(call_label(diagnostic.call, diagnostic.tool, diagnostic.instance,
                                "instance "))
    if diagnostic.pointer:
        where.append(diagnostic.pointer + ":")
    elif diagnostic.call is not None:
        where[-1] += ":"
    head = " ".join(where)
    lines = [f"{head} {diagnostic.severity.value}[{diagnostic.code}]: {diagnostic.message}"]
    if diagnostic.expression is not None and diagnostic.span is not None:
        lines.append(caret_line(diagnostic.expression, diagnostic.span.start,
                                diagnostic.span.end, indent="    "))
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
