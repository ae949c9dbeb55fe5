"""The commands that run a plan: ``dry-run`` (with mocks) and ``run`` (real activities)."""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from obelisk import (
    CompiledPlan,
    Context,
    Journal,
    JournalError,
    JournalUnreadable,
    MockError,
    RunResult,
    dry_run,
    gc_tuned,
    invalid_report,
    report,
    run_async,
    run_durable,
    run_durable_async,
    run_sync,
)
from obelisk.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    INTERPRETER_HELP,
    Command,
    add_inputs,
    add_plan_file,
    compile_file,
    input_notes,
    load_activities,
    read_inputs,
)
from obelisk.cli.dask import add_dask_arguments, check_dask_options
from obelisk.cli.dask import run_plan as dask_run
from obelisk.cli.events import add_events_argument, events_file
from obelisk.cli.interrupt import EXIT_INTERRUPTED, Interrupts
from obelisk.cli.live import Progress
from obelisk.cli.mcp import activities_for, approval_for
from obelisk.cli.render import render_notes, render_refusal, wheres
from obelisk.cli.report import RunReport, render_body, render_report, render_status
from obelisk.cli.safe import json_text
from obelisk.cli.terminal import Exceptions, terminal_approval
from obelisk.jsonio import InputError, load_json
from obelisk.planfile import PlanFile


def add_dry_run_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE, ``--mocks``, ``--interpreter``, ``--instances``, ``--explore``, ``--json``."""
    add_plan_file(parser)
    add_inputs(parser)
    parser.add_argument("--mocks", metavar="M.json", action="append",
                        help="mocks by tool name (added to the file's; give it again to add "
                             "more files: a tool mocked differently twice is refused)")
    parser.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync",
                        help=INTERPRETER_HELP)
    parser.add_argument("--instances", action="store_true", help="map the plan over the instances")
    parser.add_argument("--explore", action="store_true", help="run every combination of branches")
    parser.add_argument("--json", action="store_true", help="print the JSON report")
    add_events_argument(parser)


def _mocks(pf: PlanFile, paths: list[str] | None) -> dict[str, Any]:
    """The file's mocks, overridden tool by tool by those of the ``--mocks`` files, which
    are merged: two of them that mock one tool differently are refused, never one dropped."""
    mocks = dict(pf.mocks)
    given: dict[str, tuple[str, Any]] = {}
    for path in paths or []:
        extra = load_json(path)
        if not isinstance(extra, Mapping):
            raise InputError(f"{path}: mocks are an object of tool name -> mock")
        for tool, mock in extra.items():
            if tool in given and given[tool][1] != mock:
                raise InputError(f"--mocks {given[tool][0]} and --mocks {path} both mock "
                                 f"{tool!r}, differently; keep one of them")
            given[tool] = (path, mock)
    mocks.update({tool: mock for tool, (_, mock) in given.items()})
    return mocks


def dry_run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Simulate the plan and print its report; exit 1 when the plan is invalid or the run
    added error messages."""
    pf = read_inputs(args.file, args, err)
    mocks = _mocks(pf, args.mocks)
    plan = compile_file(pf, instances=args.instances)
    notes = input_notes(pf)
    if not plan.ok:
        render_notes(notes, pf, err)
        if args.json:
            data = invalid_report(plan)
            # Each diagnostic with its place in the file, as validate --format json gives.
            located = wheres(plan.diagnostics, pf)
            if len(data.get("diagnostics", [])) == len(located):
                data["diagnostics"] = [{**d, **(w.to_json() if w else {})} for d, w in
                                       zip(data["diagnostics"], located, strict=True)]
            print(json_text(data, stream=out), file=out)
        else:
            render_refusal(plan, pf, err)
        return EXIT_FAILED
    try:
        with events_file(args.events, err) as on_event:
            result = dry_run(plan, mocks=mocks, interpreter=args.interpreter,
                             explore=args.explore, on_event=on_event)
    except MockError as exc:
        raise InputError(f"{', '.join(args.mocks or [pf.name])}: {exc}") from None
    render_notes(notes, pf, err)  # after the mocks were read: bad input says only that
    data = result.report()
    if args.json:
        print(json_text(data, stream=out), file=out)
    else:
        render_report(RunReport.of(data), out)
    if result.run.status == "cancelled":  # only Ctrl-C (or SIGTERM) cancels a dry run
        print("interrupted", file=err)
        return EXIT_INTERRUPTED
    return EXIT_FAILED if data["errors"] else EXIT_OK


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE, ``--activities``, ``--interpreter``, ``--instances``, ``--approve``,
    ``--timeout``, ``--max-concurrency``, ``--out``, ``--traceback``, ``--json``."""
    add_plan_file(parser)
    add_inputs(parser, runs=True)
    parser.add_argument("--activities", metavar="MODULE:NAME",
                        help="an importable dict of activity name -> callable (optional "
                             "with --mcp: MCP tools need none)")
    parser.add_argument("--interpreter", choices=["sync", "asyncio", "dask"], default="sync",
                        help=INTERPRETER_HELP + "; dask: the activities run on a Dask "
                             "cluster (see --dask-scheduler)")
    parser.add_argument("--instances", action="store_true", help="map the plan over the instances")
    parser.add_argument("--approve", action="store_true", help="ask at the terminal before each call")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="per call (asyncio)")
    parser.add_argument("--max-concurrency", type=int, metavar="N", help="calls at once (asyncio)")
    parser.add_argument("--out", metavar="CONTEXT.json", help="write the final context here")
    parser.add_argument("--traceback", action="store_true",
                        help="show the Python traceback of every exception an activity raised")
    parser.add_argument("--json", action="store_true",
                        help="print the JSON report (as dry-run --json does) instead of the table")
    add_events_argument(parser)
    add_journal_arguments(parser)
    add_dask_arguments(parser)


def add_journal_arguments(parser: argparse.ArgumentParser) -> None:
    """``--journal``, ``--run``, ``--durability``: record the run (see ``obelisk resume``)."""
    parser.add_argument("--journal", metavar="JOURNAL",
                        help="record the run in this journal: a file or a postgresql:// URL")
    parser.add_argument("--run", dest="run_id", metavar="ID",
                        help="the run's id in the journal (default: new)")
    parser.add_argument("--durability", choices=["sync", "batch"], default="sync",
                        help="sync: each event on disk before the run goes on (default)")
    add_lease_argument(parser)


def _lease(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < seconds < 86400:
        raise argparse.ArgumentTypeError("a lease is more than 0 and less than 86400 seconds")
    return seconds


def add_lease_argument(parser: argparse.ArgumentParser) -> None:
    """``--lease SECONDS``: how long this process's hold on a run lasts unless renewed."""
    parser.add_argument("--lease", type=_lease, metavar="SECONDS",
                        help="how long this process's hold on a run lasts unless renewed "
                             "(renewed every third of it; default 5)")


