"""Request building (issue 9): its cost follows the folded data, not the history's length.

Prints, for two contexts that fold to the same data (a 1,000-message and a 100,000-message
history of writes to the same 50 keys, plus the same text, plan and error messages):
  1. build_request with the transcript the agent loop keeps beside its context
     (advanced over no new message), median of 200 runs, and the ratio (target <= 2);
  2. for comparison, build_request reading the history from scratch (no transcript),
     which grows with the history, and Transcript.advance over one new message.

Run: python bench/agent.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from obelisk import Context
from obelisk.agent import Transcript, build_request

TOOLS = [{
    "type": "object", "description": "Look up a customer.",
    "properties": {"_tool": {"const": "lookup"}, "id": {"type": "string"},
                   "_output": {"type": "object"}},
    "required": ["id"],
}]
KEYS = 50


def history(n: int) -> Context:
    messages: list[Any] = [
        {"type": "system", "text": "You help customers."},
        {"type": "input", "input": {"customerId": "c-1", "question": "where is my order?"}},
        {"type": "text", "text": "Please be quick."},
    ]
    messages += [{"type": "state", "state": {f"k{j % KEYS}": {"value": j % KEYS}}}
                 for j in range(n - 5)]
    messages += [
        {"type": "plan", "plan": [{"_tool": "lookup", "id": "†input.customerId",
                                   "_outputPath": "†state.customer"}],
         "mode": "eager", "outcomes": [{"call": 0, "instance": None, "outcome": "executed"}]},
        {"type": "error", "data": {"error": {"type": "NoProgress", "message": "m"}}},
    ]
    return Context.of(messages)


def median_seconds(run: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    small, large = history(1_000), history(100_000)
    small_t, large_t = Transcript.of(small), Transcript.of(large)
    a = build_request(small, tools=TOOLS, transcript=small_t)
    b = build_request(large, tools=TOOLS, transcript=large_t)
    assert a == b, "the two histories must fold to the same request"

    kept_small = median_seconds(lambda: build_request(small, tools=TOOLS, transcript=small_t), 200)
    kept_large = median_seconds(lambda: build_request(large, tools=TOOLS, transcript=large_t), 200)
    print(f"build_request with the loop's transcript: 1,000 messages {kept_small * 1e6:.0f} µs, "
          f"100,000 messages {kept_large * 1e6:.0f} µs, ratio {kept_large / kept_small:.2f} "
          "(target <= 2)")

    cold_small = median_seconds(lambda: build_request(small, tools=TOOLS), 20)
    cold_large = median_seconds(lambda: build_request(large, tools=TOOLS), 5)
    print(f"build_request reading the history afresh: 1,000 messages {cold_small * 1e3:.2f} ms, "
          f"100,000 messages {cold_large * 1e3:.1f} ms, ratio {cold_large / cold_small:.1f}")

    grown = large.append({"type": "state", "state": {"k0": {"value": 0}}})
    advance = median_seconds(lambda: large_t.advance(grown), 200)
    print(f"Transcript.advance over one new message at 100,000: {advance * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
