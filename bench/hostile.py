"""Hostile-input figures for the compiler (issue 14, items 3 and 4), printed in one run.

(a) Instances: compile time of a 2-call plan mapped over 10,000 instances (20,000 nodes)
    against a 20,000-call plan without instances of the same shape (10,000 writer/reader
    pairs on their own paths). Target: ratio <= 2, i.e. compiling is linear in instances.
    Also printed, for the run side: a dry run (with mocks) of the 2-call plan at 1,000
    to 20,000 instances (the interpreters are not part of the target; it is reported).
(b) A dense plan: 1,000 calls writing †state.a and 1,000 calls reading it. Time to
    validate it (compile and every check) and its peak memory, measured in a fresh
    subprocess: the time and the process's peak RSS untraced, then the peak allocated by
    the compile under tracemalloc in another. Targets: < 2 s and < 200 MB.
(c) Plans too dense to order, refused: calls that each read and write †state.a (a loop
    of n x (n - 1) edges), and readers that each read their own key under a path
    thousands of calls write, as files of about 444 KB and 600 KB. Time to compile (and
    refuse with too-dense) and the peak RSS, each in a fresh subprocess. Target: < 1 s
    each (the edges are counted before any is linked).

Run: python bench/hostile.py [--quick]   (--quick: 2,000 instances; skips the run side)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from obelisk import compile_plan


def instance_context(n: int) -> list[dict[str, Any]]:
    """n data messages, one per instance id."""
    return [{"type": "data", "_instance": f"i{k}", "x": k} for k in range(n)]


TWO_CALLS: list[dict[str, Any]] = [
    {"_tool": "a", "x": "†data.x", "_outputPath": "†state.a"},
    {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
]

MOCKS: dict[str, Any] = {"a": {"return": 1}, "b": {"return": 2}}


def flat_plan(pairs: int) -> list[dict[str, Any]]:
    """``pairs`` writer/reader pairs, each on its own path: 2 x pairs calls."""
    calls: list[dict[str, Any]] = []
    for k in range(pairs):
        calls.append({"_tool": "a", "x": "literal", "_outputPath": f"†state.a{k}"})
        calls.append({"_tool": "b", "x": f"†state.a{k}", "_outputPath": f"†state.b{k}"})
    return calls


def dense_plan(writers: int, readers: int) -> list[dict[str, Any]]:
    """``writers`` calls writing †state.a, then ``readers`` calls reading it."""
    return ([{"_tool": "w", "_outputPath": "†state.a"} for _ in range(writers)]
            + [{"_tool": "r", "x": "†state.a"} for _ in range(readers)])


def looping_plan(n: int) -> list[dict[str, Any]]:
    """``n`` calls that each read and write †state.a: every pair depends both ways."""
    return [{"_tool": "m", "x": "†state.a", "_outputPath": "†state.a"} for _ in range(n)]


def keyed_plan(n: int) -> list[dict[str, Any]]:
    """``n`` writers of †state.a, ``n`` writers of a key under it each, and ``n`` readers
    of two keys each: every reader reads its own groups of about ``n`` writers."""
    return ([{"_tool": "w", "_outputPath": "†state.a"} for _ in range(n)]
            + [{"_tool": "w", "_outputPath": f"†state.a.k{i}"} for i in range(n)]
            + [{"_tool": "r", "x": f"†state.a.k{i}", "y": f"†state.a.k{i + 1}"}
               for i in range(n)])


def sized(build: Any, target: int) -> tuple[int, list[dict[str, Any]]]:
    """The smallest ``build(n)`` whose JSON text is at least ``target`` bytes."""
    def size(n: int) -> int:
        return len(json.dumps(build(n), ensure_ascii=False).encode())

    low, high = 1, 2
    while size(high) < target:
        low, high = high, high * 2
    while low < high:  # the smallest n of at least target bytes
        middle = (low + high) // 2
        low, high = (middle + 1, high) if size(middle) < target else (low, middle)
    return low, build(low)


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


DENSE_CHILD = """
import json, resource, sys, time, tracemalloc
sys.path[:0] = {path!r}
from bench import hostile
from obelisk import compile_plan
calls = {calls}
traced = {traced!r}
if traced:
    tracemalloc.start()
