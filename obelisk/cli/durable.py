"""The commands of durable runs:

    obelisk resume JOURNAL [--run ID] [--activities pkg.mod:NAME] [--out FILE] ...
    obelisk resume JOURNAL --llm SPEC [--base-url URL] [--activities ...] [--json] (agent runs)
    obelisk history JOURNAL [--run ID] [--json]

``JOURNAL`` is an SQLite file or a ``postgresql://`` URL. ``resume`` continues a run
recorded with ``obelisk run FILE --journal JOURNAL`` (or an agent run recorded with
``obelisk agent FILE --journal JOURNAL``, given ``--llm``); it is refused (exit 1, naming
the owner and its lease) while another process holds the run, unless ``--take-over``.
``history`` prints what the journal holds for a run (reading only: a read-only journal
is read). ``--run`` defaults to the journal's newest run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from obelisk import (
    Journal,
    JournalUnreadable,
    RunResult,
    ToolError,
    journal_history,
    plural,
    recorded,
    resume_async,
)
from obelisk.agent import AgentError
from obelisk.cli.agent import plan_prompt, print_result, tick_printer
from obelisk.cli.common import EXIT_OK, Command, load_activities
from obelisk.cli.dask import add_dask_arguments
from obelisk.cli.dask import resume_plan as dask_resume
from obelisk.cli.events import add_events_argument, events_file
from obelisk.cli.interrupt import Interrupts
from obelisk.cli.llmargs import make_llm
from obelisk.cli.mcp import activities_for, add_mcp_arguments, approval_for, check_recorded
from obelisk.cli.run import (
    Display,
    _check_run_options,
    add_lease_argument,
    finish_run,
    open_journal,
    write_context,
)
from obelisk.cli.safe import inert, json_text
from obelisk.cli.terminal import terminal_approval
from obelisk.journal import recorded_agent, recorded_events, resume_agent, run_kind
from obelisk.journal.run import resume_plan
from obelisk.jsonio import InputError


def add_resume_arguments(parser: argparse.ArgumentParser) -> None:
    """RUN.db, ``--run`` and the options of ``run``."""
    parser.add_argument("journal", metavar="JOURNAL",
                        help="the journal the run is recorded in: a file or a postgresql:// URL")
    parser.add_argument("--run", dest="run_id", metavar="ID",
                        help="the run to resume (default: the newest)")
    parser.add_argument("--take-over", action="store_true",
                        help="resume the run even while another process holds it (that "
                             "process then stops at its next write)")
    add_lease_argument(parser)
    parser.add_argument("--activities", metavar="MODULE:NAME",
                        help="an importable dict of activity name -> callable")
    parser.add_argument("--interpreter", choices=["sync", "asyncio", "dask"],
                        help="default: the one the run was recorded with")
    parser.add_argument("--approve", action="store_true",
                        help="ask at the terminal before each call")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="per call (asyncio)")
    parser.add_argument("--max-concurrency", type=int, metavar="N", help="calls at once (asyncio)")
    parser.add_argument("--out", metavar="CONTEXT.json", help="write the final context here")
    parser.add_argument("--durability", choices=["sync", "batch"], default="sync",
                        help="sync: each event on disk before the run goes on (default)")
    parser.add_argument("--llm", metavar="SPEC",
                        help="an agent run's adapter: script:FILE, openai:MODEL, anthropic:MODEL")
    parser.add_argument("--base-url", metavar="URL", help="the provider's base URL (agent runs)")
    parser.add_argument("--json", action="store_true",
                        help="print the JSON report (an agent run's result as JSON)")
    parser.add_argument("--traceback", action="store_true",
                        help="show the Python traceback of every exception an activity raised")
    add_events_argument(parser)
    add_mcp_arguments(parser, runs=True)
    add_dask_arguments(parser)


def resume_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Continue a recorded run and print its report; exit 1 when the run added error
    messages or did not complete, 2 when the journal cannot be resumed."""
    with open_journal(args.journal, args.durability, create=False, lease=args.lease) as journal:
        try:
            if run_kind(journal, args.run_id) == "agent":
                return _resume_agent(journal, args, out, err)
            if args.llm is not None:
                raise InputError(f"{journal.name}: the run is a plan's run: --llm is for "
                                 "agent runs")
            run = recorded(journal, args.run_id)
            interpreter = args.interpreter or run.options.get("interpreter", "sync")
            if interpreter == "dask" and args.dask_scheduler is None and \
                    args.dask_workers is None:
                raise InputError(
                    f"{journal.name}: run {run.header.run_id} was recorded with --interpreter "
                    "dask: give --dask-scheduler tcp://HOST:PORT or --dask-workers N to go on "
                    "on a cluster, or --interpreter asyncio to run the rest here")
            args.interpreter = interpreter
            _check_run_options(args)
            status = journal_history(journal, run.header.run_id)["status"]
            check_recorded(args, err, list(run.plan.tools or ()), f"{journal.name}: run "
                           f"{run.header.run_id}")
            if args.activities is None and status != "completed" \
                    and getattr(args, "mcp_servers", None) is None:
                raise InputError(f"{journal.name}: run {run.header.run_id} has not ended: "
                                 "give --activities (or --mcp) to continue it")
            activities = activities_for(args, err, load_activities(args.activities)
                                        if args.activities else None)
            print(inert(f"journal: resuming run {run.header.run_id} of {journal.name}"),
                  file=err)
            display = Display.start(
                run.plan, run.plan.tools, err, args,
                recorded=recorded_events(journal, run.header.run_id),
                approvals=bool(run.options.get("approvals")),
                gate=approval_for(args, err, run.plan, list(run.plan.tools or ())))
            stops = Interrupts(err)
            display.add(stops.observe)
            display.approve = stops.prompt(display.approve)
            tracked = {name: stops.wrap(name, display.exceptions.wrap(name, fn))
                       for name, fn in activities.items()}
            try:
                result = _resume(journal, run.header.run_id, interpreter, tracked, display,
                                 args, stops)
            except BaseException:
                display.progress.close()
                raise
        except JournalUnreadable as exc:
            raise InputError(str(exc)) from None
    code = finish_run(result, args, out, err, display)
    return stops.exit_code(code, out)


