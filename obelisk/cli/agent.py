"""``obelisk agent FILE --llm script:SOLUTIONS.json | openai:MODEL | anthropic:MODEL
[--base-url URL] [--activities pkg.mod:NAME] [--mode eager|lazy] [--approve]
[--max-ticks N] [--max-requests N] [--max-tokens N] [--max-delegates N]
[--max-request-bytes N] [--stream] [--delegate-root DIR] [--json]
[--journal RUN.db [--run ID] [--durability sync|batch]]``: run an agent.

FILE is one JSON object: ``context`` (messages), ``tools``, ``output_schema``, and
optionally ``mode``, ``max_ticks``, ``description`` and ``mocks``. Without
``--activities`` the file's ``mocks`` answer the calls (every tick is a dry run), so an
agent runs offline with a script. A script file is an array of solutions, or an object
``{"solutions": [...], "latent": {tool: [answers]}, "delays": SECONDS}`` (``delays``: how
long the script waits before each streamed call, one number or one per call).

``--stream`` asks the adapter for a streamed solution: each call starts as soon as it has
arrived and is ready, and the ticks show calls starting while the solution is still
arriving. ``--delegate-root DIR`` is the folder of the saved requests that ``_delegate``
names; a saved request a tool names that is missing, or outside DIR, is reported before
the run starts (exit 2).

Each tick is shown as it happens (the request's size, in lazy mode the compiled plan, the
calls and their outcomes, the errors fed back, the output); ``--json`` prints the result
instead. ``--approve`` asks
before each call in eager mode, and before each plan in lazy mode (after showing it).
Exit 0 when the run completed, 1 for any other status, 2 for bad input.

``--journal RUN.db`` records the run (a dry run on the file's mocks, a streamed one, a lazy
one whose plans ``--approve`` reviews, and the delegates' own ticks too): ``obelisk resume
RUN.db --llm SPEC --activities ...`` continues it after a crash without asking the LLM
again for a recorded tick, nor ``--approve`` again for a recorded answer.
"""

from __future__ import annotations

import argparse
import pathlib
import uuid
from collections.abc import Mapping
from typing import Any, TextIO

