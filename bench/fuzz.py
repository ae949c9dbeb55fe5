"""`obelisk fuzz`'s catch rate: does the default budget find simple defects, and how small
is the case it prints?

For each seeded defect of tests/kit/defects (an adapter that answers like obelisk but for
one area), fuzz one op with seeds 0 to 4 at the default budget (300 examples), as
`obelisk fuzz --against DEFECT --ops OP --seed S` does, and print per seed: the example
at which the difference was found (`-` when none was), and the minimal case's messages and
calls, and whether it still holds noise (`_call` of a message, `_outputMethod: set`).
Last, per defect: found in N of 5 seeds (target: at least 4), every case within 2
messages and 2 calls (target), no noise (target).

Run: python bench/fuzz.py [--seeds N] [--examples N] [DEFECT...]
"""

from __future__ import annotations

import argparse
import pathlib
import shlex
import sys
import time
from typing import Any

from obelisk.kit.client import AdapterClient
from obelisk.kit.fuzz import DEFAULT_EXAMPLES, search

DEFECTS_DIR = pathlib.Path(__file__).resolve().parent.parent / "tests" / "kit" / "defects"
#: (defect adapter, the op that reaches its area).
DEFECTS = [
    ("shallow_merge", "resolve"),
    ("null_is_present", "resolve"),
    ("instance_under_global", "resolve"),
    ("last_is_first", "resolve"),
    ("last_is_first", "run"),
    ("concat_as_push", "resolve"),
    ("or_does_not_wait", "run"),
    ("instance_shadowing", "resolve"),
    ("no_dangling_reference", "check"),
    ("error_to_value_branch", "run"),
]


def noise(vector: dict[str, Any]) -> list[str]:
    """What a minimal case holds that no difference needs: a message's ``_call``, an
    ``_outputMethod`` of ``set`` (the default)."""
    found = []
    for item in [*vector.get("context", []), *vector.get("plan", [])]:
        if isinstance(item, dict):
            if "_call" in item:
                found.append("_call")
            if item.get("_outputMethod") == "set":
                found.append("set")
    return found


def measure(name: str, op: str, seeds: int, examples: int) -> list[dict[str, Any]]:
    command = " ".join(map(shlex.quote, [sys.executable, str(DEFECTS_DIR / f"{name}.py")]))
    rows = []
    with AdapterClient(command) as client:
        client.start()
        for seed in range(seeds):
            start = time.perf_counter()
            diff = search(client, op, examples, seed)
            took = time.perf_counter() - start
            if diff is None:
                rows.append({"seed": seed, "found": None, "seconds": took})
                continue
            vector = diff.vector()
            rows.append({"seed": seed, "found": diff.examples, "seconds": took,
                         "messages": len(vector.get("context", [])),
                         "calls": len(vector.get("plan", [])), "noise": noise(vector)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES)
    parser.add_argument("defects", nargs="*", help="defect names (default: all)")
    args = parser.parse_args()
    chosen = [(n, o) for n, o in DEFECTS if not args.defects or n in args.defects]
    print(f"obelisk fuzz, {args.examples} examples per op, seeds 0-{args.seeds - 1}")
    print(f"{'defect':24} {'op':8} " + " ".join(f"{'seed ' + str(s):>16}" for s in
                                                 range(args.seeds)) + "  verdict")
    for name, op in chosen:
        rows = measure(name, op, args.seeds, args.examples)
        cells = []
        for row in rows:
            if row["found"] is None:
                cells.append(f"{'-':>16}")
            else:
                mark = "!" if row["noise"] else ""
                cells.append(f"{row['found']:>5} {row['messages']}m {row['calls']}c "
                             f"{row['seconds']:4.1f}s{mark}".rjust(16))
        found = [r for r in rows if r["found"] is not None]
        small = all(r["messages"] <= 2 and r["calls"] <= 2 for r in found)
        clean = not any(r["noise"] for r in found)
        verdict = (f"{len(found)}/{len(rows)} found, "
                   f"{'all' if small else 'NOT all'} <= 2m 2c, {'clean' if clean else 'NOISE'}")
        print(f"{name:24} {op:8} " + " ".join(cells) + "  " + verdict, flush=True)
    print("cell: example found at, messages (m) and calls (c) of the minimal case, seconds "
          "(search and shrink); ! = noise left (_call, _outputMethod set)")


if __name__ == "__main__":
    main()
