"""The implementers' kit's figures, measured in one run.

Prints:
  1. the whole bundled pack judged through the adapter protocol,
     `obelisk conformance -q --against 'obelisk adapter'`, against the in-process
     `obelisk conformance -q` (both as commands, start-up included; median of 5 runs)
                                                                  (target ratio <= 3);
  2. `obelisk fuzz` against `obelisk adapter`: examples per second for resolve
     (target >= 50) and run (target >= 10); apart, per example, the time in hypothesis
     (drawing the case) and the time answering (obelisk in process plus the adapter's
     round trip), measured in the same runs.

Run: python bench/kit.py
"""

from __future__ import annotations

import pathlib
import statistics
import subprocess
import sys
import time
from typing import Any

from obelisk.kit import fuzz
from obelisk.kit.client import AdapterClient

OBELISK = str(pathlib.Path(sys.executable).parent / "obelisk")
ADAPTER = f"{OBELISK} adapter"
RUNS = 5
EXAMPLES = 300


def command_time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def conformance_ratio() -> None:
    local = [command_time([OBELISK, "conformance", "-q"]) for _ in range(RUNS)]
    remote = [command_time([OBELISK, "conformance", "-q", "--against", ADAPTER])
              for _ in range(RUNS)]
    here, there = statistics.median(local), statistics.median(remote)
    print(f"1. the pack in process: {here:.3f} s; --against 'obelisk adapter': {there:.3f} s; "
          f"ratio {there / here:.2f} (target <= 3)")


def fuzz_rates() -> None:
    targets = {"resolve": 50, "run": 10, "check": None}
    original = fuzz.compare
    spent = [0.0]

    def timed_compare(*args: Any) -> bool:
        start = time.perf_counter()
        try:
            return original(*args)
        finally:
            spent[0] += time.perf_counter() - start

    # search() looks compare up in its module: timing it splits each run into obelisk's
    # answer plus the adapter's round trip, and the rest (hypothesis drawing the case).
    fuzz.compare = timed_compare  # type: ignore[assignment]
    with AdapterClient(ADAPTER) as client:
        client.start()
        for op, target in targets.items():
            rates, answering, drawing = [], [], []
            for seed in range(RUNS):
                seen = [0]

                def tick(count: int, shrinking: bool, seen: list[int] = seen) -> None:
                    seen[0] = count

                spent[0] = 0.0
                start = time.perf_counter()
                assert fuzz.search(client, op, EXAMPLES, seed=seed, on_example=tick) is None
                total = time.perf_counter() - start
                rates.append(seen[0] / total)
                answering.append(spent[0] * 1000 / seen[0])
                drawing.append((total - spent[0]) * 1000 / seen[0])
            goal = f" (target >= {target})" if target else ""
            print(f"2. fuzz {op}: {statistics.median(rates):.0f} examples/s{goal}; per example "
                  f"{statistics.median(drawing):.1f} ms in hypothesis (generation), "
                  f"{statistics.median(answering):.1f} ms answering (obelisk in process + the "
                  f"adapter's round trip); median of {RUNS} runs of {EXAMPLES}")
    fuzz.compare = original  # type: ignore[assignment]


if __name__ == "__main__":
    conformance_ratio()
    fuzz_rates()
