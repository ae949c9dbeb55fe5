"""The commands that read a plan without running it: ``validate``, ``graph``, ``schema``."""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

from obelisk import (
    Diagnostic,
    ObeliskError,
    ToolError,
    ToolRegistry,
    __version__,
    compose_calls_schema,
    plural,
    summary,
)
from obelisk.cli.agentfile import check_max_ticks, file_request, read_plan_or_agent
from obelisk.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    add_inputs,
    add_plan_file,
    compile_file,
    input_notes,
    load_activities,
    read_inputs,
    read_inputs_without_plan,
)
from obelisk.cli.paint import paint_for
from obelisk.cli.render import painted_summary, render_located, render_notes, wheres
from obelisk.cli.safe import inert, inert_lines, json_text
from obelisk.jsonio import InputError
from obelisk.planfile import PLAN_FILE_SCHEMA, PlanFile
from obelisk.positions import Where

_RANK = {"info": 0, "warning": 1, "error": 2}


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE..., ``--format``, ``--tools``, ``--context``, ``--min-severity``, ``--fail-on``."""
    parser.add_argument("files", metavar="FILE", nargs="+",
                        help="plan files or directories of them (*.json), or - for stdin")
    parser.add_argument("--format", choices=["text", "json", "sarif"], default="text",
                        help="text for people (default), json (one object per diagnostic, "
                             "with file, line and column) or sarif (for code scanning)")
    add_inputs(parser)
    parser.add_argument("--min-severity", choices=["info", "warning", "error"], default="info",
                        help="show only diagnostics at least this severe (default: info)")
    parser.add_argument("--fail-on", choices=["warning", "error"], default="error",
                        help="exit 1 when a diagnostic is at least this severe "
                             "(default: error)")


def _expand(paths: list[str]) -> list[str]:
    """Each path, a directory replaced by the JSON files under it (sorted)."""
    found: list[str] = []
    for path in paths:
        if path != "-" and os.path.isdir(path):
            import pathlib  # here: a command given files only does not need it

            files = sorted(str(p) for p in pathlib.Path(path).rglob("*.json"))
            if not files:
                raise InputError(f"cannot read {path}: a directory with no *.json file in it")
            found.extend(files)
        else:
            found.append(path)
    return found


def validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Report every diagnostic of every file; exit 1 when one reaches ``--fail-on``, 2
    when a file could not be read (the others are still reported)."""
    shown_from, fail_from = _RANK[args.min_severity], _RANK[args.fail_on]
    code = EXIT_OK
    reports: list[tuple[PlanFile, list[Diagnostic], list[Where | None]]] = []
    for path in _expand(args.files):
        try:
            found = read_plan_or_agent(path)
            if isinstance(found, dict):  # an agent file: checked as obelisk agent reads it
                if args.format == "text":
                    print(_agent_summary(found, path, args, err), file=out)
                continue
            pf = read_inputs(path, args, err, found)
            plan = compile_file(pf)
        except InputError as exc:
            if len(args.files) == 1 and path == args.files[0]:
                raise  # one file: main reports it as ever
            print(f"error: {exc.render(inert)}", file=err)
            code = EXIT_USAGE
            continue
        diagnostics = [d for d in plan.diagnostics if _RANK[d.severity.value] >= shown_from]
        notes = [d for d in input_notes(pf) if _RANK[d.severity.value] >= shown_from]
        if any(_RANK[d.severity.value] >= fail_from for d in plan.diagnostics):
            code = max(code, EXIT_FAILED)  # notes are infos: they never fail a check
        # The plan's diagnostics have places in the file; the notes (no-tools) have none.
        located = wheres(diagnostics, pf) + [None] * len(notes)
        if args.format == "text":
            render_located(diagnostics + notes, pf, plan, out, located)
            # Calls as listed; nodes differ when instancing copies calls or a call is not
            # an object (no node). Edges join nodes.
            nodes = (f"{plural(len(plan.nodes), 'node')}, " if len(plan.nodes) != len(plan.calls)
                     else "")
            print(f"{inert(pf.name)}: {plural(len(plan.calls), 'call')}, {nodes}"
                  f"{plural(len(plan.edges), 'edge')}: "
                  f"{painted_summary(plan.diagnostics, paint_for(out))}", file=out)
        else:
            reports.append((pf, diagnostics + notes, located))
    if args.format == "json":
        print(json_text([{**d.to_json(), "file": pf.name, **(w.to_json() if w else {})}
                         for pf, ds, ws in reports for d, w in zip(ds, ws, strict=True)],
                        stream=out), file=out)
    elif args.format == "sarif":
        from obelisk.sarif import to_sarif_files  # here: urllib, for SARIF's file URIs

        print(json_text(to_sarif_files([(pf.name, ds, ws) for pf, ds, ws in reports],
                                       __version__), stream=out), file=out)
    return code


def _agent_summary(spec: dict[str, Any], path: str, args: argparse.Namespace,
                   err: TextIO) -> str:
    """The line ``validate`` prints for an agent file whose first request builds."""
    _no_plan_inputs(args, path)
    name = "standard input" if path == "-" else path
    check_max_ticks(spec, name)
    request = file_request(spec, name, args, err)
    return (f"{inert(name)}: agent file, {plural(len(spec.get('tools', [])), 'tool')}, "
            f"{plural(len(spec.get('context', [])), 'message')}: no problems (its first "
            f"request has {len(request.render()):,} characters: obelisk request "
            f"{inert(path)})")


