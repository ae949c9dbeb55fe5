"""The agent's work on one tick stays linear in the tick's calls (issue 26 item 7).

1. Building the request after a tick of N calls: its plan message holds N calls and N
   outcomes (2,000 and 20,000 calls; best of 5): seconds a request and the ratio, which
   is about 10 when building is linear in the outcomes.
2. A streamed tick of N calls against the same solution answered whole (1,000 and 4,000
   calls, no-op activities): the solution arrives as JSON text in 64-character chunks
   through the providers' incremental parser, the reader yielding to the event loop after
   every chunk (the worst case for a loop that admitted each call by compiling every call
   seen so far). The ratio streamed / whole, and streamed 4,000 / streamed 1,000 (about 4
   when linear).

Run ``python bench/agentscale.py``; ``PYTHONPATH=OLD_CHECKOUT python bench/agentscale.py``
measures an older checkout with the same workloads. The garbage collector is tuned as
the command line tunes it around an agent run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from obelisk import Context, gc_tuned
from obelisk.agent import build_request, run_agent_sync
from obelisk.llm import ScriptedLLM, StreamedCall, StreamedOutput
from obelisk.llm.streaming import SolutionParser

STEP = {"type": "object", "properties": {"_tool": {"const": "step"}, "x": {"type": "integer"},
                                         "_output": {}}}


def calls(n: int) -> list[dict[str, Any]]:
    return [{"_tool": "step", "x": i, "_outputPath": f"†state.v{i}"} for i in range(n)]


def best(run: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return min(times)


def request_after(n: int) -> float:
    """Seconds to build the request after a tick of ``n`` calls (best of 3)."""
    plan = {"type": "plan", "plan": calls(n), "mode": "eager",
            "outcomes": [{"call": i, "instance": None, "outcome": "executed"}
                         for i in range(n)]}
    context = Context.of([{"type": "input", "input": {"n": n}}, plan])
    return best(lambda: build_request(context, tools=[STEP]), 5)


class Chunked(ScriptedLLM):
    """Streams each solution as JSON text in 64-character chunks through the providers'
    parser, yielding to the event loop after every chunk."""

    async def stream(self, request: Any) -> Any:
        reply = await self.solve(request)
        text = json.dumps(reply.value, ensure_ascii=False)
        parser = SolutionParser("bench")
        for start in range(0, len(text), 64):
            for call in parser.feed(text[start:start + 64]):
                yield StreamedCall(call)
            await asyncio.sleep(0)
        end = getattr(parser, "end", None)  # an older checkout's parser has close()
        yield end(reply.usage) if end is not None else StreamedOutput(parser.close())


async def noop(call: Any, tool: Any, context: Any) -> int:
    return 1


def tick(n: int, stream: bool) -> float:
    """Seconds for one tick of ``n`` calls, streamed or whole."""
    solution = {"calls": calls(n), "output": 1}
    llm = (Chunked if stream else ScriptedLLM)([solution])
    began = time.perf_counter()
    result = run_agent_sync([], llm, tools=[STEP], activities={"step": noop}, stream=stream,
                            max_ticks=1)
    took = time.perf_counter() - began
    assert result.status.value == "completed", result.reason
    return took


def main() -> None:
    with gc_tuned(freeze=True):  # as the command line runs an agent
        figures()


def figures() -> None:
    """Print the figures (see the module docstring)."""
    small, large = request_after(2_000), request_after(20_000)
    print(f"request after a tick of 2,000 calls: {small * 1e3:.1f} ms; of 20,000 calls: "
          f"{large * 1e3:.1f} ms; ratio {large / small:.1f} (linear: about 10)")
    whole = {n: tick(n, False) for n in (1_000, 4_000)}
    streamed = {n: tick(n, True) for n in (1_000, 4_000)}
    for n in (1_000, 4_000):
        print(f"a tick of {n:,} calls: whole {whole[n]:.2f} s, streamed in 64-character "
              f"chunks {streamed[n]:.2f} s, ratio {streamed[n] / whole[n]:.1f}")
    print(f"streamed 4,000 / streamed 1,000: {streamed[4_000] / streamed[1_000]:.1f} "
          "(linear: about 4)")


if __name__ == "__main__":
    main()
