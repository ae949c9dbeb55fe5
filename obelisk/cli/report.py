"""A run's report as text: the calls, the final values, the errors, what was explored.

Every string in a report can come from input: it is printed through
:func:`~obelisk.cli.safe.inert` (values through ``json_text``), so no escape sequence or
carriage return in a tool name, reason or value acts on the terminal.

The report arrives as the JSON the ``--json`` option prints (the documented, stable
form); :meth:`RunReport.of` reads it once into typed values, and :func:`render_report`
prints only from those. (Apart from the diagnostics' rendering, :mod:`obelisk.cli.render`,
so that ``validate`` does not build these classes.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

from attrs import frozen
from pyrsistent import PVector, pvector

from obelisk import plural
from obelisk.cli.paint import paint_for, word
from obelisk.cli.safe import inert, json_text


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
    render_body(report, out)
    render_status(report, out)


def render_body(report: RunReport, out: TextIO) -> None:
    """The report without its last line: the calls, values, errors and exploration (a
    command adds its own sections before :func:`render_status`)."""
    paint = paint_for(out)
    tools = [inert(c.tool or "?") for c in report.calls]
    width = max([len(t) for t in tools] + [4])
    print(paint(f"{'call':>4}  {'instance':<8}  {'tool':<{width}}  {'outcome':<9}  reason",
                "bold"), file=out)
    for c, tool in zip(report.calls, tools, strict=True):
        instance = "" if c.instance is None else inert(str(c.instance))
        outcome = word(paint, f"{inert(c.outcome):<9}", c.outcome)  # padded, then painted
        print(f"{c.call:>4}  {instance:<8}  {tool:<{width}}  {outcome}  "
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
            print(f"  {inert(error.tool)}{where}: {paint(inert(error.type), 'red')}: "
                  f"{inert(error.message)}", file=out)
    if report.explore:
        _render_exploration(report.explore, out)


def render_status(report: RunReport, out: TextIO) -> None:
    """The report's last line: ``status: completed`` (``with 2 errors`` when the run
    appended error messages, as the exit code says)."""
    errors = len(report.errors)
    tail = f" with {errors} error{'s' if errors != 1 else ''}" if errors else ""
    ok = report.status == "completed" and not errors
    status = paint_for(out)(f"{inert(report.status)}{tail}", "bold green" if ok else "bold red")
    print(f"\nstatus: {status}", file=out)


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