from obelisk import (
    CompiledPlan,
    Context,
    JournalUnreadable,
    ToolError,
    render_text,
    thaw,
)
from obelisk.agent import (
    AgentError,
    AgentEvent,
    ApprovePlan,
    Asked,
    Budgets,
    CallStarted,
    Delegated,
    EditPlan,
    Ran,
    RejectPlan,
    TickEnded,
    run_agent,
)
from obelisk.agent.delegate import missing_delegates
from obelisk.agent.result import AgentResult, AgentStatus
from obelisk.cli.agentfile import agent_context, read_agent_file
from obelisk.cli.agentview import AgentView
from obelisk.cli.common import EXIT_FAILED, EXIT_OK, Command, load_activities
from obelisk.cli.dask import add_dask_arguments, check_dask_options
from obelisk.cli.dask import run_agent as dask_agent
from obelisk.cli.events import add_events_argument, events_file
from obelisk.cli.interrupt import Interrupts
from obelisk.cli.llmargs import add_context_options, add_llm_options, make_llm
from obelisk.cli.mcp import (
    activities_for,
    add_mcp_arguments,
    agent_refresh,
    approval_for,
    servers_for,
)
from obelisk.cli.review import review, reviewer
from obelisk.cli.run import add_journal_arguments, open_journal, write_context
from obelisk.cli.safe import inert, json_text
from obelisk.cli.terminal import terminal_approval
from obelisk.jsonio import InputError
from obelisk.llm import LLM


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE, ``--llm``, ``--base-url``, ``--activities``, ``--mode``, ``--approve``,
    ``--max-ticks``, ``--json``."""
    parser.add_argument("file", metavar="FILE", help="agent file: context, tools, output_schema")
    parser.add_argument("--llm", required=True, metavar="SPEC",
                        help="script:SOLUTIONS.json, openai:MODEL or anthropic:MODEL")
    parser.add_argument("--base-url", metavar="URL",
                        help="the provider's base URL (a local OpenAI-compatible server...)")
    parser.add_argument("--activities", metavar="pkg.mod:NAME",
                        help="a dict of activities (without it, the file's mocks answer)")
    parser.add_argument("--mode", choices=["eager", "lazy"],
                        help="eager: calls and output each tick; lazy: a plan to review "
                             "before it runs (default: the file's mode, else eager)")
    parser.add_argument("--approve", action="store_true",
                        help="ask before each call (eager) or each plan (lazy)")
    parser.add_argument("--max-ticks", type=int, metavar="N",
                        help="the tick budget: the run ends max_ticks after N ticks without "
                             "an output (default: the file's max_ticks, else 25)")
    parser.add_argument("--max-requests", type=int, metavar="N",
                        help="at most N LLM requests, delegates included (default 200)")
    parser.add_argument("--max-tokens", type=int, metavar="N",
                        help="at most N tokens, delegates included (default 2,000,000)")
    parser.add_argument("--max-delegates", type=int, metavar="N",
                        help="at most N delegates running at once (default 16)")
    parser.add_argument("--max-request-bytes", type=int, metavar="N",
                        help="the largest request sent to the LLM (default 8 MiB)")
    parser.add_argument("--stream", action="store_true",
                        help="stream each solution: start calls while the rest arrive")
    parser.add_argument("--delegate-root", metavar="DIR",
                        help="the folder of saved requests that _delegate names")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON, with the final context")
    parser.add_argument("--out", metavar="CONTEXT.json", help="write the final context here")
    parser.add_argument("--interpreter", choices=["asyncio", "dask"], default="asyncio",
                        help="dask: run the activities on a Dask cluster")
    add_events_argument(parser)
    add_context_options(parser)
    add_llm_options(parser)
    add_journal_arguments(parser)
    add_mcp_arguments(parser, runs=True)
    add_dask_arguments(parser)


def _show_plan(plan: CompiledPlan, stream: TextIO) -> None:
    print("the plan:", file=stream)
    for index, call in enumerate(plan.calls):
        print(f"  {index}: " + json_text(thaw(call), stream=stream, indent=None), file=stream)
    for diagnostic in plan.diagnostics:
        print("  " + inert(render_text(diagnostic)), file=stream)
    stream.flush()


def plan_shown(out: TextIO) -> Any:
    """Lazy mode without ``--approve``: show each compiled plan, then run it."""

    def show(plan: CompiledPlan) -> Any:
        _show_plan(plan, out)
        return ApprovePlan()

    return show


def plan_prompt(err: TextIO) -> Any:
    """Lazy mode at the terminal: show each compiled plan, then approve it, edit its calls
    (compiled again before they run) or reject it with a reason; each verdict says who."""
    who = reviewer()

    def ask(plan: CompiledPlan) -> Any:
        _show_plan(plan, err)
        calls = [thaw(call) for call in plan.calls]
        return review(err, "[a]pprove, [e]dit, [r]eject the plan? ",
                      (calls, "calls", list),
                      (lambda: ApprovePlan(by=who), lambda edited: EditPlan(edited, by=who),
                       lambda reason: RejectPlan(reason, by=who)),
                      rejected="rejected at the terminal")

    return ask


def tick_printer(out: TextIO) -> Any:
    """An observer printing each tick as it happens."""

    def show(event: AgentEvent) -> None:
        match event:
            case Asked(tick=tick, replayed=True):
                print(f"replayed tick {tick} from the journal", file=out)
            case Asked(tick=tick, size=size):
                print(f"tick {tick}: asking the LLM ({size:,} characters)", file=out)
            case Ran(run=run):
                for call in run.calls:
                    where = "" if call.instance is None else f" [{inert(call.instance)}]"
                    error = f" ({inert(call.error)})" if call.error else ""
                    tool = "(no _tool)" if call.tool is None else inert(str(call.tool))
                    why = f": {inert(call.reason)}" if call.outcome == "skipped" else ""
                    print(f"  call {call.call} {tool}{where}: "
                          f"{call.outcome}{error}{why}", file=out)
            case CallStarted(call=call, seen=seen, open=is_open):
                state = "the solution still arriving" if is_open else "the solution complete"
                print(f"  call {call} started ({seen} call(s) arrived, {state})", file=out)
            case Delegated(chain=chain, status=status, ticks=ticks):
                path = " -> ".join(("caller", *(inert(c) for c in chain)))
                print(f"  delegate {path}: {status} after {ticks} tick(s)", file=out)
            case TickEnded(errors=errors):
                for message in errors:
                    error = message["data"]["error"]
                    print(f"  error fed back: {inert(error['type'])}: "
                          f"{inert(str(error['message']))}", file=out)
        out.flush()

    return show


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the agent; exit 0 when it completed, 1 otherwise."""
    check_dask_options(args)
    spec = read_agent_file(args.file)
    llm = make_llm(args.llm, args.base_url, args)
    loaded = load_activities(args.activities) if args.activities else None
    servers = servers_for(args, err, spec.get("mcp"), args.file)
    activities = activities_for(args, err, loaded) or None
    mode = args.mode or spec.get("mode")
    max_ticks = _max_ticks(args, spec)
    context = agent_context(spec, args.file, args)  # with --context and --input
    lazy = mode == "lazy"
    options: dict[str, Any] = {
        "budgets": budgets_of(args),
        "tools": (servers.tools if servers is not None else []) + spec.get("tools", []),
        "output_schema": spec.get("output_schema"),
        "mode": mode, "max_ticks": max_ticks, "activities": activities,
        "mocks": None if activities is not None else dict(spec.get("mocks", {})),
    }
    if args.stream:
        options["stream"] = True
    if args.max_request_bytes is not None:
        options["max_request_bytes"] = _positive("--max-request-bytes", args.max_request_bytes)
    if args.delegate_root is not None:
        root = pathlib.Path(args.delegate_root)
        if not root.is_dir():
            raise InputError(f"--delegate-root {args.delegate_root}: not a folder")
        options["delegate_root"] = root
    missing = missing_delegates(options["tools"], options.get("delegate_root"))
    if missing:  # the pure compiler reads no files: the shell checks before the run
        raise InputError(f"{args.file}: " + "; ".join(missing))
    if args.approve:
        options["on_plan" if lazy else "approve"] = (
            plan_prompt(err) if lazy else terminal_approval(err)[0])
    else:  # destructive MCP tools: asked about at a terminal, refused elsewhere
        options["approve"] = approval_for(args, err, None, options["tools"])[0]
    if servers is not None:
        options["refresh"] = agent_refresh(args, loaded)
    view = shown(args, out, err, options, lazy)
    stops = Interrupts(err)
    try:
        if args.journal:
            run_id = args.run_id or uuid.uuid4().hex
            with open_journal(args.journal, args.durability, lease=args.lease) as journal:
                print(f"journal: run {run_id} in {journal.name}", file=err)
                options.update(journal=journal, run_id=run_id)
                result = _run_agent(context, llm, options, args, stops)
        else:
            result = _run_agent(context, llm, options, args, stops)
    finally:
        if view is not None:
            view.close()
    if args.out:
        write_context(args.out, result.context)
    return stops.exit_code(print_result(result, args.json, out), out)


