"""Interpreter costs (issue: the interpreters' figures), measured in one run.

Prints:
  1. a fan-out/fan-in plan of 10,000 calls to no-op async activities under run_async,
     against asyncio.gather over the same 10,000 coroutines      (target ratio <= 10);
  2. a 10,000-call chain against a 1,000-call chain, sync and asyncio (target <= 15);
  3. 100 independent activities that sleep 50 ms, then a join that sleeps 50 ms:
     wall time against the 100 ms critical path                   (target <= 1.1);
  4. the per-call overhead in microseconds (run time less gather time, per call), at
     1,000 and 10,000 calls, to show it stays flat as plans grow;
  5. the issue's exponential plan (a 40-step dry run whose echo mocks double a value at
     every step): where and how fast the size limit (max_value_nodes) stops it.
Compilation is timed separately and not included in the run times.

Run: python bench/run.py
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from obelisk import compile_plan, dry_run, run_async, run_sync


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
        result = await run_async(plan, activities={"work": noop})
        elapsed = time.perf_counter() - start
        assert result.status == "completed" and not result.errors
        return elapsed
    return asyncio.run(go())


def time_sync(plan: Any) -> float:
    start = time.perf_counter()
    result = run_sync(plan, activities={"work": sync_noop})
    elapsed = time.perf_counter() - start
    assert result.status == "completed" and not result.errors
    return elapsed


def main() -> None:
    t0 = time.perf_counter()
    fan10k = compile_plan(fan_plan(10_000))
    compile_fan = time.perf_counter() - t0
    fan1k = compile_plan(fan_plan(1_000))
    gather10k = best(3, lambda: time_gather(10_000))
    gather1k = best(3, lambda: time_gather(1_000))
    fan_run10k = best(2, lambda: time_async(fan10k))
    fan_run1k = best(3, lambda: time_async(fan1k))
    print(f"1. fan-out/fan-in, 10,000 calls: run_async {fan_run10k:.3f} s, asyncio.gather "
          f"{gather10k:.3f} s, ratio {fan_run10k / gather10k:.1f} (target <= 10); "
          f"compile {compile_fan:.2f} s, not included")

    chain1k, chain10k = compile_plan(chain_plan(1_000)), compile_plan(chain_plan(10_000))
    s1, s10 = best(3, lambda: time_sync(chain1k)), best(2, lambda: time_sync(chain10k))
    a1, a10 = best(3, lambda: time_async(chain1k)), best(2, lambda: time_async(chain10k))
    print(f"2. chain 10,000 vs 1,000: sync {s10:.3f} s / {s1:.3f} s = {s10 / s1:.1f}; "
          f"asyncio {a10:.3f} s / {a1:.3f} s = {a10 / a1:.1f} (target <= 15)")

    async def sleeper(call: Any, tool: Any, context: Any) -> Any:
        await asyncio.sleep(0.05)
        return call.get("x")

    par = [{"_tool": "nap", "x": i, "_outputPath": f"†state.naps.n{i}"} for i in range(100)]
    par.append({"_tool": "nap", "x": "†state.naps", "_outputPath": "†state.joined"})
    par_plan = compile_plan(par)

    async def go() -> float:
        start = time.perf_counter()
        result = await run_async(par_plan, activities={"nap": sleeper})
        assert result.status == "completed" and not result.errors
        return time.perf_counter() - start
    walls = [asyncio.run(go()) for _ in range(15)]  # timer noise: take the median of many
    wall = statistics.median(walls)
    print(f"3. 100 x 50 ms in parallel, then a 50 ms join: wall {wall * 1000:.1f} ms (median of 15), "
          f"{wall / 0.100:.3f} x the 100 ms critical path (target <= 1.1)")

    per1k = (fan_run1k - gather1k) / 1_000 * 1e6
    per10k = (fan_run10k - gather10k) / 10_000 * 1e6
    sync_per1k, sync_per10k = s1 / 1_000 * 1e6, s10 / 10_000 * 1e6
    print(f"4. per-call overhead: asyncio {per1k:.0f} us at 1,000 calls, {per10k:.0f} us at 10,000; "
          f"sync chain {sync_per1k:.0f} us at 1,000, {sync_per10k:.0f} us at 10,000")

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