def open_journal(path: str, durability: str = "sync", *, create: bool = True,
                 read_only: bool = False, lease: float | None = None) -> Journal:
    """The journal at ``path`` (a file or a postgresql:// URL); one that cannot be opened
    is bad input (exit 2), named without a URL's password."""
    try:
        if lease is None:
            return Journal.open(path, durability, create=create, read_only=read_only)
        return Journal.open(path, durability, create=create, read_only=read_only, lease=lease)
    except JournalError as exc:
        raise InputError(str(exc)) from None


def _check_run_options(args: argparse.Namespace) -> None:
    check_dask_options(args)
    if args.interpreter == "sync" and (args.timeout is not None
                                       or args.max_concurrency is not None):
        # The sync interpreter runs one call at a time and cannot interrupt one: say so
        # rather than silently ignore the option.
        raise InputError("--timeout and --max-concurrency need --interpreter asyncio (or dask)")
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise InputError("--max-concurrency must be at least 1")
    if args.timeout is not None and not args.timeout > 0:
        raise InputError("--timeout must be a positive number of seconds")


def run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the plan with the named activities and print its report; exit 1 when the plan
    is invalid, the run added error messages, or it did not complete."""
    _check_run_options(args)
    pf = read_inputs(args.file, args, err)
    activities = activities_for(args, err, load_activities(args.activities)
                                if args.activities else None)
    if args.activities is None and getattr(args, "mcp_servers", None) is None:
        raise InputError("run needs --activities MODULE:NAME (or MCP servers: --mcp SPEC)")
    plan = compile_file(pf, instances=args.instances)
    render_notes(input_notes(pf), pf, err)
    if not plan.ok:
        render_refusal(plan, pf, err)
        return EXIT_FAILED
    display = Display.start(plan, pf.tools, err, args,
                            gate=approval_for(args, err, plan, pf.tools))
    stops = Interrupts(err)
    display.add(stops.observe)
    display.approve = stops.prompt(display.approve)
    tracked = {name: stops.wrap(name, display.exceptions.wrap(name, fn))
               for name, fn in activities.items()}
    try:
        # Young collections spaced by the plan's size (main tunes for any command).
        with gc_tuned(len(plan.nodes), freeze=True), events_file(args.events, err) as on_event:
            result = _run(args, plan, tracked, display, stops, on_event)
    except BaseException:
        display.progress.close()
        raise
    code = finish_run(result, args, out, err, display)
    return stops.exit_code(code, out)


def _run(args: argparse.Namespace, plan: CompiledPlan, tracked: dict[str, Any],
         display: Display, stops: Interrupts, on_event: Any = None) -> RunResult:
    """The run ``obelisk run`` asked for: journaled, on asyncio, or one call at a time;
    Ctrl-C and SIGTERM stop it (:mod:`obelisk.cli.interrupt`)."""
    if args.journal:
        with open_journal(args.journal, args.durability, lease=args.lease) as journal:
            return _run_journaled(args, plan, journal, tracked, display, stops, on_event)
    if args.interpreter == "dask":
        return dask_run(args, plan, tracked, display.approve, display.observe,
                        on_event=on_event)
    if args.interpreter == "asyncio":
        return stops.run_async(lambda: run_async(
            plan, activities=tracked, approve=display.approve,
            max_concurrency=args.max_concurrency, timeout=args.timeout,
            observer=display.observe, on_event=on_event))
    with stops.sync():
        return run_sync(plan, activities=tracked, approve=display.approve,
                        observer=display.observe, stop=stops.stop, on_event=on_event)


class Display:
    """What a run shows at the terminal: live progress, the approval prompt (when asked
    for), and the exceptions routed to error branches; ``observe`` feeds them events."""

    def __init__(self, progress: Progress, approve: Any, exceptions: Exceptions,
                 observers: list[Callable[[Any], None]]) -> None:
        self.progress, self.approve, self.exceptions = progress, approve, exceptions
        self._observers = observers

    @classmethod
    def start(cls, plan: CompiledPlan, tools: Any, err: TextIO, args: argparse.Namespace, *,
              recorded: Sequence[Any] = (), approvals: bool = False,
              gate: tuple[Any, Callable[[Any], None] | None] = (None, None)) -> Display:
        """The display of a run of ``plan`` with the options ``args`` (``--approve``,
        ``--interpreter``, ``--max-concurrency``): progress on a terminal unless
        approving; ``recorded`` the events a resumed run's journal holds (``approvals``:
        recorded with an approval hook); ``gate`` an approval hook and its observer for
        when ``--approve`` is not given (destructive MCP tools:
        :func:`obelisk.cli.mcp.approval_for`)."""
        hook, observe_gate = gate
        slots = 1 if args.interpreter == "sync" else args.max_concurrency
        progress = Progress(plan, err, enabled=err.isatty() and not args.approve
                            and observe_gate is None, slots=slots, recorded=recorded,
                            approvals=approvals)
        exceptions = Exceptions(plan, recorded)
        observers: list[Callable[[Any], None]] = [progress.observe, exceptions.observe]
        if observe_gate is not None:
            observers.append(observe_gate)
        if args.approve:
            hook, observe_ready = terminal_approval(err, plan, tools)
            observers.append(observe_ready)
        return cls(progress, hook, exceptions, observers)

    def add(self, observer: Callable[[Any], None]) -> None:
        """Pass the run's events to ``observer`` too."""
        self._observers.append(observer)

    def observe(self, event: Any) -> None:
        """Pass one run event to every part of the display."""
        for observe in self._observers:
            observe(event)


