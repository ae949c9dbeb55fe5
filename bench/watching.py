"""What watching a run costs (issue 30, G7): ``run_async`` of bench/peers.py's workloads
(fan-out and chain, 1,000 and 10,000 nodes) unwatched, watched by an ``on_event`` that
keeps each event (``list.append``), and watched with the follower's fold through the
machine left out (a figure only: what the events cost without it), rounds alternating in
one process, best of each; the ratios watched / unwatched.

A watched run's follower (``interpreters/follower.py``) folds each of the machine's events
through the machine again (``replay_more``) to read each call's final status, its
alternative and the calls skipped, with their reasons, from the machine itself: that
second fold is most of what watching costs. Nobody watching pays nothing (no emitter, no
follower): ``bench/instructions.py --baseline`` counts that.

Run: python bench/watching.py [--sizes 1000,10000] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import pathlib
import sys
import time
from collections.abc import Iterator
from typing import Any

BENCH = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import peers  # noqa: E402  (bench/ on the path first)

CONTENDERS = ("unwatched", "watched", "watched, no fold")


@contextlib.contextmanager
def without_fold() -> Iterator[None]:
    """The follower's fold through the machine left out, its events still made: the
    follower as it goes on after a fold failed (``lost``: each call's end read from its
    outcome)."""
    from obelisk.interpreters.follower import PlanFollower

    fold = PlanFollower._fold
    PlanFollower._fold = lambda self, event: setattr(self, "lost", True)  # type: ignore[method-assign]
    try:
        yield
    finally:
        PlanFollower._fold = fold  # type: ignore[method-assign]


def once(contender: str, kind: str, n: int) -> tuple[float, int]:
    """Seconds of one ``run_async`` of a freshly compiled plan, and the events told."""
    from obelisk import gc_tuned, run_async

    plan = peers.obelisk_compile(kind, n)
    events: list[dict[str, Any]] = []
    on_event = None if contender == "unwatched" else events.append
    folding = without_fold() if contender == "watched, no fold" else contextlib.nullcontext()
    with folding, gc_tuned(n, freeze=True):
        begun = time.perf_counter()
        result = asyncio.run(run_async(plan, activities=peers.ASYNC_ACTIVITIES,
                                       on_event=on_event))
        spent = time.perf_counter() - begun
    if result.status != "completed" or peers._answer(result) != peers.expected(kind, n):
        raise RuntimeError(f"{contender} {kind} {n}: the run did not give its answer")
    return spent, len(events)


def measure(kind: str, n: int, rounds: int) -> dict[str, float]:
    """Best seconds of each contender, rounds alternating; the events of a watched run."""
    best = dict.fromkeys(CONTENDERS, float("inf"))
    told = 0
    for _ in range(rounds):
        for contender in CONTENDERS:
            spent, count = once(contender, kind, n)
            best[contender] = min(best[contender], spent)
            told = max(told, count)
    return {**best, "events": told}


def main() -> None:
    """Parse the options, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1_000, 10_000], help="comma-separated node counts")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each (best kept)")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; run_async, best of {args.rounds}, "
          "rounds alternating")
    for kind in ("fan-out", "chain"):
        for n in args.sizes:
            found = measure(kind, n, args.rounds)
            plain, watched, unfolded = (found[c] for c in CONTENDERS)
            print(f"  {kind} {n:,}: unwatched {plain * 1e6 / n:.1f} µs a node, watched "
                  f"{watched * 1e6 / n:.1f} ({found['events']:,.0f} events): "
                  f"watched / unwatched {watched / plain:.2f} x; without the fold "
                  f"{unfolded / plain:.2f} x, so the fold is "
                  f"{(watched - unfolded) / (watched - plain):.0%} of what watching adds",
                  flush=True)


if __name__ == "__main__":
    main()
