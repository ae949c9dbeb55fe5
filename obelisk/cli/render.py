"""Reports as text: a run's report (dry or real) and a plan's diagnostics.

Every string in a report or a diagnostic can come from input: it is printed through
:func:`~obelisk.cli.safe.inert` (values through ``json_text``), so no escape sequence or
carriage return in a tool name, reason or value acts on the terminal.

The run report arrives as the JSON the ``--json`` option prints (the documented, stable
form); :meth:`RunReport.of` reads it once into typed values, and :func:`render_report`
prints only from those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from attrs import evolve, frozen
from pyrsistent import PVector, pvector

from obelisk import CompiledPlan, Diagnostic, plural, render_text, summary
from obelisk.cli.safe import inert, json_text
from obelisk.planfile import PlanFile
from obelisk.positions import Source, Where, diagnostic_pointer, where_all


@frozen
class CallRow:
    """One call's line: where it stands in the plan, its tool, its outcome and why."""

    call: int
    instance: str | None
    tool: str | None
    outcome: str
    reason: str


@frozen
class View:
    """The value of ``†kind`` at the end of the run, globally or for one instance."""

    kind: str
    layer: str  # "global" or an instance id
    value: Any  # plain JSON


@frozen
class ErrorRow:
    """An error message the run appended: the failed call's tool and the error."""

    tool: str
    instance: str | None
    type: str
    message: str


@frozen
class Choice:
    """The alternative (1-based) a branching call took in an explored combination."""

    call: int
    instance: str | None
    alternative: int


@frozen
class Combination:
    """One explored combination of branches and the calls it executed, skipped, failed."""

    choices: PVector[Choice]
    executed: PVector[Any]  # call indexes, or [index, instance] pairs
    skipped: PVector[Any]
    failed: PVector[Any]


@frozen
class Exploration:
    """What ``--explore`` tried: how many combinations of how many, and their outcomes."""

    total: int
    run: int
    truncated: bool
    combinations: PVector[Combination]


@frozen
class RunReport:
    """A run's report, typed: status, one row per call, final views, errors, exploration."""

    status: str
    calls: PVector[CallRow]
    views: PVector[View]
    errors: PVector[ErrorRow]
    explore: Exploration | None = None

    @classmethod
    def of(cls, report: Mapping[str, Any]) -> RunReport:
        """Read the JSON report of a run or dry run (``obelisk dry-run --json``)."""
        calls = pvector(CallRow(c["call"], c["instance"], c["tool"], c["outcome"], c["reason"])
                        for c in report["calls"])
        views = pvector(View(kind, layer, value) for kind, per in report["views"].items()
                        for layer, value in per.items())
        errors = pvector(_error_row(message) for message in report["errors"])
        explore = report.get("explore")
        return cls(report["status"], calls, views, errors,
                   _exploration(explore) if explore else None)


def _error_row(message: Mapping[str, Any]) -> ErrorRow:
    error = message["data"]["error"]
    return ErrorRow(message["data"]["call"].get("_tool", "?"), message.get("_instance"),
                    error["type"], error["message"])


def _exploration(explore: Mapping[str, Any]) -> Exploration:
    return Exploration(explore["total"], explore["run"], explore["truncated"], pvector(
        Combination(pvector(Choice(c["call"], c["instance"], c["alternative"])
                            for c in combo["choices"]),
                    pvector(combo["executed"]), pvector(combo["skipped"]),
                    pvector(combo["failed"]))
        for combo in explore["combinations"]))


def render_report(report: RunReport, out: TextIO) -> None:
    """Print the report as a table of calls, then values, errors, exploration and status."""
    tools = [inert(c.tool or "?") for c in report.calls]
    width = max([len(t) for t in tools] + [4])
    print(f"{'call':>4}  {'instance':<8}  {'tool':<{width}}  {'outcome':<9}  reason", file=out)
    for c, tool in zip(report.calls, tools, strict=True):
        instance = "" if c.instance is None else inert(str(c.instance))
        print(f"{c.call:>4}  {instance:<8}  {tool:<{width}}  {inert(c.outcome):<9}  "
              f"{inert(c.reason)}", file=out)
    if report.views:
        print("\nvalues:", file=out)
        for view in report.views:
            label = f"†{inert(view.kind)}" + ("" if view.layer == "global"
                                              else f"  [instance {inert(view.layer)}]")
            print(f"  {label} = {json_text(view.value, indent=None, stream=out)}", file=out)
    if report.errors:
        print("\nerrors:", file=out)
        for error in report.errors:
            where = "" if error.instance is None else f" [instance {inert(error.instance)}]"
            print(f"  {inert(error.tool)}{where}: {inert(error.type)}: {inert(error.message)}",
                  file=out)
    if report.explore:
        _render_exploration(report.explore, out)
    # The status words agree with the exit code: a run that appended errors says so.
    errors = len(report.errors)
    tail = f" with {errors} error{'s' if errors != 1 else ''}" if errors else ""
    print(f"\nstatus: {inert(report.status)}{tail}", file=out)


def _render_exploration(explore: Exploration, out: TextIO) -> None:
    print(f"\nexplored {explore.run} of {plural(explore.total, 'branch combination')}"
          + (" (truncated)" if explore.truncated else "") + ":", file=out)
    for number, combo in enumerate(explore.combinations, 1):
        # TODO(arch): the call label; kept without the tool name so the output is unchanged.
        chosen = ", ".join(
            f"call {c.call}{'' if c.instance is None else ' [' + inert(str(c.instance)) + ']'}"
            f" -> alternative {c.alternative}" for c in combo.choices) or "no branch taken"
        print(inert(f"  {number}. {chosen}: executed {list(combo.executed)}, "
                    f"skipped {list(combo.skipped)}, failed {list(combo.failed)}"), file=out)


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
    for d, where in zip(diagnostics, located, strict=True):
        head = f"{inert(pf.name)}:"
        if where is not None:
            head += f"{where.line}:{where.column}:"
        lines = [f"{head} {d.severity.value}[{d.code}]: {inert(d.message)}"]
        if where is not None and source is not None:
            lines.extend(_snippet(source.line(where.line), where))
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
            lines.append(f"    hint: {inert(d.hint)}")
        print("\n".join(lines), file=out)


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
