"""obelisk side by side with LangGraph and raw asyncio (issue 13), measured in one process.

Engines, alternated within every round so that load on the machine falls on all of them:
  - obelisk sync     (``run_sync``, sync no-op activities);
  - obelisk asyncio  (``run_async``, async no-op activities);
  - LangGraph        (``StateGraph``, one node per call, edges as the dataflow, no
                      checkpointer, ``await graph.ainvoke(...)``; the state is one dict
                      whose reducer merges in place, so LangGraph is not charged for copies
                      the benchmark would make; building and compiling the graph is its
                      "compile");
  - design floor     (the least a pure core over pyrsistent must do: a dependency-counting
                      scheduler, a task per node, each result appended to a persistent
                      vector and folded into a persistent map; see ``design_floor``);
  - raw asyncio      (one task per node, each awaiting the tasks it reads).

Workloads, at N = 100, 1,000, 5,000 and 10,000 nodes:
  - fan-out: one source, N - 2 parallel nodes reading it, one join reading them all;
  - chain:   N nodes, each reading the one before.
Every node adds one to what it reads (the join sums), so each engine's answer is checked.

Prints the median CPU time (``time.process_time``) and wall time per node of each engine,
run and compile apart and end to end, and the figures with their targets, each marked
met or not met:
  - obelisk / raw asyncio, run per node          (target <= 6 at 1,000 and 10,000);
  - LangGraph / obelisk, run only               (target >= 8 at 1,000, >= 20 at 5,000);
  - LangGraph / obelisk, compile + run          (target >= 5 at 1,000);
  - the makespan of 100 x 50 ms, then a 50 ms join, against the 100 ms critical path
                                                (target <= 1.05);
  - obelisk's compile time per call.
Ratios compare obelisk asyncio, the engine that does the same work as the others; the
sync engine's ratio to raw asyncio is printed beside it.

LangGraph is never a dependency of obelisk: on its first run the script makes a
benchmark-only environment (``bench/.peers-venv``, ignored by git) with ``pip install
langgraph`` and this checkout of obelisk (``pip install -e .``), then runs itself again in
it. ``--no-venv`` runs in the current interpreter (LangGraph is skipped if absent).

Run: python bench/peers.py            (all sizes, 5 rounds; several minutes)
     python bench/peers.py --quick    (1,000 and 5,000 nodes, fewer rounds)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import pathlib
import statistics
import subprocess
import sys
import time
import venv
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

REPO = pathlib.Path(__file__).resolve().parent.parent
VENV = REPO / "bench" / ".peers-venv"
KINDS = ("fan-out", "chain")


# ---------------------------------------------------------------- the workloads ----

def fan_calls(n: int) -> list[dict[str, Any]]:
    """The fan-out plan of ``n`` calls: a source, ``n - 2`` nodes reading it, a join."""
    calls: list[dict[str, Any]] = [{"_tool": "inc", "x": 0, "_outputPath": "†state.src"}]
    calls += [{"_tool": "inc", "x": "†state.src", "_outputPath": f"†state.out.w{i}"}
              for i in range(n - 2)]
    calls.append({"_tool": "total", "x": "†state.out", "_outputPath": "†state.done"})
    return calls


def chain_calls(n: int) -> list[dict[str, Any]]:
    """The chain plan of ``n`` calls, each reading the output of the one before."""
    calls: list[dict[str, Any]] = [{"_tool": "inc", "x": 0, "_outputPath": "†state.s0"}]
    calls += [{"_tool": "inc", "x": f"†state.s{i - 1}", "_outputPath": f"†state.s{i}"}
              for i in range(1, n - 1)]
    calls.append({"_tool": "inc", "x": f"†state.s{n - 2}", "_outputPath": "†state.done"})
    return calls


def plan_calls(kind: str, n: int) -> list[dict[str, Any]]:
    """The obelisk plan of workload ``kind`` at ``n`` nodes."""
    return fan_calls(n) if kind == "fan-out" else chain_calls(n)


def expected(kind: str, n: int) -> int:
    """The answer every engine must give: the value at ``done``."""
    return 2 * (n - 2) if kind == "fan-out" else n


def _inc(call: Any, tool: Any, context: Any) -> Any:
    return call["x"] + 1


def _total(call: Any, tool: Any, context: Any) -> Any:
    return sum(call["x"].values())


async def _ainc(call: Any, tool: Any, context: Any) -> Any:
    return call["x"] + 1


async def _atotal(call: Any, tool: Any, context: Any) -> Any:
    return sum(call["x"].values())


SYNC_ACTIVITIES: Mapping[str, Any] = {"inc": _inc, "total": _total}
ASYNC_ACTIVITIES: Mapping[str, Any] = {"inc": _ainc, "total": _atotal}


def obelisk_compile(kind: str, n: int) -> Any:
    """The compiled obelisk plan of workload ``kind`` at ``n`` nodes (the collector tuned
    as the command line tunes it: the library leaves it alone)."""
    from obelisk import compile_plan, gc_tuned
    with gc_tuned(n, freeze=True):
        return compile_plan(plan_calls(kind, n))


def _check(result: Any) -> Any:
    if result.status != "completed" or result.errors:
        raise RuntimeError(f"obelisk run failed: {result.status} {list(result.errors)[:1]}")
    return result


def _answer(result: Any) -> Any:
    from obelisk import resolve
    return resolve(_check(result).context, "†state.done")


def obelisk_sync(plan: Any) -> Any:
    """Run ``plan`` under ``run_sync``; returns the value at ``done``."""
    from obelisk import gc_tuned, run_sync
    with gc_tuned(len(plan.nodes), freeze=True):  # as the command line runs a plan
        return _answer(run_sync(plan, activities=SYNC_ACTIVITIES))


async def obelisk_async(plan: Any) -> Any:
    """Run ``plan`` under ``run_async``; returns the value at ``done``."""
    from obelisk import gc_tuned, run_async
    with gc_tuned(len(plan.nodes), freeze=True):  # as the command line runs a plan
        return _answer(await run_async(plan, activities=ASYNC_ACTIVITIES))


async def raw_asyncio(kind: str, n: int) -> int:
    """The workload as plain asyncio, one task per node; returns the value at ``done``."""
    async def inc(before: Awaitable[int] | None) -> int:
        return (await before if before is not None else 0) + 1

    async def total(parts: list[asyncio.Task[int]]) -> int:
        return sum([await p for p in parts])

    if kind == "fan-out":
        src = asyncio.ensure_future(inc(None))
        workers = [asyncio.ensure_future(inc(src)) for _ in range(n - 2)]
        return await asyncio.ensure_future(total(workers))
    task = asyncio.ensure_future(inc(None))
    for _ in range(n - 1):
        task = asyncio.ensure_future(inc(task))
    return await task


async def design_floor(kind: str, n: int) -> int:
    """The least a pure-core interpreter over pyrsistent does per node (the design card's
    floor), as plain code: a dependency-counting scheduler, one task per node, every result
    appended as a message to a persistent vector and folded into a persistent map that
    readers read. No compiler, no expressions, no statuses, no errors, no trace.

    It answers whether "obelisk / raw asyncio <= 6" is reachable under the design card:
    obelisk cannot cost less than this, so the floor's own ratio to raw asyncio bounds it.
    """
    from pyrsistent import pmap, pvector

    # Each node: (what it reads, where it writes); readers[i]: the nodes waiting on i.
    if kind == "fan-out":
        reads: list[tuple[str, ...]] = [()] + [("src",)] * (n - 2) + [("out",)]
        writes = ["src"] + [f"out.w{i}" for i in range(n - 2)] + ["done"]
        waiting = [0] + [1] * (n - 2) + [n - 2]
        readers: list[list[int]] = [list(range(1, n - 1))] + [[n - 1]] * (n - 2) + [[]]
    else:
        reads = [()] + [(f"s{i - 1}",) for i in range(1, n)]
        writes = [f"s{i}" for i in range(n - 1)] + ["done"]
        reads[-1] = (f"s{n - 2}",)
        waiting = [0] + [1] * (n - 1)
        readers = [[i + 1] for i in range(n - 1)] + [[]]
    state: dict[str, Any] = {"context": pvector(), "view": pmap()}
    finished = asyncio.get_running_loop().create_future()

    async def node(value: int) -> int:
        return value + 1

    async def total(parts: Any) -> int:
        return sum(parts.values())

    def value_of(path: str) -> Any:
        view = state["view"]
        for key in path.split("."):
            view = view[key]
        return view

    def record(i: int, task: asyncio.Task[int]) -> None:
        result = task.result()
        path = writes[i]
        state["context"] = state["context"].append(pmap({"type": "state", "path": path,
                                                         "value": result}))
        head, _, leaf = path.partition(".")
        view = state["view"]
        state["view"] = (view.set(head, view.get(head, pmap()).set(leaf, result)) if leaf
                         else view.set(head, result))
        if path == "done":
            finished.set_result(result)
        for r in readers[i]:
            waiting[r] -= 1
            if not waiting[r]:
                start(r)

    def start(i: int) -> None:
        args = [value_of(p) for p in reads[i]]
        join = kind == "fan-out" and i == n - 1
        coro = total(args[0]) if join else node(args[0] if args else 0)
        asyncio.ensure_future(coro).add_done_callback(lambda t, i=i: record(i, t))

    start(0)
    return await finished


def machine_alone(n: int) -> tuple[float, float]:
    """CPU µs of a run-state transition that changes nothing (``settle`` of no outcome),
    and of one chain call through the state machine alone (``settle`` of the call's
    outcome, which also advances to the next call), best of 5: the part of a chain's
    cost per node that is neither asyncio nor the activity."""
    from obelisk.interpreters.machine import advance, begin, settle
    from obelisk.interpreters.outcomes import Returned

    plan = obelisk_compile("chain", n)
    state, _ = advance(begin(plan, trace=False))
    start = time.process_time()
    for _ in range(10_000):
        settle(state, [])
    empty = (time.process_time() - start) / 10_000 * 1e6

    def walk() -> float:
        current, ready = advance(begin(plan, trace=False))
        begun = time.process_time()
        while ready:
            node = ready[0].node
            current, ready = settle(current, [(node, Returned(node), "2026-01-01T00:00:00.000Z")])
        return (time.process_time() - begun) / n * 1e6

    walk()  # the plan's call templates are made on its first run
    return empty, min(walk() for _ in range(5))


def _merge(current: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    # In place: the benchmark does not charge LangGraph for copying its state.
    current.update(update)
    return current


def _langgraph_state() -> Any:
    # The functional form: LangGraph reads the hints at run time, and this module's
    # annotations are strings (from __future__) that it could not resolve in a function.
    from typing import Annotated, TypedDict
    return TypedDict("State", {"vals": Annotated[dict, _merge]})  # type: ignore[operator]


def langgraph_build(kind: str, n: int) -> Any:
    """The workload as a compiled LangGraph StateGraph (its "compile")."""
    from langgraph.graph import END, START, StateGraph

    State = _langgraph_state()

    def inc(read: str, write: str) -> Callable[[Any], Awaitable[dict[str, Any]]]:
        async def node(state: Any) -> dict[str, Any]:
            vals = state["vals"]
            return {"vals": {write: (vals[read] if read else 0) + 1}}
        return node

    graph = StateGraph(State)
    if kind == "fan-out":
        graph.add_node("src", inc("", "src"))
        graph.add_edge(START, "src")
        workers = [f"w{i}" for i in range(n - 2)]
        for w in workers:
            graph.add_node(w, inc("src", w))
            graph.add_edge("src", w)

        async def join(state: Any) -> dict[str, Any]:
            vals = state["vals"]
            return {"vals": {"done": sum(vals[w] for w in workers)}}
        graph.add_node("join", join)
        graph.add_edge(workers, "join")
        graph.add_edge("join", END)
    else:
        names = [f"s{i}" for i in range(n - 1)] + ["done"]
        previous = ""
        for name in names:
            graph.add_node(name, inc(previous, name))
            graph.add_edge(previous or START, name)
            previous = name
        graph.add_edge(previous, END)
    return graph.compile()


async def langgraph_run(graph: Any, kind: str, n: int) -> Any:
    """``await graph.ainvoke`` on a fresh state; returns the value at ``done``."""
    final = await graph.ainvoke({"vals": {}}, {"recursion_limit": n + 10})
    return final["vals"]["done"]


def have_langgraph() -> bool:
    """Whether LangGraph can be imported here."""
    try:
        import langgraph.graph  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------- measuring ----

class Clock:
    """CPU and wall time of one block."""

    def __enter__(self) -> Clock:
        gc.collect()
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu = time.process_time() - self.cpu0
        self.wall = time.perf_counter() - self.wall0


def measure(engine: str, kind: str, n: int,
            compiled: tuple[Clock, Mapping[str, Any]]) -> tuple[Clock, Clock]:
    """Build (LangGraph) and run one workload on one engine; checks the answer.

    ``compiled`` is the round's obelisk compile time and a compiled plan of its own for
    each obelisk engine: the time is the round's first compile (compiling the same plan
    again finds the parser's memo warm), and each engine runs a plan no run has touched,
    as a plan is run in the common case (an agent compiles a plan per tick and runs it
    once): a second run of the same plan object finds what a run remembers per plan.
    """
    built: Any = None
    if engine.startswith("obelisk"):
        comp, plans = compiled
        built = plans[engine]
    else:
        with Clock() as comp:
            if engine == "langgraph":
                built = langgraph_build(kind, n)
    # The event loop is made outside the clock: only the workload's own run is timed.
    run = Clock()
    if engine == "obelisk sync":
        with run:
            answer = obelisk_sync(built)
    else:
        async def timed() -> Any:
            with run:
                if engine == "obelisk asyncio":
                    return await obelisk_async(built)
                if engine == "langgraph":
                    return await langgraph_run(built, kind, n)
                if engine == "design floor":
                    return await design_floor(kind, n)
                return await raw_asyncio(kind, n)
        answer = asyncio.run(timed())
    if answer != expected(kind, n):
        raise RuntimeError(f"{engine} {kind} {n}: answer {answer!r}, expected {expected(kind, n)}")
    return comp, run


def makespan(engine: str) -> float:
    """Wall seconds of 100 calls sleeping 50 ms in parallel, then a 50 ms join."""
    if engine == "obelisk asyncio":
        from obelisk import compile_plan, gc_tuned, run_async

        async def nap(call: Any, tool: Any, context: Any) -> Any:
            await asyncio.sleep(0.05)
            return 1
        calls = [{"_tool": "nap", "x": i, "_outputPath": f"†state.naps.n{i}"} for i in range(100)]
        calls.append({"_tool": "nap", "x": "†state.naps", "_outputPath": "†state.joined"})
        plan = compile_plan(calls)

        async def go() -> Any:
            with gc_tuned(len(plan.nodes), freeze=True):
                return await run_async(plan, activities={"nap": nap})
    elif engine == "langgraph":
        from langgraph.graph import END, START, StateGraph

        State = _langgraph_state()

        def napper(name: str) -> Callable[[Any], Awaitable[dict[str, Any]]]:
            async def node(state: Any) -> dict[str, Any]:
                await asyncio.sleep(0.05)
                return {"vals": {name: 1}}
            return node
        graph = StateGraph(State)
        names = [f"n{i}" for i in range(100)]
        for name in names:
            graph.add_node(name, napper(name))
            graph.add_edge(START, name)
        graph.add_node("join", napper("joined"))
        graph.add_edge(names, "join")
        graph.add_edge("join", END)
        compiled = graph.compile()

        async def go() -> Any:
            return await compiled.ainvoke({"vals": {}})
    else:
        async def go() -> Any:
            await asyncio.gather(*(asyncio.sleep(0.05) for _ in range(100)))
            await asyncio.sleep(0.05)
    async def timed() -> float:  # the event loop is made outside the clock
        start = time.perf_counter()
        result = await go()
        elapsed = time.perf_counter() - start  # the result is checked and freed after
        if engine == "obelisk asyncio":
            _check(result)
        return elapsed
    return asyncio.run(timed())


# ---------------------------------------------------------------- the report ----

def _mark(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def run_bench(sizes: list[int], rounds: Mapping[int, int], engines: list[str]) -> None:
    """Alternate the engines over ``rounds`` rounds at each size and print the figures."""
    # results[(engine, kind, n)] = list of (compile cpu, run cpu, run wall)
    results: dict[tuple[str, str, int], list[tuple[float, float, float]]] = {}
    for n in sizes:
        for r in range(rounds[n]):
            for kind in KINDS:
                # Rotate the order every round so no engine always runs first or last.
                order = engines[r % len(engines):] + engines[:r % len(engines)]
                with Clock() as clock:
                    plan = obelisk_compile(kind, n)
                plans = {"obelisk sync": plan, "obelisk asyncio": obelisk_compile(kind, n)}
                for engine in order:
                    comp, run = measure(engine, kind, n, (clock, plans))
                    results.setdefault((engine, kind, n), []).append((comp.cpu, run.cpu, run.wall))
        print(f"  ... {n:,} nodes done ({rounds[n]} rounds)", flush=True)

    def med(engine: str, kind: str, n: int, part: int) -> float:
        return statistics.median(row[part] for row in results[(engine, kind, n)])

    print("\nPer node, median over rounds (µs): run CPU / run wall; compile CPU apart")
    print(f"{'workload':<16}" + "".join(f"{e:>26}" for e in engines))
    for kind in KINDS:
        for n in sizes:
            cells = []
            for e in engines:
                run_cpu, run_wall = med(e, kind, n, 1) / n * 1e6, med(e, kind, n, 2) / n * 1e6
                comp = med(e, kind, n, 0) / n * 1e6
                cells.append(f"{run_cpu:7.1f} / {run_wall:7.1f}" + (f" +{comp:6.1f}" if comp > 0.05 else " " * 8))
            print(f"{kind + ' ' + format(n, ','):<16}" + "".join(f"{c:>26}" for c in cells))

    print("\nFigures (ratios of run CPU per node, same process, same rounds):")
    ob = "obelisk asyncio"
    for kind in KINDS:
        for n in sizes:
            raw = med("raw asyncio", kind, n, 1)
            ratio_a, ratio_s = med(ob, kind, n, 1) / raw, med("obelisk sync", kind, n, 1) / raw
            target = n in (1_000, 10_000)
            note = f"target <= 6: {_mark(ratio_a <= 6)}" if target else "no target at this size"
            print(f"  obelisk/raw asyncio, {kind} {n:,}: asyncio {ratio_a:.1f}, sync {ratio_s:.1f} ({note})")
    for kind in KINDS:
        for n in sizes:
            raw, floor = med("raw asyncio", kind, n, 1), med("design floor", kind, n, 1)
            print(f"  design floor/raw asyncio, {kind} {n:,}: {floor / raw:.1f} "
                  f"(obelisk asyncio/design floor {med(ob, kind, n, 1) / floor:.1f})")
    if 1_000 in sizes:
        empty, chain_step = machine_alone(1_000)
        raw = med("raw asyncio", "chain", 1_000, 1) / 1_000 * 1e6
        print(f"  the machine alone, chain 1,000 (settle and advance per call, no asyncio, no "
              f"activity): {chain_step:.1f} µs a call, {chain_step / raw:.1f} x raw asyncio's "
              f"whole node; a transition that changes nothing: {empty:.1f} µs "
              f"({empty / raw:.1f} x)")
    if "langgraph" in engines:
        for kind in KINDS:
            for n in sizes:
                lg_run, ob_run = med("langgraph", kind, n, 1), med(ob, kind, n, 1)
                lg_e2e = lg_run + med("langgraph", kind, n, 0)
                ob_e2e = ob_run + med(ob, kind, n, 0)
                goal = {1_000: 8, 5_000: 20}.get(n)
                note = f"target >= {goal}: {_mark(lg_run / ob_run >= goal)}" if goal else "no target"
                e2e_note = f"target >= 5: {_mark(lg_e2e / ob_e2e >= 5)}" if n == 1_000 else "no target"
                print(f"  LangGraph/obelisk, {kind} {n:,}: run only {lg_run / ob_run:.1f} ({note}); "
                      f"compile + run {lg_e2e / ob_e2e:.1f} ({e2e_note})")
    else:
        print("  LangGraph/obelisk: not measured (LangGraph is not installed here)")
    for kind in KINDS:
        for n in sizes:
            first = results[(ob, kind, n)][0][0] / n * 1e6
            print(f"  obelisk compile, {kind} {n:,}: {med(ob, kind, n, 0) / n * 1e6:.1f} µs CPU per call, "
                  f"median of rounds ({first:.1f} in the first round)")

    walls: dict[str, list[float]] = {}
    for _ in range(15):  # timer noise: the median of many, engines alternating
        for engine in [ob] + [e for e in engines if e in ("langgraph", "raw asyncio")]:
            walls.setdefault(engine, []).append(makespan(engine))
    for engine, times in walls.items():
        wall = statistics.median(times)
        note = f" (target <= 1.05: {_mark(wall / 0.1 <= 1.05)})" if engine == ob else ""
        print(f"  100 x 50 ms then a 50 ms join, {engine}: {wall * 1000:.1f} ms (median of 15), "
              f"{wall / 0.1:.3f} x the 100 ms critical path{note}")


def ensure_environment(argv: list[str], script: pathlib.Path | None = None) -> None:
    """Re-run ``script`` (this one by default) inside the benchmark-only environment with
    LangGraph, made on first use (``bench/headline.py --langgraph`` shares it)."""
    script = script or pathlib.Path(__file__).resolve()
    if have_langgraph() or os.environ.get("OBELISK_PEERS_VENV"):
        return
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"making {VENV} (LangGraph and this checkout of obelisk; once)", file=sys.stderr)
        venv.create(VENV, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "langgraph", "-e", str(REPO)],
                       check=True)
    env = dict(os.environ, OBELISK_PEERS_VENV="1")
    os.execve(str(python), [str(python), str(script), *argv], env)


def main() -> None:
    """Parse the options, make sure LangGraph is at hand, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 5,000 nodes, fewer rounds")
    parser.add_argument("--rounds", type=int, default=None, help="rounds at every size")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None,
                        help="comma-separated node counts")
    parser.add_argument("--no-venv", action="store_true",
                        help="run here; LangGraph is skipped unless importable")
    args = parser.parse_args()
    if not args.no_venv:
        ensure_environment(sys.argv[1:])
    import obelisk
    where = pathlib.Path(obelisk.__file__).resolve()
    if REPO not in where.parents and not os.environ.get("PYTHONPATH"):
        sys.exit(f"obelisk is imported from {where}, not this checkout: "
                 f"remove {VENV} and run again")
    sizes = args.sizes or ([1_000, 5_000] if args.quick else [100, 1_000, 5_000, 10_000])
    default = {100: 7, 1_000: 5, 5_000: 3, 10_000: 3} if not args.quick else {1_000: 3, 5_000: 1}
    rounds = {n: args.rounds or default.get(n, 3) for n in sizes}
    engines = ["obelisk sync", "obelisk asyncio"]
    engines += ["langgraph"] if have_langgraph() else []
    engines += ["design floor", "raw asyncio"]
    print(f"Python {sys.version.split()[0]}, obelisk from {where.parent}, "
          f"LangGraph {'present' if 'langgraph' in engines else 'absent'}; sizes {sizes}")
    run_bench(sizes, rounds, engines)


if __name__ == "__main__":
    main()