def shown(args: argparse.Namespace, out: TextIO, err: TextIO, options: dict[str, Any],
          lazy: bool) -> AgentView | None:
    """How the run is shown as it goes (``options``' observer, and in lazy mode without
    ``--approve`` its plans): the live view on a terminal (standard output; standard
    error with ``--json``) while nobody is asked anything there (no ``--approve``, no
    destructive MCP tool), else the tick lines (none with ``--json``)."""
    stream = err if args.json else out
    view = (AgentView(stream) if stream.isatty() and not args.approve
            and options.get("approve") is None else None)
    if view is not None:
        options["observer"] = view.observe
        if options.get("activities") and args.interpreter != "dask":
            options["activities"] = {name: view.wrap(name, fn)
                                     for name, fn in options["activities"].items()}
    elif not args.json:
        options["observer"] = tick_printer(out)
    if lazy and not args.approve and not args.journal and not args.json:
        options["on_plan"] = plan_shown(out if view is None else view.lines())
    return view


def _max_ticks(args: argparse.Namespace, spec: Mapping[str, Any]) -> int:
    """``--max-ticks``, else the file's ``max_ticks`` (default 25): a positive integer."""
    max_ticks = args.max_ticks if args.max_ticks is not None else spec.get("max_ticks", 25)
    if not isinstance(max_ticks, int) or isinstance(max_ticks, bool) or max_ticks < 1:
        raise InputError(f"--max-ticks must be a positive integer, got {args.max_ticks}"
                         if args.max_ticks is not None else
                         f'{args.file}: "max_ticks" must be a positive integer, got '
                         f"{json_text(max_ticks, indent=None)}")
    return max_ticks


