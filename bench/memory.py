"""Memory per compiled call, and per call after a run (issue: compile ten times faster,
compact compiled plans).

Prints, measured in one run with tracemalloc, on the plans of bench/compile.py (the same
generator: chains, fan-out/fan-in, branches, explicit instances, schema-checked tools):
  - compile: bytes held by the CompiledPlan per call (everything compile_plan allocated
    and did not free, the plan being alive; the input list of calls is made before
    tracing starts, so it is not counted), and the peak while compiling
    (target: at most 2 KB per compiled call at 100,000 calls);
  - after the run: the compiled plan run with no-op activities under run_sync, bytes
    held per call once the run is over (the plan plus the RunResult: final context,
    outcomes, trace), and the peak during the run (target: at most 3 KB per call).

Run: python bench/memory.py [--quick] [--compile-only]   (--quick: 20,000 calls)
tracemalloc slows everything down several times: the figures are bytes, not time.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile import TOOLS, plan_of  # noqa: E402 - the generator of bench/compile.py

from obelisk import compile_plan, run_sync  # noqa: E402


def noop(call: Any, tool: Any, context: Any) -> Any:
    """A no-op activity: every tool's result is one small object."""
    return {"ok": True}


ACTIVITIES = {"step": noop, "fan": noop, "join": noop}


def held() -> tuple[int, int]:
    """(bytes allocated now, peak) since tracing started, after a full collection."""
    gc.collect()
    return tracemalloc.get_traced_memory()


def main() -> None:
    n = 20_000 if "--quick" in sys.argv else 100_000
    calls = plan_of(n)
    compile_plan(plan_of(1_000), tools=TOOLS)  # grammar, validators and caches made once
    gc.collect()
    tracemalloc.start()
    base, _ = held()
    tracemalloc.reset_peak()
    compiled = compile_plan(calls, tools=TOOLS)
    after_compile, compile_peak = held()
    assert not [d for d in compiled.diagnostics if d.is_error]
    plan_bytes = after_compile - base
    print(f"compile {n:,} calls: {plan_bytes / n:7.0f} bytes per compiled call held, "
          f"peak {(compile_peak - base) / n:7.0f} bytes per call  (target <= 2048 held)")
    if "--compile-only" in sys.argv:
        return
    tracemalloc.reset_peak()
    result = run_sync(compiled, activities=ACTIVITIES)
    after_run, run_peak = held()
    assert result.status.value == "completed", result.status
    print(f"after the run of {n:,} calls: {(after_run - base) / n:7.0f} bytes per call held "
          f"(plan and result; the run added {(after_run - after_compile) / n:.0f}), "
          f"peak {(run_peak - base) / n:7.0f} bytes per call  (target <= 3072 held)")
    tracemalloc.stop()


if __name__ == "__main__":
    main()
