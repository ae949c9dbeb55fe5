"""Resolution and append cost as contexts grow (issue: foundation figures).

Prints, measured in one run:
  1. median read time at 100,000 messages / at 1,000 messages   (target <= 3)
  2. speedup over the seeds' reverse scan at 100,000 messages  (target >= 100x)
  3. median append time at 100,000 messages / at 1,000 messages (target <= 3)

The contexts: one kind (state), 10 instances, a mix of set/merge/push at depths 1-4, and
one list grown by pushes to half the messages (50,000 of the 100,000). Reads are scalar
leaves and small objects, global and per instance, the long list's last element among them.

Run: python bench/resolve.py [--quick]
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from typing import Any

from obelisk import Context
from obelisk.compiler.parse import parse_input
from obelisk.core.messages import Write, normalise
from obelisk.core.methods import Method, apply_write
from obelisk.core.paths import get_in, is_prefix, overlaps
from obelisk.core.pathtext import render_reference
from obelisk.core.resolve import evaluate, lookup_in
from obelisk.core.values import MISSING, freeze

INSTANCES = [f"i{n}" for n in range(10)]


def nest(path: tuple[str | int, ...], value: Any) -> Any:
    for segment in reversed(path):
        value = {str(segment): value}
    return value


def build_messages(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"type": "state", "state": {"users": {f"u{k}": {"name": f"user {k}", "score": k}
                                              for k in range(50)}, "log": []}},
    ]
    while len(messages) < n:
        i = len(messages)
        if i % 2 == 0:  # half of all messages grow the one long list
            path: tuple[str | int, ...] = ("log",)
            msg = {"type": "state", "state": nest(path, {"n": i}),
                   "_outputPath": render_reference("state", path), "_outputMethod": "push"}
        else:
            user = f"u{rnd.randrange(50)}"
            choice = rnd.randrange(3)
            if choice == 0:
                path = ("users", user, "score")
                msg = {"type": "state", "state": nest(path, i), "_outputPath":
                       render_reference("state", path), "_outputMethod": "set"}
            elif choice == 1:
                path = ("users", user)
                msg = {"type": "state", "state": nest(path, {"seen": i, "profile": {"v": i}}),
                       "_outputPath": render_reference("state", path), "_outputMethod": "merge"}
            else:
                path = ("users", user, "events")
                msg = {"type": "state", "state": nest(path, i),
                       "_outputPath": render_reference("state", path), "_outputMethod": "push"}
            if rnd.random() < 0.3:
                msg["_instance"] = rnd.choice(INSTANCES)
        messages.append(msg)
    return messages


READS = [
    ("†state.log.-1", None), ("†state.log.-1.n", None), ("†state.users.u3.name", None),
    ("†state.users.u7.score", None), ("†state.users.u11.profile", None),
    ("†state.users.u19.seen", "i3"), ("†state.users.u5.name", "i1"),
    ("†state.users.u8.profile.v", "i7"), ("†state.log.-1.n", "i2"),
    ("†state.users.u42.events.-1", None),
]


def median_read(context: Context, repeat: int) -> float:
    samples = []
    exprs = [(parse_input(text), inst) for text, inst in READS]
    for expr, inst in exprs:  # first reads build the per-instance memo; not timed
        evaluate(expr, lookup_in(context, inst))
    for _ in range(repeat):
        for expr, inst in exprs:
            start = time.perf_counter()
            evaluate(expr, lookup_in(context, inst))
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def reverse_scan(writes: list[Write], kind: str, path: tuple[str | int, ...],
                 instance: str | None) -> Any:
    """The seeds' algorithm: newest to oldest, stop at a set at or above the path."""
    def layer(selected: list[Write], base: Any) -> Any:
        collected = []
        for write in reversed(selected):
            if write.kind != kind or not overlaps(write.path, path):
                continue
            collected.append(write)
            if write.method is Method.SET and is_prefix(write.path, path):
                base = MISSING
                break
        for write in reversed(collected):
            base = apply_write(base, write.path, write.method, write.value)
        return base
    root = layer([w for w in writes if w.instance is None], MISSING)
    if instance is not None:
        root = layer([w for w in writes if w.instance == instance], root)
    return get_in(root, path)


def median_scan(messages: list[dict[str, Any]], repeat: int) -> float:
    writes = [w for w in (normalise(freeze(m)) for m in messages) if w is not None]
    refs = [(parse_input(text), inst) for text, inst in READS]
    samples = []
    for _ in range(repeat):
        for expr, inst in refs:
            start = time.perf_counter()
            reverse_scan(writes, expr.kind, expr.path, inst)  # type: ignore[union-attr]
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def median_append(context: Context, repeat: int) -> float:
    samples = []
    for k in range(repeat):
        msg = {"type": "state", "state": {"users": {"u1": {"score": k}}},
               "_outputPath": "†state.users.u1.score", "_instance": INSTANCES[k % 10]}
        start = time.perf_counter()
        context.append(msg)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    quick = "--quick" in sys.argv
    big_n = 20_000 if quick else 100_000
    small_msgs, big_msgs = build_messages(1_000), build_messages(big_n)
    t0 = time.perf_counter()
    small, big = Context.of(small_msgs), Context.of(big_msgs)
    build = time.perf_counter() - t0
    # Check the fast path answers what the scan answers before timing anything.
    writes = [w for w in (normalise(freeze(m)) for m in big_msgs) if w is not None]
    for text, inst in READS:
        expr = parse_input(text)
        fast = evaluate(expr, lookup_in(big, inst))
        slow = reverse_scan(writes, expr.kind, expr.path, inst)  # type: ignore[union-attr]
        assert fast == slow, (text, inst, fast, slow)

    read_small, read_big = median_read(small, 300), median_read(big, 300)
    scan_big = median_scan(big_msgs, 3)
    append_small, append_big = median_append(small, 3000), median_append(big, 3000)
    print(f"contexts: 1,000 and {big_n:,} messages (built both in {build:.2f} s)")
    print(f"read   median: {read_small * 1e6:8.2f} us at 1,000   {read_big * 1e6:8.2f} us at {big_n:,}"
          f"   ratio {read_big / read_small:5.2f}  (target <= 3)")
    print(f"scan   median: {scan_big * 1e6:8.0f} us at {big_n:,} (seeds' reverse scan)"
          f"   speedup {scan_big / read_big:8.0f}x  (target >= 100x)")
    print(f"append median: {append_small * 1e6:8.2f} us at 1,000   {append_big * 1e6:8.2f} us at {big_n:,}"
          f"   ratio {append_big / append_small:5.2f}  (target <= 3)")


if __name__ == "__main__":
    main()