start = time.perf_counter()
plan = compile_plan(calls)
seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1] if traced else 0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
codes = {{}}
for d in plan.diagnostics:
    codes[str(d.code)] = codes.get(str(d.code), 0) + 1
print(json.dumps({{"seconds": seconds, "peak": peak, "rss": rss, "nodes": len(plan.nodes),
                  "edges": len(plan.edges), "codes": codes}}))
"""


def dense_figures(traced: bool, calls: str = "hostile.dense_plan(1000, 1000)") -> dict[str, Any]:
    """Compile a dense plan (``calls``, an expression) in a fresh interpreter and return
    its figures (time is only meaningful untraced: tracemalloc slows every allocation)."""
    root = __file__.rsplit("/bench/", 1)[0]
    child = DENSE_CHILD.format(path=[root], traced=traced, calls=calls)
    out = subprocess.run([sys.executable, "-c", child],
                         capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(out.stdout)
    return figures


def main() -> None:
    quick = "--quick" in sys.argv
    # The dense figures first: a child forked from a big parent inherits its peak RSS.
    dense = dense_figures(traced=False)
    traced = dense_figures(traced=True)
    print(f"(b) dense plan, 1,000 writers and 1,000 readers of †state.a: "
          f"{dense['nodes']:,} nodes, {dense['edges']:,} edges")
    print(f"    validate {dense['seconds']:.2f} s (target < 2); peak memory allocated "
          f"{traced['peak'] / 1e6:.1f} MB by tracemalloc (target < 200), peak RSS of the "
          f"whole process {dense['rss'] / 1e6:.1f} MB; diagnostics {dense['codes']}")
    for name in ("looping_plan", "keyed_plan"):
        for target in (444_000, 600_000):
            n, calls = sized(getattr(sys.modules[__name__], name), target)
            size = len(json.dumps(calls, ensure_ascii=False).encode())
            refused = dense_figures(traced=False, calls=f"hostile.sized(hostile.{name}, "
                                                        f"{target})[1]")
            print(f"(c) {name}({n:,}), {size / 1000:.0f} KB, {refused['nodes']:,} nodes: "
                  f"refused in {refused['seconds']:.2f} s (target < 1), peak RSS "
                  f"{refused['rss'] / 1e6:.0f} MB; diagnostics {refused['codes']}")
    n = 2_000 if quick else 10_000
    compile_plan(TWO_CALLS, context=instance_context(10), instances=True)  # warm up
    t_inst, inst = timed(lambda: compile_plan(TWO_CALLS, context=instance_context(n),
                                              instances=True))
    t_flat, flat = timed(lambda: compile_plan(flat_plan(n)))
    print(f"(a) 2-call plan x {n:,} instances: {len(inst.nodes):,} nodes, "
          f"{len(inst.edges):,} edges, {t_inst:.2f} s")
    print(f"    {2 * n:,}-call plan, no instances: {len(flat.nodes):,} nodes, "
          f"{len(flat.edges):,} edges, {t_flat:.2f} s")
    print(f"    ratio {t_inst / t_flat:.2f} (target <= 2)")
    if not quick:
        from obelisk import dry_run

        for m in (1_000, 2_000, 5_000, 10_000, 20_000):
            plan = compile_plan(TWO_CALLS, context=instance_context(m), instances=True)
            t_run, _ = timed(lambda plan=plan: dry_run(plan, mocks=MOCKS))
            print(f"    run side: dry run of the 2-call plan x {m:,} instances: {t_run:.2f} s")


if __name__ == "__main__":
    main()
