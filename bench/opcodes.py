"""Where a run's work per node goes, by function: bytecode instructions and Python calls.

bench/instructions.py counts a run's machine instructions, which do not depend on the
machine but cannot be told apart by Python function (callgrind sees the interpreter's C
functions only). This script counts, for ``run_async`` of a freshly compiled plan of
bench/peers.py's workloads (as peers.py runs it: one no run has touched), the bytecode
instructions each Python function executes and how often it is called, per node, with
``sys.settrace``'s opcode events. The counts are exact and the same from one run to the
next (the tracer slows the run about fifty times, but does not change what runs), except
for two functions whose path depends on the process: the default clock
(``common.py:utc_now``, which formats a new text only when the millisecond changes, more
often under the tracer) and ``collector.py:gc_keep`` (which freezes every thousand calls,
counted across runs). The table says which functions a cut must shorten, and by how much
a cut shortened them.

A bytecode instruction is not a unit of time (one that calls into C, ``BUILD_MAP`` or a
pyrsistent method, costs many plain ones), so compare functions' shares, not absolute
costs, and check a cut with instructions.py and peers.py.

Run: python bench/opcodes.py [--kind chain|fan-out] [--nodes 1000] [--top 40]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import pathlib
import sys
from types import FrameType
from typing import Any

BENCH = pathlib.Path(__file__).resolve().parent


def count(kind: str, n: int) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """Bytecode instructions and calls by function (``file:function``) over one
    ``run_async`` of a fresh ``kind`` plan of ``n`` nodes, after two warm-up runs."""
    sys.path.insert(0, str(BENCH))
    import peers

    warm = max(n, 128)
    for _ in range(2):  # imports made, memos filled
        assert asyncio.run(peers.obelisk_async(peers.obelisk_compile(kind, warm))) \
            == peers.expected(kind, warm)
    plan = peers.obelisk_compile(kind, n)
    ops: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        code = frame.f_code
        key = f"{pathlib.Path(code.co_filename).name}:{code.co_name}"
        if event == "opcode":
            ops[key] += 1
        elif event == "call":
            calls[key] += 1
        return tracer

    async def traced() -> Any:
        sys.settrace(tracer)
        try:
            return await peers.obelisk_async(plan)
        finally:
            sys.settrace(None)

    assert asyncio.run(traced()) == peers.expected(kind, n)
    return ops, calls


def main() -> None:
    """Parse the options, count, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kind", choices=("chain", "fan-out"), default="chain")
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--top", type=int, default=40, help="functions shown")
    args = parser.parse_args()
    ops, calls = count(args.kind, args.nodes)
    n = args.nodes
    total = sum(ops.values())
    print(f"run_async, {args.kind} of {n:,} nodes, a fresh plan: {total / n:,.0f} bytecode "
          f"instructions and {sum(calls.values()) / n:.1f} Python calls a node")
    print(f"{'instr/node':>10} {'share':>6} {'calls/node':>10}  function")
    for key, value in ops.most_common(args.top):
        print(f"{value / n:10.1f} {value / total:6.1%} {calls[key] / n:10.2f}  {key}")


if __name__ == "__main__":
    main()
