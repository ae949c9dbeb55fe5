"""The headline (issue 33): plans against ReAct and against LangGraph, on the same tasks.

Five tasks with known tools and answers (bench/arena/catalog.py): parallel lookups then a
combination, a chain of dependent calls, a fan-out over ten items then an aggregate, a
lookup that fails and its fallback, a multi-turn session against a stateful account.
Every contender asks the same simulated model (scripted answers: the right ones for its
strategy; 400 ms to the first token, then 20 ms per output token; tokens are characters
/ 4 of the rendered request and answer) and runs the same tools (Python functions that
sleep 50-500 ms):
  1. obelisk, whole plan:   one solution a turn, run once it has all arrived;
  2. obelisk, streaming:    the same solution, each call started as soon as it arrives;
  3. ReAct (obelisk loop):  one call a tick, each result seen before the next call;
     ReAct (LangGraph):     LangGraph's prebuilt ReAct agent, one tool call a turn;
  4. LangGraph, parallel:   the same agent, every call whose inputs are known in one turn
                            (its ToolNode runs them at once).
Prints the parameters, per task and contender the LLM requests, wall time and tokens in
and out (and whether the answer is right), the ratios against obelisk, the goals and
which are met, and the request size at ticks 1, 10 and 50 of a long agent run whose data
does not grow.

The LangGraph rows need LangGraph: they are measured when it can be imported, and
``--langgraph`` runs this script in bench/.peers-venv (made on first use by
bench/peers.py's recipe: LangGraph and this checkout of obelisk; never a dependency).

Run: python bench/headline.py [--langgraph] [--first-token S] [--per-token S]
                              [--tool-scale X] [--tasks parallel,chain,...]
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
import time
from importlib import metadata

HERE = pathlib.Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the arena package and peers.py sit beside this script
    sys.path.insert(0, str(HERE))

import peers  # noqa: E402
from arena.catalog import TASKS  # noqa: E402
from arena.growth import request_growth  # noqa: E402
from arena.llm import Latency  # noqa: E402
from arena.measured import CONTENDERS, Measured, Settings  # noqa: E402
from arena.on_obelisk import run_obelisk  # noqa: E402
from arena.report import Results, all_right, goals, parameters, ratios, table  # noqa: E402
from arena.tasks import Task  # noqa: E402

__all__ = ["contenders", "measure", "run_one"]


def contenders(langgraph: bool) -> list[str]:
    """The contenders to run: obelisk's always, LangGraph's when it is installed."""
    return [key for key, _ in CONTENDERS if langgraph or not key.startswith("lg-")]


async def run_one(task: Task, contender: str, settings: Settings) -> Measured:
    """One contender on one task."""
    if contender.startswith("lg-"):
        from arena.on_langgraph import run_langgraph
        return await run_langgraph(task, contender, settings)
    return await run_obelisk(task, contender, settings)


def measure(tasks: list[Task], keys: list[str], settings: Settings) -> Results:
    """Every contender on every task, one after the other, printing progress."""
    results: dict[tuple[str, str], Measured] = {}
    for task in tasks:
        for key in keys:
            results[(task.name, key)] = asyncio.run(run_one(task, key, settings))
        print(f"  ... {task.name} done", file=sys.stderr, flush=True)
    return results


def main() -> None:
    """Parse the options, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--langgraph", action="store_true",
                        help="run in bench/.peers-venv, with LangGraph (made on first use)")
    parser.add_argument("--first-token", type=float, default=0.4, metavar="S",
                        help="seconds to the first token (default 0.4)")
    parser.add_argument("--per-token", type=float, default=0.02, metavar="S",
                        help="seconds per output token (default 0.02)")
    parser.add_argument("--tool-scale", type=float, default=1.0, metavar="X",
                        help="multiply every tool's latency by X (default 1)")
    parser.add_argument("--tasks", type=lambda s: s.split(","), default=None,
                        help="comma-separated task names (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="no latencies: run every contender, print the table, exit 1 "
                        "unless every answer is right (and LangGraph's rows are there)")
    args = parser.parse_args()
    if args.langgraph:
        peers.ensure_environment(sys.argv[1:], HERE / "headline.py")
    known = {task.name: task for task in TASKS}
    unknown = [name for name in args.tasks or () if name not in known]
    if unknown:
        parser.error(f"unknown task(s) {', '.join(unknown)}: choose from {', '.join(known)}")
    tasks = [known[name] for name in args.tasks] if args.tasks else list(TASKS)
    settings = (Settings(Latency(0.0, 0.0), 0.0) if args.check else
                Settings(Latency(args.first_token, args.per_token), args.tool_scale))
    have = peers.have_langgraph()
    version = metadata.version("langgraph") if have else "absent (--langgraph installs it)"
    start = time.perf_counter()
    print("\n".join(parameters(settings, version)), end="\n\n", flush=True)
    results = measure(tasks, contenders(have), settings)
    print("\n".join(table(results, tasks)), end="\n\n")
    if args.check:
        sys.exit(0 if have and all_right(results, tasks) else 1)
    print("\n".join(ratios(results, tasks)), end="\n\n")
    print("\n".join(goals(results)), end="\n\n")
    print("\n".join(asyncio.run(request_growth()).lines()))
    print(f"\n(the whole benchmark took {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
