"""The Dask interpreter against raw Dask, on one LocalCluster of two worker processes.

    python bench/dask_interpreter.py [--calls N] [--chain N] [--rounds N]

(Not bench/dask.py: a script of that name would be imported as the dask package by any
process that has bench/ on its path, Dask's own worker processes included.)

Prints, in one run (rounds alternating obelisk and raw Dask, best of each):
- the cost obelisk adds per call over ``client.submit`` + ``as_completed`` (results
  gathered in batches) for the same function: 1,000 independent no-op calls, in wall time
  and in the client process's CPU time (the LocalCluster's scheduler runs there too)
  (target: at most 1 ms);
- a fan-out of 1,000 calls of 10 ms on 2 workers: obelisk's throughput against raw Dask's
  (target: at least 80%);
- a chain of 100 calls, each reading the previous one's result: the time per hop on the
  cluster beside raw Dask's (each hop's result comes back to the client, by design), and
  the same chain placed in the client (``"x-obelisk-executor": "local"``), for what the
  executor choice does about it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
if HERE not in sys.path:  # loaded by a test: the workers import daskwork from here
    sys.path.append(HERE)

import daskwork  # noqa: E402
from distributed import Client, LocalCluster, as_completed  # noqa: E402

import obelisk  # noqa: E402
from obelisk import ActivityPath  # noqa: E402

WORK = ActivityPath("daskwork", "work")


def fan_out(n: int, ms: float) -> obelisk.CompiledPlan:
    return obelisk.compile_plan([{"_tool": "work", "n": i, "ms": ms, "_outputPath": f"†s.r{i}"}
                                 for i in range(n)])


def chain(n: int, placement: str = "dask") -> obelisk.CompiledPlan:
    calls = [{"_tool": "work", "n": 0, "_outputPath": "†s.r0"}]
    calls += [{"_tool": "work", "n": f"†s.r{i - 1}.n", "_outputPath": f"†s.r{i}"}
              for i in range(1, n)]
    tool = {"type": "object", "x-obelisk-executor": placement,
            "properties": {"_tool": {"const": "work"}}}
    return obelisk.compile_plan(calls, tools=[tool])


async def on_obelisk(client: Client, plan: obelisk.CompiledPlan) -> float:
    start = time.perf_counter()
    result = await obelisk.run_dask(plan, client=client, activities={"work": WORK})
    seconds = time.perf_counter() - start
    assert result.status == "completed" and not result.errors, result.errors
    return seconds


async def raw_fan_out(client: Client, n: int, ms: float) -> float:
    """``n`` futures taken as they complete, their results gathered in batches (the
    quickest way ``as_completed`` has)."""
    start = time.perf_counter()
    futures = [client.submit(daskwork.raw, i, ms, pure=False) for i in range(n)]
    done = 0
    async for _, result in as_completed(futures, with_results=True):
        done += result["n"] > 0
    seconds = time.perf_counter() - start
    assert done == n
    return seconds


async def raw_chain(client: Client, n: int) -> float:
    start = time.perf_counter()
    value = {"n": -1}
    for _ in range(n):
        value = await client.submit(daskwork.raw, value["n"], 0, pure=False)
    seconds = time.perf_counter() - start
    assert value == {"n": n - 1}
    return seconds


async def best(rounds: int, *runs: Callable[[], Awaitable[float]],
               cpu: list[float] | None = None) -> list[float]:
    """The best time of each run, over ``rounds`` rounds that alternate them (``cpu``
    gets the best CPU time of this process for each)."""
    times: list[list[float]] = [[] for _ in runs]
    cpus: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        for kept, used, run in zip(times, cpus, runs, strict=True):
            before = time.process_time()
            kept.append(await run())
            used.append(time.process_time() - before)
    if cpu is not None:
        cpu[:] = [min(used) for used in cpus]
    return [min(kept) for kept in times]


async def measure(client: Client, calls: int, links: int, rounds: int) -> None:
    print(f"LocalCluster: 2 worker processes, 1 thread each; best of {rounds} rounds, "
          "obelisk and raw Dask alternating\n")
    await best(1, lambda: on_obelisk(client, fan_out(50, 0)), lambda: raw_fan_out(client, 50, 0))
    noop = fan_out(calls, 0)
    cpu: list[float] = []
    ours, theirs = await best(rounds, lambda: on_obelisk(client, noop),
                              lambda: raw_fan_out(client, calls, 0), cpu=cpu)
    added = (ours - theirs) / calls * 1000
    print(f"{calls:,} no-op calls: obelisk {ours:.3f} s, raw submit + as_completed "
          f"{theirs:.3f} s; obelisk adds {added:.3f} ms a call (target <= 1 ms: "
          f"{'met' if added <= 1 else 'NOT met'}); client CPU {cpu[0]:.3f} s against "
          f"{cpu[1]:.3f} s: {(cpu[0] - cpu[1]) / calls * 1000:.3f} ms a call")
    ten = fan_out(calls, 10)
    ours, theirs = await best(rounds, lambda: on_obelisk(client, ten),
                              lambda: raw_fan_out(client, calls, 10))
    share = theirs / ours
    print(f"{calls:,} calls of 10 ms on 2 workers: obelisk {calls / ours:,.0f} calls/s, raw "
          f"Dask {calls / theirs:,.0f} calls/s: {share:.0%} of raw Dask's throughput "
          f"(target >= 80%: {'met' if share >= 0.8 else 'NOT met'})")
    remote, local = chain(links), chain(links, "local")
    ours, theirs, here = await best(rounds, lambda: on_obelisk(client, remote),
                                    lambda: raw_chain(client, links),
                                    lambda: on_obelisk(client, local))
    print(f"a chain of {links} calls, per hop: obelisk on the cluster "
          f"{ours / links * 1000:.2f} ms, raw Dask {theirs / links * 1000:.2f} ms "
          f"(ratio {ours / theirs:.2f}); placed in the client (\"x-obelisk-executor\": "
          f"\"local\") {here / links * 1000:.3f} ms")


async def main(calls: int, links: int, rounds: int) -> None:
    async with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                            host="127.0.0.1", dashboard_address=None,
                            asynchronous=True) as cluster, \
            Client(cluster, asynchronous=True) as client:
        await measure(client, calls, links, rounds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--chain", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.chain, options.rounds))
