"""Compile time as plans grow (issue: the plan compiler's figures).

Prints, measured in one run:
  - compile time of generated plans of 10,000 and 100,000 calls, in µs per call
    (target: at most 40 µs per call at both sizes), and their ratio
    (target: time(100k) / time(10k) <= 15, i.e. near-linear);
  - with ``--baseline PATH`` (a checkout of older code), the same figures for that code,
    measured just before in a child process on the same plans, and the speedups.

The plans repeat one block of 100 calls: a 40-call chain, a fan-out of 40 workers from one
source with a fan-in join, a branching call with one consumer per alternative, calls of
three kinds (state, data, memo), calls with explicit instances, and tools with JSON
Schemas (so literal parameters are schema-checked). Every block is valid: the plans
compile without errors.

Run: python bench/compile.py [--quick] [--baseline PATH]   (--quick: 2,000 and 20,000 calls)
The machine's other work changes absolute times a lot; compare figures of one run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from obelisk import compile_plan
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


def timed(calls: list[dict[str, Any]]) -> float:
    # Cold parser caches for every measurement, so no size is helped by an earlier one.
    for name in ("_plain", "_parse_input", "_parse_output", "_parse_reference"):
        cached = getattr(parse, name, None)  # older code has fewer
        if cached is not None:
            cached.cache_clear()
    start = time.perf_counter()
    compiled = compile_plan(calls, tools=TOOLS)
    elapsed = time.perf_counter() - start
    errors = [d for d in compiled.diagnostics if d.is_error]
    assert not errors, errors[:3]
    return elapsed


def sizes() -> tuple[int, int]:
    return (2_000, 20_000) if "--quick" in sys.argv else (10_000, 100_000)


def figures() -> tuple[float, float]:
    """Seconds to compile the small and the big plan (best of two for the small one)."""
    small_n, big_n = sizes()
    small_plan, big_plan = plan_of(small_n), plan_of(big_n)
    timed(plan_of(1_000))  # warm caches (grammar, validators)
    small = min(timed(small_plan) for _ in range(2))
    big = timed(big_plan)
    return small, big


def baseline(path: str) -> tuple[float, float]:
    """:func:`figures` for the code at ``path``, measured in a child process."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(path)}
    argv = [sys.executable, os.path.abspath(__file__), "--figures", *(a for a in sys.argv[1:] if a == "--quick")]
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True,
                         cwd=os.path.abspath(path)).stdout
    small, big = json.loads(out.strip().splitlines()[-1])
    return small, big


def report(label: str, small: float, big: float) -> None:
    small_n, big_n = sizes()
    print(f"{label}compile {small_n:>7,} calls: {small:7.2f} s  ({small / small_n * 1e6:6.1f} us/call)"
          "  (target <= 40 us/call)")
    print(f"{label}compile {big_n:>7,} calls: {big:7.2f} s  ({big / big_n * 1e6:6.1f} us/call)"
          "  (target <= 40 us/call)")
    print(f"{label}ratio {big_n // 1000}k/{small_n // 1000}k: {big / small:5.2f}  (target <= 15)")


def main() -> None:
    if "--figures" in sys.argv:  # the child process of --baseline
        print(json.dumps(figures()))
        return
    before = None
    if "--baseline" in sys.argv:
        before = baseline(sys.argv[sys.argv.index("--baseline") + 1])
        report("before: ", *before)
    small, big = figures()
    report("" if before is None else "after:  ", small, big)
    if before is not None:
        small_n, big_n = sizes()
        print(f"speedup at {small_n:,} calls: {before[0] / small:5.2f}x, "
              f"at {big_n:,} calls: {before[1] / big:5.2f}x")


if __name__ == "__main__":
    main()
