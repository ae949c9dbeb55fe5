"""The commands that run a plan: ``dry-run`` (with mocks) and ``run`` (real activities)."""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Mapping
from typing import Any, TextIO

from obelisk import (
    CompiledPlan,
    Journal,
    JournalError,
    JournalUnreadable,
    MockError,
    RunResult,
    dry_run,
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
    Command,
    add_plan_file,
    compile_file,
    load_activities,
)
from obelisk.cli.render import RunReport, render_refusal, render_report
from obelisk.cli.safe import json_text
from obelisk.cli.terminal import Progress, terminal_approval
from obelisk.jsonio import InputError, load_json
from obelisk.planfile import PlanFile, read_plan_file


def add_dry_run_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE, ``--mocks``, ``--interpreter``, ``--instances``, ``--explore``, ``--json``."""
    add_plan_file(parser)
    parser.add_argument("--mocks", metavar="M.json", help="mocks by tool name (added to the file's)")
    parser.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync")
    parser.add_argument("--instances", action="store_true", help="map the plan over the instances")
    parser.add_argument("--explore", action="store_true", help="run every combination of branches")
    parser.add_argument("--json", action="store_true", help="print the JSON report")


def _mocks(pf: PlanFile, path: str | None) -> dict[str, Any]:
    """The file's mocks, overridden tool by tool by those in ``path``."""
    mocks = dict(pf.mocks)
    if path:
        extra = load_json(path)
        if not isinstance(extra, Mapping):
            raise InputError(f"{path}: mocks are an object of tool name -> mock")
        mocks.update(extra)
    return mocks


def dry_run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Simulate the plan and print its report; exit 1 when the plan is invalid or the run
    added error messages."""
    pf = read_plan_file(args.file)
    mocks = _mocks(pf, args.mocks)
    plan = compile_file(pf, instances=args.instances)
    if not plan.ok:
        if args.json:
            print(json_text(invalid_report(plan), stream=out), file=out)
        else:
            render_refusal(plan, pf.name, err)
        return EXIT_FAILED
    try:
        result = dry_run(plan, mocks=mocks, interpreter=args.interpreter, explore=args.explore)
    except MockError as exc:
        raise InputError(f"{args.mocks or pf.name}: {exc}") from None
    data = result.report()
    if args.json:
        print(json_text(data, stream=out), file=out)
    else:
        render_report(RunReport.of(data), out)
    return EXIT_FAILED if data["errors"] else EXIT_OK


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE, ``--activities``, ``--interpreter``, ``--instances``, ``--approve``,
    ``--timeout``, ``--max-concurrency``, ``--out``, and the journal's options."""
    add_plan_file(parser)
    parser.add_argument("--activities", metavar="MODULE:NAME", required=True,
                   help="an importable dict of activity name -> callable")
    parser.add_argument("--interpreter", choices=["sync", "asyncio"], default="sync")
    parser.add_argument("--instances", action="store_true", help="map the plan over the instances")
    parser.add_argument("--approve", action="store_true", help="ask at the terminal before each call")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="per call (asyncio)")
    parser.add_argument("--max-concurrency", type=int, metavar="N", help="calls at once (asyncio)")
    parser.add_argument("--out", metavar="CONTEXT.json", help="write the final context here")
    add_journal_arguments(parser)


def add_journal_arguments(parser: argparse.ArgumentParser) -> None:
    """``--journal``, ``--run``, ``--durability``: record the run (see ``obelisk resume``)."""
    parser.add_argument("--journal", metavar="RUN.db", help="record the run in this journal")
    parser.add_argument("--run", dest="run_id", metavar="ID",
                        help="the run's id in the journal (default: new)")
    parser.add_argument("--durability", choices=["sync", "batch"], default="sync",
                        help="sync: each event on disk before the run goes on (default)")


def open_journal(path: str, durability: str = "sync", *, create: bool = True) -> Journal:
    """The journal at ``path``; a file that cannot be opened is bad input (exit 2)."""
    try:
        return Journal.open(path, durability, create=create)
    except JournalError as exc:
        raise InputError(str(exc)) from None


def _check_run_options(args: argparse.Namespace) -> None:
    if args.interpreter != "asyncio" and (args.timeout is not None
                                          or args.max_concurrency is not None):
        # The sync interpreter runs one call at a time and cannot interrupt one: say so
        # rather than silently ignore the option.
        raise InputError("--timeout and --max-concurrency need --interpreter asyncio")
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise InputError("--max-concurrency must be at least 1")
    if args.timeout is not None and not args.timeout > 0:
        raise InputError("--timeout must be a positive number of seconds")


def run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the plan with the named activities and print its report; exit 1 when the plan
    is invalid, the run added error messages, or it did not complete."""
    _check_run_options(args)
    pf = read_plan_file(args.file)
    activities = load_activities(args.activities)
    plan = compile_file(pf, instances=args.instances)
    if not plan.ok:
        render_refusal(plan, pf.name, err)
        return EXIT_FAILED
    progress = Progress(len(plan.nodes), err, enabled=err.isatty() and not args.approve)
    approve = terminal_approval(out, err) if args.approve else None
    tracked = {name: progress.wrap(fn) for name, fn in activities.items()}
    if args.journal:
        with open_journal(args.journal, args.durability) as journal:
            result = _run_journaled(args, plan, journal, tracked, approve, err)
    elif args.interpreter == "asyncio":
        result = asyncio.run(run_async(plan, activities=tracked, approve=approve,
                                       max_concurrency=args.max_concurrency, timeout=args.timeout))
    else:
        result = run_sync(plan, activities=tracked, approve=approve)
    progress.close()
    return finish_run(result, args.out, out)


def _run_journaled(args: argparse.Namespace, plan: CompiledPlan, journal: Journal,
                   activities: Mapping[str, Any], approve: Any, err: TextIO) -> RunResult:
    run_id = args.run_id or uuid.uuid4().hex
    print(f"journal: run {run_id} in {args.journal}", file=err)
    try:
        if args.interpreter == "asyncio":
            return asyncio.run(run_durable_async(
                plan, journal=journal, run_id=run_id, activities=activities, approve=approve,
                max_concurrency=args.max_concurrency, timeout=args.timeout))
        return run_durable(plan, journal=journal, run_id=run_id, activities=activities,
                           approve=approve)
    except JournalUnreadable as exc:
        raise InputError(str(exc)) from None


def finish_run(result: RunResult, path: str | None, out: TextIO) -> int:
    """Print the run's report, write its context to ``path`` (when given); the exit code:
    1 when the run added error messages or did not complete."""
    render_report(RunReport.of(report(result)), out)
    if path:
        try:
            # json_text writes lone surrogates (and controls) as JSON escapes: the file
            # is always valid UTF-8, and reads back to the same context.
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(json_text(result.context.to_json()) + "\n")
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return EXIT_FAILED if result.errors or result.status != "completed" else EXIT_OK


DRY_RUN = Command("dry-run", "simulate a plan with mocks (no activity runs)",
                  add_dry_run_arguments, dry_run_command)
RUN = Command("run", "run a plan with real activities", add_run_arguments, run_command)