def _resume_agent(journal: Journal, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Continue a recorded agent run with ``--llm``; print its result like ``obelisk agent``."""
    run = recorded_agent(journal, args.run_id)
    where = f"{journal.name}: run {run.header.run_id}"
    if args.llm is None:
        raise InputError(f"{where} is an agent run: give --llm (and --activities) to resume it")
    if args.interpreter is not None or args.timeout is not None or \
            args.max_concurrency is not None:
        raise InputError(f"{where} is an agent run: it resumes with the options it was "
                         "recorded with (no --interpreter, --timeout or --max-concurrency)")
    llm = make_llm(args.llm, args.base_url)
    check_recorded(args, err, list(run.tools), where)
    activities = activities_for(args, err, load_activities(args.activities)
                                if args.activities else None)
    print(inert(f"journal: resuming agent run {run.header.run_id} of {journal.name}"),
          file=err)
    # In lazy mode --approve reviews each whole plan (on_plan), as ``obelisk agent`` does.
    reviews = bool(run.options.get("on_plan"))
    approve = (terminal_approval(err)[0] if args.approve and not reviews
               else approval_for(args, err, None, list(run.tools))[0])
    on_plan = plan_prompt(err) if args.approve and reviews else None
    stops = Interrupts(err)
    approve, on_plan = stops.prompt(approve), stops.prompt(on_plan)
    if activities:
        activities = {name: stops.wrap(name, fn) for name, fn in activities.items()}
    try:
        with events_file(args.events, err) as on_event:
            result = stops.run_async(lambda: resume_agent(
                journal, run.header.run_id, llm=llm, activities=activities, approve=approve,
                on_plan=on_plan, observer=None if args.json else tick_printer(out),
                take_over=args.take_over, on_event=on_event))
    except (ToolError, AgentError) as exc:
        raise InputError(f"{where}: {exc}") from None
    if args.out:
        write_context(args.out, result.context)
    return stops.exit_code(print_result(result, args.json, out), out)


def _resume(journal: Journal, run_id: str, interpreter: str,
            activities: Mapping[str, Callable[..., Any]], display: Display,
            args: argparse.Namespace, stops: Interrupts) -> RunResult:
    with events_file(args.events, stops.err) as on_event:
        if interpreter == "dask":
            return dask_resume(args, journal, run_id, activities, display.approve,
                               display.observe, on_event)
        if interpreter == "asyncio":
            return stops.run_async(lambda: resume_async(
                journal, run_id, activities=activities, approve=display.approve,
                max_concurrency=args.max_concurrency, timeout=args.timeout,
                observer=display.observe, take_over=args.take_over, on_event=on_event))
        with stops.sync():
            return resume_plan(journal, run_id, activities=activities, approve=display.approve,
                               interpreter="sync", observer=display.observe,
                               take_over=args.take_over, stop=stops.stop, on_event=on_event)


def add_history_arguments(parser: argparse.ArgumentParser) -> None:
    """RUN.db, ``--run``, ``--json``."""
    parser.add_argument("journal", metavar="JOURNAL",
                        help="the journal to read: a file or a postgresql:// URL")
    parser.add_argument("--run", dest="run_id", metavar="ID",
                        help="the run to show (default: the newest)")
    parser.add_argument("--json", action="store_true", help="print the events as JSON")


def history_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print a recorded run's events, as a table or as JSON."""
    with open_journal(args.journal, create=False, read_only=True) as journal:
        try:
            data = journal_history(journal, args.run_id)
            held = journal.store.ownership(data["run"])
        except JournalUnreadable as exc:
            raise InputError(str(exc)) from None
    if args.json:
        print(json_text(data, stream=out), file=out)
        return EXIT_OK
    holder = (f", held by {held.owner} (lease {held.left:.1f} s left)"
              if held is not None and held.owner and held.left > 0 else "")
    print(inert(f"run {data['run']} ({data['status']}), created {data['created']}, "
                f"{len(data['events'])} events{holder}"), file=out)
    # An agent run's rows carry their tick too: its column comes first.
    ticks = data.get("kind") == "agent"
    tick = f"{'tick':>5}  " if ticks else ""
    print(f"{'seq':>6}  {'event':<8}  {tick}{'call':>5}  {'instance':<10}  detail", file=out)
    for row in data["events"]:
        tick = f"{row.get('tick', '')!s:>5}  " if ticks else ""
        print(inert(f"{row['seq']:>6}  {row['event']:<8}  {tick}{row.get('call', '')!s:>5}  "
                    f"{row.get('instance', '')!s:<10}  {_detail(row)}"), file=out)
    return EXIT_OK


def _detail(row: Mapping[str, Any]) -> str:
    """The rest of an event row, short."""
    match row["event"]:
        case "invoke":
            return f"key {row['key']}"
        case "finish":
            outcome = row["outcome"]
            if "returned" in outcome:
                text = f"returned {_short(outcome['returned'])}"
            elif "chose" in outcome:
                text = f"chose {outcome['chose']} {_short(outcome['value'])}"
            else:
                text = f"raised {outcome['raised']}: {outcome['message']}"
            return f"{row['date']}  {_short(text, 100)}"
        case "decide":
            return _decision(row["verdict"], "the call")
        case "solution":
            return _short(row["solution"])
        case "admit":
            return "streamed " + _short(row["call"])
        case "review":
            return _decision(row["verdict"], "the plan")
        case "usage":
            usage = row["usage"]
            return f"tokens {usage['input_tokens']:,} in, {usage['output_tokens']:,} out"
        case "delegate":
            return f"delegated: its run is {row['run']} (history --run ID)"
        case "end":
            return f"{row['status']}, {plural(row['errors'], 'error message')}"
        case "resume":
            return f"at {row['at']}"
    return ""


#: How ``history`` words each decision.
_DECIDED = {"approve": "approved", "deny": "denied", "reject": "rejected",
            "replace": "replaced", "edit": "edited"}


def _decision(verdict: Mapping[str, Any], what: str) -> str:
    """A decision (a call's approval, a plan's review): who made it, what it was, and why
    (``on_plan`` or ``the approval hook`` when the row does not say who)."""
    by = verdict.get("by") or ("on_plan" if what == "the plan" else "the approval hook")
    text = f"{by} {_DECIDED.get(verdict['verdict'], verdict['verdict'])} {what}"
    if verdict.get("reason"):
        text += f": {verdict['reason']}"
    changed = verdict.get("calls", verdict.get("call"))
    return text + (f" -> {_short(changed)}" if changed is not None else "")


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


RESUME = Command("resume", "continue a run recorded with --journal", add_resume_arguments,
                 resume_command)
HISTORY = Command("history", "print the events a journal recorded for a run",
                  add_history_arguments, history_command)
