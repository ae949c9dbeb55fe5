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
    outcomes, trace), and the peak during the run (target: at most 3 KB per call);
  - the floor: the least the design can hold after that run, its messages themselves.
    The result is dropped, and the same messages (one per target the run wrote, the same
    kinds, paths, calls, instances and values, dated by the same clock) are built with
    plain ``pmap`` as the protocol shapes them: ``type``, ``kind``, ``_outputPath``,
    ``_outputMethod``, ``_call``, ``_instance`` when there is one, ``_date`` and ``data``
    (the value, ``pmap({"ok": True})``, nested in one-key pmaps along the target's path),
    held in one ``pvector`` as a context holds them. Strings and calls the plan already
    holds are shared, not copied (the call, the kind, the ``_outputPath`` when it is the
    call's own text), since nothing obliges a message to copy them. No obelisk code
    builds them. Built twice: with pmap's default layout (twice as many buckets as
    keys: a message spreads over about six bucket lists) and with one bucket per map
    (``pmap(fields, pre_size=1)``, the least a PMap can hold: the floor). Printed: both
    per call, "plan + floor" against the 3 KB target, and what obelisk holds beyond the
    floor (context indexes, outcomes, call templates).

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
from pyrsistent import PMap, PVector, pmap, pvector  # noqa: E402

from obelisk import compile_plan, gc_tuned, run_sync  # noqa: E402
from obelisk.interpreters.common import utc_now  # noqa: E402 - the runs' default clock


def noop(call: Any, tool: Any, context: Any) -> Any:
    """A no-op activity: every tool's result is one small object."""
    return {"ok": True}


ACTIVITIES = {"step": noop, "fan": noop, "join": noop}


def floor_message(node: Any, target: Any, pre_size: int) -> PMap[str, Any]:
    """The output message writing ``{"ok": True}`` to ``target``, built with plain pmap
    (``pre_size``: pmap's, 0 for its default layout)."""
    data: Any = pmap({"ok": True}, pre_size=pre_size)
    for segment in reversed(target.path):
        data = pmap({str(segment): data}, pre_size=pre_size)
    text = str(target)
    message = {"type": "data", "kind": target.kind,
               "_outputPath": node.output_text if text == node.output_text else text,
               "_outputMethod": node.method.value, "_call": node.call}
    if node.instance is not None:
        message["_instance"] = node.instance
    message["data"] = data
    message["_date"] = utc_now()
    return pmap(message, pre_size=pre_size)


def floor_of(writers: list[Any], pre_size: int) -> PVector[Any]:
    """The messages of ``writers`` (nodes that ran and wrote their first alternative), in
    a persistent vector."""
    return pvector(floor_message(node, target, pre_size) for node in writers
                   for target in node.output.alternatives[0].targets)


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
    with gc_tuned(n, freeze=True):  # as the command line tunes the collector
        compiled = compile_plan(calls, tools=TOOLS)
    after_compile, compile_peak = held()
    assert not [d for d in compiled.diagnostics if d.is_error]
    plan_bytes = after_compile - base
    print(f"compile {n:,} calls: {plan_bytes / n:7.0f} bytes per compiled call held, "
          f"peak {(compile_peak - base) / n:7.0f} bytes per call  (target <= 2048 held)")
    if "--compile-only" in sys.argv:
        return
    tracemalloc.reset_peak()
    with gc_tuned(n, freeze=True):
        result = run_sync(compiled, activities=ACTIVITIES)
    after_run, run_peak = held()
    assert result.status.value == "completed", result.status
    print(f"after the run of {n:,} calls: {(after_run - base) / n:7.0f} bytes per call held "
          f"(plan and result; the run added {(after_run - after_compile) / n:.0f}), "
          f"peak {(run_peak - base) / n:7.0f} bytes per call  (target <= 3072 held)")
    # The nodes that wrote (the workload never fails a call or routes one elsewhere, so
    # each wrote its first alternative), taken before the result is dropped.
    writers = [compiled.nodes[i] for i, c in enumerate(result.calls)
               if c.outcome == "executed" and compiled.nodes[i].output is not None]
    count = len(result.context)
    del result
    floors = {}
    for pre_size in (0, 1):
        before_floor, _ = held()
        floor = floor_of(writers, pre_size)
        after_floor, _ = held()
        assert len(floor) == count, (len(floor), count)
        floors[pre_size] = after_floor - before_floor
        del floor
    floor_bytes = floors[1]
    print(f"the floor, the run's {count:,} messages built with plain pmap, one bucket a map: "
          f"{floor_bytes / n:7.0f} bytes per call (pmap's default layout: "
          f"{floors[0] / n:.0f}); plan + floor {(plan_bytes + floor_bytes) / n:.0f}  "
          f"(target <= 3072); obelisk holds {(after_run - after_compile - floor_bytes) / n:.0f}"
          f" per call beyond it")
    tracemalloc.stop()


if __name__ == "__main__":
    main()
