"""The implementers' kit's figures, measured in one run.

Prints:
  1. the whole bundled pack judged through the adapter protocol,
     `obelisk conformance -q --against 'obelisk adapter'`, against the in-process
     `obelisk conformance -q` (both as commands, start-up included; median of 5 runs)
                                                                  (target ratio <= 3);
  2. `obelisk fuzz` against `obelisk adapter`: examples per second for resolve
     (target >= 50) and run (target >= 10), and apart, hypothesis's own generation of the
     same examples (drawn from the same seed, compared with nothing), and the rest
     (obelisk's answer plus the adapter's round trip).

Run: python bench/kit.py
"""

from __future__ import annotations

import contextlib
import pathlib
import random
import statistics
import subprocess
import sys
import time

from hypothesis import HealthCheck, find, settings
from hypothesis.errors import NoSuchExample

from obelisk.kit.client import AdapterClient
from obelisk.kit.fuzz import cases, search

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


def generation_time(op: str, examples: int) -> tuple[float, int]:
    count = [0]

    def never(case: object) -> bool:
        count[0] += 1
        return False

    config = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                      suppress_health_check=list(HealthCheck))
    start = time.perf_counter()
    with contextlib.suppress(NoSuchExample):
        find(cases(op), never, settings=config, random=random.Random(0))
    return time.perf_counter() - start, count[0]


def fuzz_rates() -> None:
    targets = {"resolve": 50, "run": 10, "check": None}
    with AdapterClient(ADAPTER) as client:
        client.start()
        for op, target in targets.items():
            seen = [0]

            def tick(count: int, shrinking: bool, seen: list[int] = seen) -> None:
                seen[0] = count

            start = time.perf_counter()
            assert search(client, op, EXAMPLES, seed=0, on_example=tick) is None
            total = time.perf_counter() - start
            generated, drawn = generation_time(op, EXAMPLES)
            rate = seen[0] / total
            goal = f" (target >= {target})" if target else ""
            print(f"2. fuzz {op}: {seen[0]} examples in {total:.2f} s = {rate:.0f} examples/s"
                  f"{goal}; hypothesis's generation alone: {generated:.2f} s for {drawn} "
                  f"({drawn / generated:.0f}/s); answers and round trips: "
                  f"{(total - generated) * 1000 / seen[0]:.1f} ms per example")


if __name__ == "__main__":
    conformance_ratio()
    fuzz_rates()
