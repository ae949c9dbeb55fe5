"""obelisk against raw asyncio in instructions per node: the noise-free cross-check of
bench/peers.py's "obelisk / raw asyncio <= 6" (issue 13).

CPU time on a shared machine moves with whatever else runs on it (the same script gives
ratios 15% apart from one minute to the next). Instructions do not: valgrind's callgrind
counts the instructions a process executes, the same for the same program and inputs
whatever the machine is doing. This script counts, for the workloads of bench/peers.py
(fan-out and chain, 1,000 and 10,000 nodes):

  - obelisk asyncio: ``run_async`` of a freshly compiled plan (one no run has touched,
    as in peers.py), in a process that has already compiled and run a plan of the same
    shape once (imports and memos made);
  - raw asyncio: a task per node, in a process that has already run it once;

each as the instructions of a child process that does the measured run minus those of
the same child that stops before it, divided by the nodes. Instructions are not time
(a cache miss costs more than an add), so this complements peers.py, which measures
time; it does not replace it.

It also counts the instructions a call of compiling bench/compile.py's 10,000-call plan
takes (no target: the compile figure is in time), to tell code changes apart on machines
whose speed differs.

Needs valgrind (``apt-get install valgrind``). Each count runs a child under callgrind,
about 50 times slower than natively: the whole script takes several minutes.

``--pyrsistent public`` counts the same with the kernel room (``obelisk.core.pmaps``)
switched to pyrsistent's public API: what its bucket reads save.

``--baseline PATH`` counts ``run_async`` per node against the obelisk checked out at PATH
(its source tree first on the children's ``PYTHONPATH``) instead of raw asyncio: what a
change costs a run nobody watches (issue 30: no tracer provider and no ``on_event`` must
stay within 2%).

Run: python bench/instructions.py [--sizes 1000,10000] [--no-compile] [--pyrsistent public]
     [--baseline PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import re
import shutil
import subprocess
import sys

BENCH = pathlib.Path(__file__).resolve().parent
ENGINES = ("obelisk asyncio", "raw asyncio")


def child(engine: str, kind: str, n: int, measured: bool) -> None:
    """The child's work: the warm-up, then (when ``measured``) the run that is counted."""
    if os.environ.get("OBELISK_PYRSISTENT") == "public":  # before obelisk is imported
        from obelisk.core import pmaps

        pmaps.use_public_api()
    sys.path.insert(0, str(BENCH))
    import peers

    if engine == "obelisk compile":  # bench/compile.py's plan, its parser caches cleared
        import compile as compiling

        calls = compiling.plan_of(n)
        compiling.timed(compiling.plan_of(1_000))
        if measured:
            compiling.timed(calls)
        return
    if engine == "obelisk asyncio":
        import obelisk

        print(f"obelisk from {obelisk.__file__}", file=sys.stderr)
        warm, fresh = peers.obelisk_compile(kind, n), peers.obelisk_compile(kind, n)
        assert asyncio.run(peers.obelisk_async(warm)) == peers.expected(kind, n)
        if measured:
            assert asyncio.run(peers.obelisk_async(fresh)) == peers.expected(kind, n)
    else:
        assert asyncio.run(peers.raw_asyncio(kind, n)) == peers.expected(kind, n)
        if measured:
            assert asyncio.run(peers.raw_asyncio(kind, n)) == peers.expected(kind, n)


def count(engine: str, kind: str, n: int, measured: bool, baseline: str | None = None) -> int:
    """Instructions the child executes, counted by callgrind (with the obelisk at
    ``baseline`` when given)."""
    env = dict(os.environ, PYTHONHASHSEED="0")  # the same hashes, the same work
    if baseline is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [baseline, env.get("PYTHONPATH")]))
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--child", engine, kind, str(n), "1" if measured else "0"],
        capture_output=True, text=True, env=env, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_node(engine: str, kind: str, n: int, baseline: str | None = None) -> float:
    """Instructions per node of the measured run."""
    return (count(engine, kind, n, True, baseline)
            - count(engine, kind, n, False, baseline)) / n


def against_baseline(baseline: str, sizes: list[int]) -> None:
    """``run_async`` per node, this checkout against the one at ``baseline``."""
    print(f"  run_async, nobody watching: this checkout against {baseline}")
    for kind in ("fan-out", "chain"):
        for n in sizes:
            ours, base = per_node(ENGINES[0], kind, n), per_node(ENGINES[0], kind, n, baseline)
            change = ours / base - 1
            mark = "met" if abs(change) <= 0.02 else "NOT MET"
            print(f"  {kind} {n:,}: {ours:,.0f} against {base:,.0f} instructions a node: "
                  f"{change:+.2%} (target within 2%: {mark})", flush=True)


def main() -> None:
    """Parse the options, count, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1_000, 10_000], help="comma-separated node counts")
    parser.add_argument("--no-compile", action="store_true",
                        help="leave out the compile row (about two minutes)")
    parser.add_argument("--pyrsistent", choices=["fast", "public"], default="fast",
                        help="public: pyrsistent's public API instead of the bucket reads")
    parser.add_argument("--baseline", metavar="PATH",
                        help="count run_async against the obelisk source tree at PATH")
    parser.add_argument("--child", nargs=4, metavar=("ENGINE", "KIND", "N", "MEASURED"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        engine, kind, n, measured = args.child
        child(engine, kind, int(n), measured == "1")
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed here (apt-get install valgrind)")
    if args.pyrsistent == "public":  # the children read it (count passes the environment)
        os.environ["OBELISK_PYRSISTENT"] = "public"
    print(f"Python {sys.version.split()[0]}; instructions per node (callgrind), "
          f"PYTHONHASHSEED=0, pyrsistent: {args.pyrsistent}")
    if args.baseline:
        against_baseline(args.baseline, args.sizes)
        return
    for kind in ("fan-out", "chain"):
        for n in args.sizes:
            ours, raw = per_node(ENGINES[0], kind, n), per_node(ENGINES[1], kind, n)
            mark = "met" if ours / raw <= 6 else "NOT MET"
            print(f"  {kind} {n:,}: obelisk asyncio {ours:,.0f}, raw asyncio {raw:,.0f}: "
                  f"{ours / raw:.2f} x (target <= 6: {mark})", flush=True)
    if not args.no_compile:
        # The compile figure is in time (bench/compile.py); its instructions tell code
        # changes apart on any machine.
        print(f"  compile, 10,000 calls (bench/compile.py's plan): "
              f"{per_node('obelisk compile', 'plan', 10_000):,.0f} instructions a call",
              flush=True)


if __name__ == "__main__":
    main()
