"""MCP: what obelisk adds to a tools/call, and a parallel plan against one call at a time.

    python bench/mcp.py [--calls N]

Against the real test server (tests/mcp/mcp_tool_server.py) over stdio, in one run:

1. overhead per call: N calls of the server's ``add`` made with the SDK's own
   ``Client.call_tool``, against the same calls made as a plan's calls through
   ``run_async`` (the activity, the run, the result's conversion), one call at a time
   (a chain, each reading the previous result), alternating in rounds (best of each);
2. makespan: a plan of 20 independent calls to ``sleep`` (50 ms) then one joining call,
   against the same 21 calls made one round trip at a time.

Targets: at most 1 ms added per call; makespan at most 1.5 x the critical path (100 ms),
against about 21 x 50 ms one round trip at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
# This script's folder is first on the path, and this file would shadow the SDK's `mcp`.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT / "tests" / "mcp"))

from mcp_servers import stdio_spec  # noqa: E402

import obelisk  # noqa: E402
from obelisk.mcp import McpServers  # noqa: E402


async def sdk_calls(servers: McpServers, n: int) -> float:
    client = await servers._links[0].session()
    started = time.perf_counter()
    total = 0
    for _ in range(n):
        result = await client.call_tool("add", {"a": total, "b": 1})
        total = result.structured_content["total"]
    return (time.perf_counter() - started) / n


async def plan_calls(servers: McpServers, n: int) -> float:
    plan = [{"_tool": "add", "a": 0, "b": 1, "_outputPath": "†state.s0"}]
    plan += [{"_tool": "add", "a": f"†state.s{i - 1}.total", "b": 1,
              "_outputPath": f"†state.s{i}"} for i in range(1, n)]
    compiled = obelisk.compile_plan(plan, tools=servers.tools)
    started = time.perf_counter()
    result = await obelisk.run_async(compiled, activities=servers.activities, trace=False)
    took = (time.perf_counter() - started) / n
    assert not result.errors and obelisk.resolve(result.context, f"†state.s{n - 1}.total") == n
    return took


async def makespans(servers: McpServers) -> tuple[float, float, float]:
    fan = [{"_tool": "sleep", "ms": 50, "_outputPath": f"†state.w{i}"} for i in range(20)]
    # The join reads every result (one string parameter made of all twenty).
    reads = " && ".join(f"†state.w{i}.result" for i in range(20))
    join = {"_tool": "sleep", "ms": 50, "marker": reads, "_outputPath": "†state.j"}
    plan = obelisk.compile_plan([*fan, join], tools=servers.tools)
    assert plan.ok, plan.diagnostics
    started = time.perf_counter()
    result = await obelisk.run_async(plan, activities=servers.activities, trace=False)
    parallel = time.perf_counter() - started
    assert not result.errors, result.errors
    client = await servers._links[0].session()
    started = time.perf_counter()
    await asyncio.gather(*(client.call_tool("sleep", {"ms": 50}) for _ in range(20)))
    await client.call_tool("sleep", {"ms": 50})
    gathered = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(21):
        await client.call_tool("sleep", {"ms": 50})
    return parallel, gathered, time.perf_counter() - started


async def main(n: int, rounds: int) -> None:
    async with McpServers([stdio_spec(None)]) as servers:
        await sdk_calls(servers, 20)  # warm both paths
        await plan_calls(servers, 20)
        sdk, plan = [], []
        for _ in range(rounds):
            sdk.append(await sdk_calls(servers, n))
            plan.append(await plan_calls(servers, n))
        runs = [await makespans(servers) for _ in range(rounds)]
    parallel, gathered, serial = (min(r[i] for r in runs) for i in range(3))
    best_sdk, best_plan = min(sdk), min(plan)
    print(f"makespans: best of {rounds} rounds each")
    print(f"tools/call, {n} calls in a chain, best of {rounds} rounds:")
    print(f"  SDK Client.call_tool      {best_sdk * 1e3:8.3f} ms a call")
    print(f"  obelisk run_async plan    {best_plan * 1e3:8.3f} ms a call")
    print(f"  added by obelisk          {(best_plan - best_sdk) * 1e3:8.3f} ms a call "
          f"(target <= 1 ms)")
    print("20 x 50 ms in parallel, then a 50 ms join (critical path 100 ms):")
    print(f"  obelisk plan makespan     {parallel * 1e3:8.1f} ms = "
          f"{parallel / 0.1:.2f} x the critical path (target <= 1.5)")
    print(f"  the SDK, asyncio.gather   {gathered * 1e3:8.1f} ms = "
          f"{gathered / 0.1:.2f} x (the same calls with no plan: the floor here)")
    print(f"  one round trip at a time  {serial * 1e3:8.1f} ms = {serial / parallel:.1f} x "
          "the plan's")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.rounds))