def budgets_of(args: argparse.Namespace) -> Budgets:
    """The run's budgets: ``--max-requests``, ``--max-tokens``, ``--max-delegates`` (each a
    positive integer; the defaults otherwise)."""
    given = {"max_requests": args.max_requests, "max_tokens": args.max_tokens,
             "max_delegates": args.max_delegates}
    for name, value in given.items():
        if value is not None and value < 1:
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag} must be a positive integer, got {value}")
    return Budgets(**{name: value for name, value in given.items() if value is not None})


def _positive(flag: str, value: int) -> int:
    if value < 1:
        raise InputError(f"{flag} must be a positive number of bytes, got {value}")
    return value


def _run_agent(context: Context, llm: LLM, options: dict[str, Any],
               args: argparse.Namespace, stops: Interrupts) -> AgentResult:
    """The agent run, Ctrl-C and SIGTERM stopping it (:mod:`obelisk.cli.interrupt`)."""
    where = args.file
    try:
        with events_file(args.events, stops.err) as on_event:
            options = {**options, "on_event": on_event}
            if args.interpreter == "dask":
                return dask_agent(args, context, llm, options)
            if options.get("activities"):  # so the terminal can say which still run
                options["activities"] = {name: stops.wrap(name, fn)
                                         for name, fn in options["activities"].items()}
            for hook in ("approve", "on_plan"):  # Ctrl-C at a prompt stops the run
                if options.get(hook) is not None:
                    options[hook] = stops.prompt(options[hook])
            return stops.run_async(lambda: run_agent(context, llm, **options))
    except (ToolError, AgentError, JournalUnreadable) as exc:
        raise InputError(f"{where}: {exc}") from None


def print_result(result: AgentResult, as_json: bool, out: TextIO) -> int:
    """Print an agent run's result (as JSON, or its status, output and tokens); the exit
    code: 0 when it completed, 1 otherwise."""
    if as_json:  # the result, and the final context the run ended with
        data = {**result.to_json(), "context": result.context.to_json()}
        print(json_text(data, stream=out), file=out)
    else:
        print(f"{result.status.value}: {inert(result.reason)}", file=out)
        if result.status is AgentStatus.COMPLETED:
            print("output: " + json_text(result.output, stream=out), file=out)
        usage = result.usage
        print(f"tokens: {usage.input_tokens:,} in, {usage.output_tokens:,} out "
              f"({result.requests:,} LLM request{'' if result.requests == 1 else 's'})",
              file=out)
    return EXIT_OK if result.status is AgentStatus.COMPLETED else EXIT_FAILED


AGENT = Command("agent", "run an agent: an LLM plans calls, tick by tick", add_arguments, run)
