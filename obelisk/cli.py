"""The ``obelisk`` command line: a thin shell over the library.

Exit codes: 0 success, 1 a failed check (MISSING, an invalid plan, a failing vector),
2 bad usage or unreadable input. A user never sees a traceback for bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

import asyncio
import importlib
import inspect
from collections.abc import Mapping

from obelisk import __version__, resolve
from obelisk.compiler.diagnostics import render_text, summary
from obelisk.compiler.plan import CompiledPlan, compile_plan
from obelisk.compiler.tools import ToolError, ToolRegistry, compose_calls_schema
from obelisk.interpreters.aio import run_async
from obelisk.interpreters.common import gc_tuned
from obelisk.interpreters.dryrun import MockError, dry_run, invalid_report
from obelisk.interpreters.dryrun import report as dry_report
from obelisk.interpreters.machine import Approve, Deny, Replace
from obelisk.interpreters.sync import run_sync
from obelisk.planfile import PlanFile, read_plan_file
from obelisk.sarif import to_sarif
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, MessageError, ObeliskError, WriteError
from obelisk.core.values import MISSING
from obelisk.jsonio import InputError, dumps, load_json, parse_json
from obelisk.kit import cli as kit_cli

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def load_context(path: str) -> Context:
    """A context from a file: an array of messages, or an object with a "context" array."""
    data = load_json(path)
    if isinstance(data, dict):
        if "context" not in data:
            raise InputError(f'{path}: expected an array of messages or an object with "context"')
        data = data["context"]
    if not isinstance(data, list):
        raise InputError(f"{path}: a context is an array of messages, got {type(data).__name__}")
    try:
        return Context.of(data)
    except MessageError as exc:
        raise InputError(f"{path}: {exc}") from None


def cmd_resolve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    context = load_context(args.context)
    try:
        value = resolve(context, args.expression, args.instance)
    except ExpressionSyntaxError as exc:
        print(f"error: {exc.render()}", file=err)
        return EXIT_FAILED
    except WriteError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_FAILED
    if value is MISSING:
        print("MISSING", file=out)
        where = f" for instance {args.instance!r}" if args.instance else ""
        print(f"{args.expression} has no value in {args.context}{where}", file=err)
        return EXIT_FAILED
    print(dumps(value), file=out)
    return EXIT_OK


def cmd_conformance(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    return kit_cli.cmd_conformance(args, out, err)


def _compile(pf: PlanFile) -> CompiledPlan:
    try:
        context = Context.of(pf.context)
    except MessageError as exc:
        raise InputError(f"{pf.name}: context {exc}") from None
    try:
        return compile_plan(pf.plan, tools=pf.tools, context=context, instances=pf.instances)
    except ToolError as exc:
        raise InputError(f"{pf.name}: {exc}") from None


def cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    pf = read_plan_file(args.file)
    plan = _compile(pf)
    diagnostics = plan.diagnostics
    if args.format == "json":
        print(dumps([d.to_json() for d in diagnostics]), file=out)
    elif args.format == "sarif":
        print(dumps(to_sarif(diagnostics, pf.name, __version__)), file=out)
    else:
        for diagnostic in diagnostics:
            print(render_text(diagnostic, pf.name), file=out)
        # Calls as listed; nodes differ when instancing copies calls or a call is not
        # an object (no node). Edges join nodes.
        nodes = f"{len(plan.nodes)} node(s), " if len(plan.nodes) != len(plan.calls) else ""
        print(f"{pf.name}: {len(plan.calls)} call(s), {nodes}{len(plan.edges)} edge(s): "
              f"{summary(diagnostics)}", file=out)
    return EXIT_FAILED if not plan.ok else EXIT_OK


def cmd_graph(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    pf = read_plan_file(args.file)
    plan = _compile(pf)
    if args.format == "dot":
        out.write(plan.to_dot())
    elif args.format == "json":
        print(dumps(plan.to_json()), file=out)
    else:
        out.write(plan.to_mermaid())
    if not plan.ok:
        print(f"note: the plan has errors ({summary(plan.diagnostics)}); "
              f"see obelisk validate {args.file}", file=err)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    pf = read_plan_file(args.file)
    try:
        registry = ToolRegistry.of(pf.tools)
    except ToolError as exc:
        raise InputError(f"{pf.name}: {exc}") from None
    names = list(load_activities(args.activities)) if args.activities else []
    print(dumps(compose_calls_schema(registry, names)), file=out)
    return EXIT_OK


def load_activities(spec: str) -> Mapping[str, Callable[..., Any]]:
    """The activity mapping named ``package.module:NAME`` (a dict of name -> callable)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InputError(f"--activities takes package.module:NAME, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error in user code is bad input, not a crash
        raise InputError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    mapping = getattr(module, attribute, None)
    if not isinstance(mapping, Mapping) or not all(
            isinstance(k, str) and callable(v) for k, v in mapping.items()):
        raise InputError(f"{spec} must be a dict of activity name -> callable")
    return mapping


def _report_text(report: Mapping[str, Any], out: TextIO) -> None:
    calls = report["calls"]
    width = max([len(c["tool"] or "?") for c in calls] + [4])
    print(f"{'call':>4}  {'instance':<8}  {'tool':<{width}}  {'outcome':<9}  reason", file=out)
    for c in calls:
        instance = "" if c["instance"] is None else str(c["instance"])
        print(f"{c['call']:>4}  {instance:<8}  {c['tool'] or '?':<{width}}  {c['outcome']:<9}  "
              f"{c['reason']}", file=out)
    views = report["views"]
    if views:
        print("\nvalues:", file=out)
        for kind, per in views.items():
            for layer, value in per.items():
                label = f"†{kind}" + ("" if layer == "global" else f"  [instance {layer}]")
                print(f"  {label} = {dumps(value, indent=None)}", file=out)
    if report["errors"]:
        print("\nerrors:", file=out)
        for message in report["errors"]:
            error = message["data"]["error"]
            call = message["data"]["call"].get("_tool", "?")
            where = f" [instance {message['_instance']}]" if "_instance" in message else ""
            print(f"  {call}{where}: {error['type']}: {error['message']}", file=out)
    explore = report.get("explore")
    if explore:
        print(f"\nexplored {explore['run']} of {explore['total']} branch combination(s)"
              + (" (truncated)" if explore["truncated"] else "") + ":", file=out)
        for number, combo in enumerate(explore["combinations"], 1):
            chosen = ", ".join(
                f"call {c['call']}{'' if c['instance'] is None else ' [' + str(c['instance']) + ']'}"
                f" -> alternative {c['alternative']}" for c in combo["choices"]) or "no branch taken"
            print(f"  {number}. {chosen}: executed {combo['executed']}, skipped {combo['skipped']}, "
                  f"failed {combo['failed']}", file=out)
    print(f"\nstatus: {report['status']}", file=out)


def cmd_dry_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    pf = read_plan_file(args.file)
    mocks = dict(pf.mocks)
    if args.mocks:
        extra = load_json(args.mocks)
        if not isinstance(extra, Mapping):
            raise InputError(f"{args.mocks}: mocks are an object of tool name -> mock")
        mocks.update(extra)
    plan = _compile(replace_instances(pf, args.instances))
    if not plan.ok:
        report = invalid_report(plan)
        if args.json:
            print(dumps(report), file=out)
        else:
            for diagnostic in plan.diagnostics:
                print(render_text(diagnostic, pf.name), file=err)
            print(f"{pf.name}: the plan is invalid ({summary(plan.diagnostics)}); nothing ran",
                  file=err)
        return EXIT_FAILED
    try:
        result = dry_run(plan, mocks=mocks, interpreter=args.interpreter, explore=args.explore)
    except MockError as exc:
        raise InputError(f"{args.mocks or pf.name}: {exc}") from None
    report = result.report()
    if args.json:
        print(dumps(report), file=out)
    else:
        _report_text(report, out)
    return EXIT_FAILED if report["errors"] else EXIT_OK


def replace_instances(pf: PlanFile, instances: bool) -> PlanFile:
    return PlanFile(pf.name, pf.plan, pf.context, pf.tools, pf.instances or instances, pf.mocks)


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.interpreter != "asyncio" and (args.timeout is not None
                                          or args.max_concurrency is not None):
        # The sync interpreter runs one call at a time and cannot interrupt one: say so
        # rather than silently ignore the option.
        raise InputError("--timeout and --max-concurrency need --interpreter asyncio")
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise InputError("--max-concurrency must be at least 1")
    if args.timeout is not None and not args.timeout > 0:
        raise InputError("--timeout must be a positive number of seconds")
    pf = read_plan_file(args.file)
    activities = load_activities(args.activities)
    plan = _compile(replace_instances(pf, args.instances))
    if not plan.ok:
        for diagnostic in plan.diagnostics:
            print(render_text(diagnostic, pf.name), file=err)
        print(f"{pf.name}: the plan is invalid ({summary(plan.diagnostics)}); nothing ran", file=err)
        return EXIT_FAILED
    progress = Progress(len(plan.nodes), err, enabled=err.isatty() and not args.approve)
    approve = terminal_approval(out, err) if args.approve else None
    tracked = {name: progress.wrap(fn) for name, fn in activities.items()}
    if args.interpreter == "asyncio":
        result = asyncio.run(run_async(plan, activities=tracked, approve=approve,
                                       max_concurrency=args.max_concurrency, timeout=args.timeout))
    else:
        result = run_sync(plan, activities=tracked, approve=approve)
    progress.close()
    report = dry_report(result)
    _report_text(report, out)
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as handle:
                handle.write(dumps(result.context.to_json()) + "\n")
        except OSError as exc:
            raise InputError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    return EXIT_FAILED if result.errors or result.status != "completed" else EXIT_OK


class Progress:
    """Live progress on a terminal: calls done of total, running, failed."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.done = self.running = self.failed = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not self.enabled:
            return fn
        if inspect.iscoroutinefunction(fn):
            async def run_async_fn(*a: Any) -> Any:
                self._start()
                try:
                    return await fn(*a)
                except BaseException:
                    self.failed += 1
                    raise
                finally:
                    self._end()
            return run_async_fn

        def run_fn(*a: Any) -> Any:
            self._start()
            try:
                return fn(*a)
            except BaseException:
                self.failed += 1
                raise
            finally:
                self._end()
        return run_fn

    def _start(self) -> None:
        self.running += 1
        self._show()

    def _end(self) -> None:
        self.running -= 1
        self.done += 1
        self._show()

    def _show(self) -> None:
        self.stream.write(f"\r{self.done}/{self.total} done, {self.running} running, "
                          f"{self.failed} failed   ")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")


def terminal_approval(out: TextIO, err: TextIO) -> Callable[[dict[str, Any]], Any]:
    """Ask at the terminal before each call: approve, deny (with a reason), or edit."""

    def ask(call: dict[str, Any]) -> Any:
        print(f"\nabout to run {call.get('_tool')!r} with:", file=err)
        print(dumps({k: v for k, v in call.items() if not k.startswith("_")}), file=err)
        while True:
            err.write("[a]pprove, [d]eny, [e]dit parameters? ")
            err.flush()
            answer = sys.stdin.readline()
            if not answer:
                return Deny("no answer (end of input)")
            choice = answer.strip().lower()[:1]
            if choice == "a" or choice == "y":
                return Approve()
            if choice == "d" or choice == "n":
                err.write("reason: ")
                err.flush()
                return Deny(sys.stdin.readline().strip() or "denied at the terminal")
            if choice == "e":
                err.write("new parameters as one line of JSON: ")
                err.flush()
                text = sys.stdin.readline()
                try:
                    params = parse_json(text, "the edited parameters")
                except InputError as exc:
                    print(exc, file=err)
                    continue
                if not isinstance(params, dict):
                    print("the parameters must be a JSON object", file=err)
                    continue
                return Replace(params)

    return ask


class UsageError(Exception):
    """Bad command-line usage; ``main`` prints it with the usage line and exits 2."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    # argparse prints usage errors to sys.stderr and exits; this one raises instead, so
    # main() reports them on its own error stream.
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="obelisk",
        description="The Call/Plan protocol's reference implementation.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_Parser)

    p = sub.add_parser("resolve", help="print the value of an expression in a context")
    p.add_argument("context", metavar="CONTEXT.json", help="array of messages (or - for stdin)")
    p.add_argument("expression", metavar="EXPRESSION", help="for example '†state.user.id'")
    p.add_argument("--instance", metavar="ID", help="read for this instance (global data below it)")
    p.set_defaults(run=cmd_resolve)

    p = sub.add_parser("validate", help="check a plan file and report every problem")
    p.add_argument("file", metavar="FILE", help="plan file (or - for stdin)")
    p.add_argument("--format", choices=["text", "json", "sarif"], default="text")
    p.set_defaults(run=cmd_validate)

    p = sub.add_parser("graph", help="print a plan's dataflow graph")
    p.add_argument("file", metavar="FILE", help="plan file (or - for stdin)")
    p.add_argument("--format", choices=["mermaid", "dot", "json"], default="mermaid")
    p.set_defaults(run=cmd_graph)

    p = sub.add_parser("schema", help="print the composed calls schema for a file's tools")
    p.add_argument("file", metavar="FILE", help="plan file (or - for stdin)")
    p.add_argument("--activities", metavar="MODULE:NAME",
                   help="an importable dict of activities, to fill in _activity")
    p.set_defaults(run=cmd_schema)

    p = sub.add_parser("dry-run", help="simulate a plan with mocks (no activity runs)")
    p.add_argument("file", metavar="FILE", help="plan file (or - for stdin)")
    p.add_argument("--mocks", metavar="M.json", help="mocks by tool name (added to the file's)")
    p.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync")
    p.add_argument("--instances", action="store_true", help="map the plan over the instances")
    p.add_argument("--explore", action="store_true", help="run every combination of branches")
    p.add_argument("--json", action="store_true", help="print the JSON report")
    p.set_defaults(run=cmd_dry_run)

    p = sub.add_parser("run", help="run a plan with real activities")
    p.add_argument("file", metavar="FILE", help="plan file (or - for stdin)")
    p.add_argument("--activities", metavar="MODULE:NAME", required=True,
                   help="an importable dict of activity name -> callable")
    p.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync")
    p.add_argument("--instances", action="store_true", help="map the plan over the instances")
    p.add_argument("--approve", action="store_true", help="ask at the terminal before each call")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="per call (asyncio)")
    p.add_argument("--max-concurrency", type=int, metavar="N", help="calls at once (asyncio)")
    p.add_argument("--out", metavar="CONTEXT.json", help="write the final context here")
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("conformance", help="run conformance vectors")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="vector files or folders of *.json (default: the bundled pack)")
    p.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync")
    p.add_argument("-q", "--quiet", action="store_true", help="print only failures and the total")
    kit_cli.add_conformance_options(p)
    p.set_defaults(run=cmd_conformance)
    kit_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        err.write(exc.usage)
        print(f"obelisk: error: {exc}", file=err)
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version print and exit 0
        return int(exc.code or 0)
    run: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.run
    try:
        # A command builds contexts from whole files and runs plans: both allocate many
        # long-lived objects, which the tuned collector does not rescan over and over.
        with gc_tuned():
            return run(args, out, err)
    except InputError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    except ObeliskError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return 130
    except BrokenPipeError:  # the reader went away (obelisk graph ... | head): not an error
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return EXIT_OK
    except Exception as exc:  # a bug in obelisk: say so in one line, not a traceback
        if os.environ.get("OBELISK_DEBUG"):
            raise
        print(f"obelisk: internal error (a bug, please report it): {type(exc).__name__}: {exc}\n"
              "set OBELISK_DEBUG=1 to see the traceback", file=err)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
