"""A plan's diagnostics as text: located in the plan file, with the line and a caret.

Every string in a diagnostic can come from input: it is printed through
:func:`~obelisk.cli.safe.inert`, so no escape sequence or carriage return in a tool
name, expression or hint acts on the terminal. A run's report is rendered by
:mod:`obelisk.cli.report`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from attrs import evolve

from obelisk import CompiledPlan, Diagnostic, render_text, summary
from obelisk.cli.paint import STYLES, Paint, paint_for, word
from obelisk.cli.safe import inert
from obelisk.planfile import PlanFile
from obelisk.positions import Source, Where, diagnostic_pointer, where_all


def render_diagnostics(diagnostics: Sequence[Diagnostic], source: str, out: TextIO) -> None:
    """Print each diagnostic as a compiler does (location, code, message, caret, hint)."""
    for diagnostic in diagnostics:
        print(render_text(inert_diagnostic(diagnostic), inert(source)), file=out)


def wheres(diagnostics: Sequence[Diagnostic], pf: PlanFile) -> list[Where | None]:
    """Each diagnostic's line and column in the plan file (None when its text is not
    known). The file's text is scanned here, once, only because something is reported."""
    if pf.text is None or not diagnostics:
        return [None] * len(diagnostics)
    items = [(diagnostic_pointer(d.call, d.pointer, pf.plan_pointer),
              d.span.start if d.span is not None and d.expression is not None else None,
              d.span.end if d.span is not None and d.expression is not None else None)
             for d in diagnostics]
    return list(where_all(Source.of(pf.text), items))


def render_located(diagnostics: Sequence[Diagnostic], pf: PlanFile, plan: CompiledPlan | None,
                   out: TextIO, located: Sequence[Where | None] | None = None) -> None:
    """Print each diagnostic as ``FILE:LINE:COL: severity[code]: message``, then the
    file's line with a caret under the span, the call it is in, a cycle's edges one per
    line, and the hint. ``located``: each diagnostic's place, when already found (None
    for one that has no place in the file: ``FILE: severity[code]: message``)."""
    if located is None:
        located = wheres(diagnostics, pf)
    source = (Source.of(pf.text) if pf.text is not None and any(w is not None for w in located)
              else None)
    paint = paint_for(out)
    for d, where in zip(diagnostics, located, strict=True):
        head = f"{inert(pf.name)}:"
        if where is not None:
            head += f"{where.line}:{where.column}:"
        severity = d.severity.value
        lines = [f"{paint(head, 'bold')} {word(paint, f'{severity}[{d.code}]', severity)}: "
                 f"{inert(d.message)}"]
        if where is not None and source is not None:
            line, caret = _snippet(source.line(where.line), where)
            mark = caret.index("^")
            lines += [line, caret[:mark] + word(paint, caret[mark:], severity)]
        if d.call is not None:
            label = f"call {d.call}" + (f" ({inert(d.tool)})" if d.tool else "") + (
                f" [instance {inert(d.instance)}]" if d.instance is not None else "")
            lines.append(f"    in {label}" + (f" at {inert(d.pointer)}" if d.pointer else ""))
        steps = getattr(d.details, "steps", None)
        if d.code == "cycle" and steps and plan is not None:
            for step in steps:  # one edge per line: who writes what the next one reads
                lines.append(f"    {_node(plan, step.writer)} writes {inert(step.written)}, "
                             f"read by {_node(plan, step.reader)} as {inert(step.read)}")
        elif d.calls:
            lines.append("    calls: " + ", ".join(str(c) for c in d.calls))
        if d.hint:
            lines.append(f"    {paint('hint:', 'cyan')} {inert(d.hint)}")
        print("\n".join(lines), file=out)


def painted_summary(diagnostics: Sequence[Diagnostic], paint: Paint) -> str:
    """``2 errors, 1 warning`` in the colour of the worst, or ``no problems`` in green."""
    worst = next((s for s in ("error", "warning", "info")
                  if any(d.severity.value == s for d in diagnostics)), None)
    return paint(summary(diagnostics), STYLES[worst] if worst else "green")


def _node(plan: CompiledPlan, node_id: int) -> str:
    node = plan.nodes[node_id]
    label = f"call {node.index}" + (f" ({inert(node.tool)})" if node.tool else "")
    return label + (f" [instance {inert(node.instance)}]" if node.instance is not None else "")


def _snippet(line: str, where: Where) -> list[str]:
    """The line (cut around the caret when long: minified JSON) and the caret under the
    span, both made inert with the caret kept aligned."""
    start, end = where.column - 1, where.end_column - 1
    prefix = suffix = ""
    if len(line) > 120:
        cut = max(0, start - 60)
        suffix = "…" if len(line) > cut + 120 else ""
        line, start, end, prefix = line[cut:cut + 120], start - cut, end - cut, "…" if cut else ""
    before = inert(line[:start])
    marked = inert(line[start:end])
    number = str(where.line)
    return [f"    {number} | {prefix}{before}{marked}{inert(line[end:])}{suffix}",
            f"    {' ' * len(number)} | {' ' * (len(prefix) + len(before))}"
            f"{'^' * max(1, len(marked))}"]


def inert_diagnostic(d: Diagnostic) -> Diagnostic:
    """``d`` with every text field made :func:`inert`, its span moved to match, so the
    caret stays under the part of the expression it marks."""
    span, expression = d.span, d.expression
    if expression is not None:
        if span is not None:
            span = evolve(span, start=len(inert(expression[:span.start])),
                          end=len(inert(expression[:span.end])))
        expression = inert(expression)
    return evolve(d, message=inert(d.message), pointer=inert(d.pointer), span=span,
                  expression=expression, hint=None if d.hint is None else inert(d.hint),
                  instance=None if d.instance is None else inert(d.instance),
                  tool=None if d.tool is None else inert(d.tool))


def render_notes(notes: Sequence[Diagnostic], pf: PlanFile, err: TextIO) -> None:
    """Print what the command's inputs call for (``no-tools``): diagnostics about no place
    in the plan file."""
    render_located(notes, pf, None, err, [None] * len(notes))


def render_refusal(plan: CompiledPlan, pf: PlanFile, err: TextIO) -> None:
    """Why nothing ran: the plan's diagnostics, then a one-line summary."""
    render_located(plan.diagnostics, pf, plan, err)
    source = pf.name
    print(f"{inert(source)}: the plan is invalid ({summary(plan.diagnostics)}); nothing ran",
          file=err)
