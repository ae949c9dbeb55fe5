"""Interpreter costs (issue 13: the interpreters' figures), measured in one run.

Prints:
  1. per node, run_async against raw asyncio (``asyncio.gather`` over the same no-op
     coroutines, one task each), for a fan-out/fan-in plan and a chain, at 1,000 and
     10,000 calls                                                    (target ratio <= 6);
  2. per node at 100,000 calls against 1,000, asyncio and sync, fan-out and chain: the cost
     per call stays flat as plans grow                               (target ratio <= 1.5);
     and the same ratio for raw asyncio (gather), for comparison;
  3. 100 independent activities that sleep 50 ms, then a join that sleeps 50 ms:
     wall time against the 100 ms critical path                      (target <= 1.05),
     in this process after the runs above, and in a fresh one (the plans of 100,000
     calls this process holds slow everything a little: caches and memory);
  4. memory held after a 100,000-call run (its result kept), per call (target <= 3 KB);
  5. the issue's exponential plan (a 40-step dry run whose echo mocks double a value at
     every step): where and how fast the size limit (max_value_nodes) stops it.
Compilation is timed separately and not included in the run times.

Run: python bench/run.py  (``--quick`` leaves out the 100,000-call rows)
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import subprocess
import sys
import time
import tracemalloc
from typing import Any

from obelisk import compile_plan, dry_run, gc_tuned, run_async, run_sync


async def noop(call: Any = None, tool: Any = None, context: Any = None) -> Any:
    return {"ok": True}


def sync_noop(call: Any, tool: Any, context: Any) -> Any:
    return {"ok": True}


def fan_plan(n: int) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = [{"_tool": "work", "x": "start", "_outputPath": "†state.src"}]
    calls += [{"_tool": "work", "x": "†state.src", "_outputPath": f"†state.out.w{i}"}
              for i in range(n - 2)]
    calls.append({"_tool": "work", "x": "†state.out", "_outputPath": "†state.done"})
    return calls


def chain_plan(n: int) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = [{"_tool": "work", "x": "start", "_outputPath": "†state.s0"}]
    calls += [{"_tool": "work", "x": f"†state.s{i - 1}", "_outputPath": f"†state.s{i}"}
              for i in range(1, n)]
    return calls


def best(times: int, fn: Any) -> float:
    return min(fn() for _ in range(times))


def time_gather(n: int) -> float:
    async def go() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(noop() for _ in range(n)))
        return time.perf_counter() - start
    return asyncio.run(go())


def time_async(plan: Any) -> float:
    async def go() -> float:
        start = time.perf_counter()
        with gc_tuned(len(plan.nodes), freeze=True):  # as the command line runs a plan
            result = await run_async(plan, activities={"work": noop})
        elapsed = time.perf_counter() - start
        assert result.status == "completed" and not result.errors
        return elapsed
    return asyncio.run(go())


def time_sync(plan: Any) -> float:
    start = time.perf_counter()
    with gc_tuned(len(plan.nodes), freeze=True):
        result = run_sync(plan, activities={"work": sync_noop})
    elapsed = time.perf_counter() - start
    assert result.status == "completed" and not result.errors
    return elapsed


def per_node(seconds: float, n: int) -> float:
    return seconds / n * 1e6


def makespan() -> float:
    """Wall seconds, median of 15, of 100 calls sleeping 50 ms in parallel, then a 50 ms
    join (the result kept until the clock stops)."""
    async def sleeper(call: Any, tool: Any, context: Any) -> Any:
        await asyncio.sleep(0.05)
        return call.get("x")

    par = [{"_tool": "nap", "x": i, "_outputPath": f"†state.naps.n{i}"} for i in range(100)]
    par.append({"_tool": "nap", "x": "†state.naps", "_outputPath": "†state.joined"})
    par_plan = compile_plan(par)

    async def go() -> float:
        start = time.perf_counter()
        with gc_tuned(len(par_plan.nodes), freeze=True):
            result = await run_async(par_plan, activities={"nap": sleeper})
        assert result.status == "completed" and not result.errors
        return time.perf_counter() - start
    return statistics.median(asyncio.run(go()) for _ in range(15))  # timer noise


def main() -> None:
    if "--makespan" in sys.argv[1:]:  # the child process of figure 3's second line
        print(makespan())
        return
    quick = "--quick" in sys.argv[1:]
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    compiled: dict[tuple[str, int], Any] = {}
    compile_seconds: dict[int, float] = {}
    for n in sizes:
        start = time.perf_counter()
        with gc_tuned(n, freeze=True):
            compiled["fan", n] = compile_plan(fan_plan(n))
        compile_seconds[n] = time.perf_counter() - start
        with gc_tuned(n, freeze=True):
            compiled["chain", n] = compile_plan(chain_plan(n))
    gather = {n: per_node(best(5 if n < 100_000 else 2, lambda n=n: time_gather(n)), n)
              for n in sizes}
    runs: dict[tuple[str, str, int], float] = {}
    for n in sizes:
        times = 5 if n <= 1_000 else 3 if n <= 10_000 else 2  # best of 2 at 100,000, as gather
        for shape in ("fan", "chain"):
            plan = compiled[shape, n]
            runs["asyncio", shape, n] = per_node(best(times, lambda p=plan: time_async(p)), n)
            runs["sync", shape, n] = per_node(best(times, lambda p=plan: time_sync(p)), n)
    print("1. per node, run_async vs raw asyncio (gather, one task per no-op coroutine), "
          "target ratio <= 6:")
    for n in (1_000, 10_000):
        for shape in ("fan", "chain"):
            run = runs["asyncio", shape, n]
            print(f"   {shape:5} {n:>7,}: run_async {run:6.1f} us, gather {gather[n]:5.1f} us, "
                  f"ratio {run / gather[n]:.2f}   (sync {runs['sync', shape, n]:6.1f} us)")
    print(f"   compile not included ({', '.join(f'{n:,} calls {s:.2f} s' for n, s in compile_seconds.items())})")
    if not quick:
        print("2. per node at 100,000 calls vs 1,000, target ratio <= 1.5:")
        for kind in ("asyncio", "sync"):
            for shape in ("fan", "chain"):
                big, small = runs[kind, shape, 100_000], runs[kind, shape, 1_000]
                print(f"   {kind:7} {shape:5}: {big:6.1f} us vs {small:6.1f} us, ratio "
                      f"{big / small:.2f}")
        # The same growth of raw asyncio itself (100,000 tasks alive at once leave the
        # caches): what a fan-out of run_async cannot do better than.
        print(f"   raw asyncio (gather): {gather[100_000]:6.1f} us vs {gather[1_000]:6.1f} us, "
              f"ratio {gather[100_000] / gather[1_000]:.2f}")

    wall = makespan()
    print(f"3. 100 x 50 ms in parallel, then a 50 ms join: wall {wall * 1000:.1f} ms (median "
          f"of 15), {wall / 0.100:.3f} x the 100 ms critical path (target <= 1.05)")
    fresh = float(subprocess.run([sys.executable, __file__, "--makespan"], check=True,
                                 capture_output=True, text=True).stdout)
    print(f"   the same in a fresh process (not after the runs above, whose plans this one "
          f"holds): wall {fresh * 1000:.1f} ms, {fresh / 0.100:.3f} x")

    if not quick:
        n = 100_000
        for shape in ("fan", "chain"):
            plan = compiled[shape, n]
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            result = run_sync(plan, activities={"work": sync_noop})
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
            assert result.status == "completed"
            del result
            print(f"4. memory held after a {n:,}-call {shape} run (result kept): "
                  f"{held / 2**20:.1f} MB, {held / n:,.0f} bytes per call (target <= 3,072)")

    doubling = [{"_tool": "echo", "a": f"†state.v{i}", "b": f"†state.v{i}",
                 "_outputPath": f"†state.v{i + 1}"} for i in range(40)]
    start = time.perf_counter()
    dry = dry_run(doubling, [{"type": "state", "v0": "x"}], mocks={"echo": {"echo": True}})
    elapsed = time.perf_counter() - start
    steps = sum(c.outcome == "executed" for c in dry.calls)
    print(f"5. echo doubling, 40 steps: stopped by ValueTooLarge after {steps} steps in "
          f"{elapsed:.2f} s (errors: {[e['data']['error']['type'] for e in dry.errors]})")


if __name__ == "__main__":
    main()