def _no_plan_inputs(args: argparse.Namespace, path: str) -> None:
    """An agent file holds its own tools and context: ``--tools``/``--context`` are not
    put before them (``obelisk agent`` takes none), so giving them is refused."""
    if getattr(args, "tools", None) or getattr(args, "context", None):
        raise InputError(f"{path} is an agent file: --tools and --context apply to plan "
                         "files (an agent file holds its own tools and context)")


def add_graph_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE, ``--format mermaid|dot|svg|json`` and ``--no-legend``."""
    add_plan_file(parser)
    parser.add_argument("--format", choices=["mermaid", "dot", "svg", "json"],
                        default="mermaid",
                        help="mermaid (default), dot (Graphviz), svg (drawn by Graphviz's "
                             "dot, which must be installed) or json")
    parser.add_argument("--no-legend", action="store_true",
                        help="leave out the legend (mermaid, dot and svg)")
    add_inputs(parser)


def graph(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the dataflow graph, even of an invalid plan (with a note on stderr)."""
    pf = read_inputs(args.file, args, err)
    plan = compile_file(pf)
    legend = not args.no_legend
    # Labels quote tool names and expressions: each line of the graph is made inert.
    kind = "dot" if args.format == "svg" else args.format  # svg: DOT, drawn by dot
    if kind == "dot":
        text = plan.to_dot(legend)
    elif kind == "json":
        text = json_text(plan.to_json(), stream=out) + "\n"
    else:
        text = plan.to_mermaid(legend)
    if getattr(args, "mcp_servers", None) is not None:  # MCP calls marked read-only...
        from obelisk.cli.mcp import mark_graph

        text = mark_graph(text, kind, plan, args)
    if args.format == "svg":
        out.write(draw_svg(inert_lines(text)))
    else:
        out.write(text if kind == "json" else inert_lines(text))
    render_notes(input_notes(pf), pf, err)  # on stderr: the graph on stdout stays clean
    if not plan.ok:
        print(f"note: the plan has errors ({summary(plan.diagnostics)}); "
              f"see obelisk validate {inert(args.file)}", file=err)
    return EXIT_OK


#: How long Graphviz may take to draw a plan's graph.
DOT_TIMEOUT = 120


def draw_svg(dot_text: str) -> str:
    """``dot_text`` drawn as SVG by Graphviz's ``dot``. Raises :class:`InputError` when
    ``dot`` is not installed, :class:`ObeliskError` when it fails."""
    import shutil
    import subprocess

    dot = shutil.which("dot")
    if dot is None:
        raise InputError("--format svg draws the graph with Graphviz's dot program, which "
                         "is not on PATH: install Graphviz (Debian and Ubuntu: apt install "
                         "graphviz; macOS: brew install graphviz), or print --format dot "
                         "or --format mermaid instead")
    try:
        done = subprocess.run([dot, "-Tsvg"], input=dot_text.encode("utf-8"),
                              capture_output=True, timeout=DOT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise ObeliskError(f"Graphviz's dot did not draw the graph in {DOT_TIMEOUT} s; "
                           "print --format dot and draw it yourself") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise ObeliskError(f"Graphviz's dot ({dot}) could not draw the graph: {why}")
    return done.stdout.decode("utf-8")


def add_schema_arguments(parser: argparse.ArgumentParser) -> None:
    """[FILE], ``--tools``, ``--context``, ``--activities MODULE:NAME``, ``--plan-file``."""
    parser.add_argument("file", metavar="FILE", nargs="?",
                        help="plan file whose tools compose the schema (or - for stdin)")
    add_inputs(parser)
    parser.add_argument("--activities", metavar="MODULE:NAME",
                        help="an importable dict of activities, to fill in _activity")
    parser.add_argument("--plan-file", action="store_true",
                        help="print the JSON Schema of the plan-file format instead "
                             "(for editors)")


def schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the calls schema composed from the tools (or the plan-file format's schema)."""
    if args.plan_file:
        print(json_text(PLAN_FILE_SCHEMA, stream=out), file=out)
        return EXIT_OK
    if args.file is not None:
        found = read_plan_or_agent(args.file)
        if isinstance(found, dict):  # an agent file: the solution schema of its requests
            _no_plan_inputs(args, args.file)
            name = "standard input" if args.file == "-" else args.file
            print(json_text(file_request(found, name, args, err).schema, stream=out),
                  file=out)
            return EXIT_OK
        tools = read_inputs(args.file, args, err, found).tools
        name = "standard input" if args.file == "-" else args.file
    elif args.tools or args.context or args.mcp or args.mcp_config:
        tools = read_inputs_without_plan(args, err)
        name = args.tools or args.context or "--mcp"
    else:
        raise InputError("schema needs a plan FILE, --tools FILE, --context FILE or --mcp "
                         "SPEC (or --plan-file)")
    try:
        registry = ToolRegistry.of(tools)
    except ToolError as exc:
        raise InputError(f"{name}: {exc}") from None
    names = list(load_activities(args.activities)) if args.activities else []
    servers = getattr(args, "mcp_servers", None)
    if servers is not None:  # an MCP tool runs its activity, not the LLM
        names += list(servers.activities)
    print(json_text(compose_calls_schema(registry, names), stream=out), file=out)
    return EXIT_OK


VALIDATE = Command("validate", "check a plan file and report every problem",
                   add_validate_arguments, validate)
GRAPH = Command("graph", "print a plan's dataflow graph", add_graph_arguments, graph)
SCHEMA = Command("schema", "print the composed calls schema for a file's tools",
                 add_schema_arguments, schema)