def _run_journaled(args: argparse.Namespace, plan: CompiledPlan, journal: Journal,
                   activities: Mapping[str, Any], display: Display,
                   stops: Interrupts, on_event: Any = None) -> RunResult:
    run_id = args.run_id or uuid.uuid4().hex
    print(f"journal: run {run_id} in {journal.name}", file=stops.err)
    try:
        if args.interpreter == "dask":
            return dask_run(args, plan, activities, display.approve, display.observe, journal,
                            run_id, on_event)
        if args.interpreter == "asyncio":
            return stops.run_async(lambda: run_durable_async(
                plan, journal=journal, run_id=run_id, activities=activities,
                approve=display.approve, max_concurrency=args.max_concurrency,
                timeout=args.timeout, observer=display.observe, on_event=on_event))
        with stops.sync():
            return run_durable(plan, journal=journal, run_id=run_id, activities=activities,
                               approve=display.approve, observer=display.observe,
                               stop=stops.stop, on_event=on_event)
    except JournalUnreadable as exc:
        raise InputError(str(exc)) from None


def finish_run(result: RunResult, args: argparse.Namespace, out: TextIO, err: TextIO,
               display: Display) -> int:
    """Close the display; print the run's report (``--json``: as JSON), the failures routed
    to error branches and (``--traceback``) the tracebacks before its status line; write
    its context to ``--out`` (when given). The exit code: 1 when the run added error
    messages or did not complete."""
    display.progress.close()
    data = report(result)
    if args.json:
        print(json_text(data, stream=out), file=out)
    else:
        run_report = RunReport.of(data)
        render_body(run_report, out)
        display.exceptions.render({(c["call"], c["instance"]): c["outcome"]
                                   for c in data["calls"]}, out, args.traceback)
        render_status(run_report, out)
    if args.json and args.traceback:  # the tracebacks are not JSON: beside it
        display.exceptions.render({}, err, True)
    if args.out:
        write_context(args.out, result.context)
    return EXIT_FAILED if result.errors or result.status != "completed" else EXIT_OK


def write_context(path: str, context: Context) -> None:
    """Write a run's final context to ``path`` (``--out``) as a JSON array; a file that
    cannot be written is bad input (exit 2)."""
    try:
        # json_text writes lone surrogates (and controls) as JSON escapes: the file is
        # always valid UTF-8, and reads back to the same context.
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(json_text(context.to_json()) + "\n")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


DRY_RUN = Command("dry-run", "simulate a plan with mocks (no activity runs)",
                  add_dry_run_arguments, dry_run_command)
RUN = Command("run", "run a plan with real activities", add_run_arguments, run_command)
