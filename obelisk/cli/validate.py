"""The commands that read a plan without running it: ``validate``, ``graph``, ``schema``."""

from __future__ import annotations

import argparse
from typing import TextIO

from obelisk import ToolError, ToolRegistry, __version__, compose_calls_schema, summary
from obelisk.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    Command,
    add_plan_file,
    compile_file,
    load_activities,
)
from obelisk.cli.render import render_diagnostics
from obelisk.cli.safe import inert, inert_lines, json_text
from obelisk.jsonio import InputError
from obelisk.planfile import read_plan_file
from obelisk.sarif import to_sarif


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE and ``--format text|json|sarif``."""
    add_plan_file(parser)
    parser.add_argument("--format", choices=["text", "json", "sarif"], default="text")


def validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print every diagnostic; exit 1 when the plan has errors."""
    pf = read_plan_file(args.file)
    plan = compile_file(pf)
    diagnostics = plan.diagnostics
    if args.format == "json":
        print(json_text([d.to_json() for d in diagnostics], stream=out), file=out)
    elif args.format == "sarif":
        print(json_text(to_sarif(diagnostics, pf.name, __version__), stream=out), file=out)
    else:
        render_diagnostics(diagnostics, pf.name, out)
        # Calls as listed; nodes differ when instancing copies calls or a call is not
        # an object (no node). Edges join nodes.
        nodes = f"{len(plan.nodes)} node(s), " if len(plan.nodes) != len(plan.calls) else ""
        print(f"{inert(pf.name)}: {len(plan.calls)} call(s), {nodes}{len(plan.edges)} edge(s): "
              f"{summary(diagnostics)}", file=out)
    return EXIT_FAILED if not plan.ok else EXIT_OK


def add_graph_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE and ``--format mermaid|dot|json``."""
    add_plan_file(parser)
    parser.add_argument("--format", choices=["mermaid", "dot", "json"], default="mermaid")


def graph(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the dataflow graph, even of an invalid plan (with a note on stderr)."""
    pf = read_plan_file(args.file)
    plan = compile_file(pf)
    # Labels quote tool names and expressions: each line of the graph is made inert.
    if args.format == "dot":
        out.write(inert_lines(plan.to_dot()))
    elif args.format == "json":
        print(json_text(plan.to_json(), stream=out), file=out)
    else:
        out.write(inert_lines(plan.to_mermaid()))
    if not plan.ok:
        print(f"note: the plan has errors ({summary(plan.diagnostics)}); "
              f"see obelisk validate {inert(args.file)}", file=err)
    return EXIT_OK


def add_schema_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE and ``--activities MODULE:NAME``."""
    add_plan_file(parser)
    parser.add_argument("--activities", metavar="MODULE:NAME",
                   help="an importable dict of activities, to fill in _activity")


def schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the calls schema composed from the file's tools."""
    pf = read_plan_file(args.file)
    try:
        registry = ToolRegistry.of(pf.tools)
    except ToolError as exc:
        raise InputError(f"{pf.name}: {exc}") from None
    names = list(load_activities(args.activities)) if args.activities else []
    print(json_text(compose_calls_schema(registry, names), stream=out), file=out)
    return EXIT_OK


VALIDATE = Command("validate", "check a plan file and report every problem",
                   add_validate_arguments, validate)
GRAPH = Command("graph", "print a plan's dataflow graph", add_graph_arguments, graph)
SCHEMA = Command("schema", "print the composed calls schema for a file's tools",
                 add_schema_arguments, schema)
