"""Compile time as plans grow (issue: the plan compiler's figures).

Prints, measured in one run:
  - compile time of generated plans of 10,000 and 100,000 calls, in µs per call
    (target: at most 40 µs per call at both sizes), and their ratio
    (target: time(100k) / time(10k) <= 15, i.e. near-linear);
  - with ``--baseline PATH`` (a checkout of older code), the same figures for that code
    on the same plans, and the speedups (old and new code measured alternately).

The plans repeat one block of 100 calls: a 40-call chain, a fan-out of 40 workers from one
source with a fan-in join, a branching call with one consumer per alternative, calls of
three kinds (state, data, memo), calls with explicit instances, and tools with JSON
Schemas (so literal parameters are schema-checked). Every block is valid: the plans
compile without errors.

Run: python bench/compile.py [--quick] [--baseline PATH [--rounds N]]
(--quick: 2,000 and 20,000 calls; --rounds: old and new code alternate N times, each in a
child process, and the best figures of each are printed)
The machine's other work changes absolute times a lot; compare figures of one run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from obelisk import compile_plan, gc_tuned
from obelisk.compiler import parse

TOOLS = [
    {"type": "object", "properties": {"_tool": {"const": "step"}, "x": {}, "n": {"type": "integer"}},
     "required": ["x"]},
    {"type": "object", "properties": {"_tool": {"const": "fan"}, "x": {}},
     "_output": {"type": "object"}},
    {"type": "object", "properties": {"_tool": {"const": "join"}, "items": {"type": "object"}}},
]


def block(b: int) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    chain = f"c{b}"
    # A chain of 40: each call reads the previous one's output.
    calls.append({"_tool": "step", "x": "literal", "n": b, "_outputPath": f"†state.{chain}.s0"})
    for i in range(1, 40):
        calls.append({"_tool": "step", "x": f"†state.{chain}.s{i - 1}", "n": i,
                      "_outputPath": f"†state.{chain}.s{i}"})
    # A fan-out of 40 workers from one source, then a fan-in join over all their outputs.
    calls.append({"_tool": "fan", "x": f"†state.{chain}.s39", "_outputPath": f"†data.f{b}.src"})
    for j in range(40):
        calls.append({"_tool": "fan", "x": f"†data.f{b}.src",
                      "_outputPath": f"†data.f{b}.out.w{j}"})
    calls.append({"_tool": "join", "items": f"†data.f{b}.out", "_outputPath": f"†memo.j{b}"})
    # A branch with one consumer per alternative (exclusive: no race between them).
    calls.append({"_tool": "step", "x": f"†memo.j{b}",
                  "_outputPath": f"†state.b{b}.ok || †state.b{b}.err"})
    calls.append({"_tool": "step", "x": f"†state.b{b}.ok", "_outputPath": f"†memo.r{b}"})
    calls.append({"_tool": "step", "x": f"†state.b{b}.err", "_outputPath": f"†memo.r{b}"})
    # Calls with explicit instances, each reading global data and writing its own.
    for k in range(5):
        calls.append({"_tool": "step", "x": f"†memo.j{b}", "_instance": f"i{k}",
                      "_outputPath": f"†state.inst{b}"})
    # Pad to 100 with independent calls writing their own paths.
    while len(calls) < 100:
        calls.append({"_tool": "step", "x": "pad", "_outputPath": f"†data.p{b}.n{len(calls)}"})
    return calls


def plan_of(size: int) -> list[dict[str, Any]]:
    return [call for b in range(size // 100) for call in block(b)]


def timed(calls: list[dict[str, Any]]) -> tuple[float, float]:
    """(wall-clock, CPU) seconds to compile ``calls``, with cold parser caches, so no size
    is helped by an earlier one. CPU time is less sensitive to other processes."""
    for name in ("_plain", "_parse_input", "_parse_output", "_parse_reference"):
        cached = getattr(parse, name, None)  # older code has fewer
        if cached is not None:
            cached.cache_clear()
    start, cpu = time.perf_counter(), time.process_time()
    # The collector tuned as the command line tunes it (older code tuned it itself).
    with gc_tuned(len(calls), freeze=True):
        compiled = compile_plan(calls, tools=TOOLS)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    errors = [d for d in compiled.diagnostics if d.is_error]
    assert not errors, errors[:3]
    return elapsed, cpu


def sizes() -> tuple[int, int]:
    return (2_000, 20_000) if "--quick" in sys.argv else (10_000, 100_000)


#: (wall, CPU) seconds for the small plan, then for the big one.
Figures = tuple[tuple[float, float], tuple[float, float]]


def figures() -> Figures:
    """Seconds to compile the small and the big plan (best of two for the small one)."""
    small_n, big_n = sizes()
    small_plan, big_plan = plan_of(small_n), plan_of(big_n)
    timed(plan_of(1_000))  # warm caches (grammar, validators)
    runs = [timed(small_plan) for _ in range(2)]
    return (min(r[0] for r in runs), min(r[1] for r in runs)), timed(big_plan)


def child(path: str | None) -> Figures:
    """:func:`figures` measured in a child process: for the code at ``path`` (first on
    its PYTHONPATH), or for this checkout when ``path`` is None."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.path.abspath(path)
    argv = [sys.executable, os.path.abspath(__file__), "--figures",
            *(a for a in sys.argv[1:] if a == "--quick")]
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True,
                         cwd=os.path.abspath(path) if path is not None else None).stdout
    small, big = json.loads(out.strip().splitlines()[-1])
    return (small[0], small[1]), (big[0], big[1])


def best(runs: list[Figures]) -> Figures:
    return ((min(r[0][0] for r in runs), min(r[0][1] for r in runs)),
            (min(r[1][0] for r in runs), min(r[1][1] for r in runs)))


def report(label: str, found: Figures) -> None:
    (small, small_cpu), (big, big_cpu) = found
    for n, wall, cpu in zip(sizes(), (small, big), (small_cpu, big_cpu), strict=True):
        print(f"{label}compile {n:>7,} calls: {wall:7.2f} s  ({wall / n * 1e6:6.1f} us/call; "
              f"CPU {cpu / n * 1e6:6.1f} us/call)  (target <= 40 us/call)")
    small_n, big_n = sizes()
    print(f"{label}ratio {big_n // 1000}k/{small_n // 1000}k: {big / small:5.2f}  (target <= 15)")


def main() -> None:
    if "--figures" in sys.argv:  # the child process of --baseline
        print(json.dumps(figures()))
        return
    if "--baseline" not in sys.argv:
        report("", figures())
        return
    # Old and new code alternate, each in a child process, and the best of the rounds is
    # kept: other work on the machine then weighs on both alike.
    path = sys.argv[sys.argv.index("--baseline") + 1]
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 1
    olds, news = [], []
    for _ in range(rounds):
        olds.append(child(path))
        news.append(child(None))
    before, after = best(olds), best(news)
    report("before: ", before)
    report("after:  ", after)
    small_n, big_n = sizes()
    for what, k in (("wall", 0), ("CPU", 1)):
        print(f"speedup ({what}) at {small_n:,} calls: {before[0][k] / after[0][k]:5.2f}x, "
              f"at {big_n:,} calls: {before[1][k] / after[1][k]:5.2f}x")


if __name__ == "__main__":
    main()
