"""The agent (issue 9): the loop's overhead per tick, and request building, whose cost
follows the folded data, not the history's length.

Prints, first, the loop's overhead: 200 ticks of the agent loop with the scripted adapter,
each running a 20-call plan of no-op activities (the time between two ticks' requests,
median), against compiling and running the same 20-call plan alone through the asyncio
interpreter (median of 200), and the difference (target <= 5 ms per tick). Then, for two
contexts that fold to the same data (a 1,000-message and a 100,000-message
history of writes to the same 50 keys, plus the same text, plan and error messages):
  1. build_request with the transcript the agent loop keeps beside its context
     (advanced over no new message), median of 200 runs, and the ratio (target <= 2);
  2. for comparison, build_request reading the history from scratch (no transcript),
     which grows with the history, and Transcript.advance over one new message.

Then the figures of issue 10:
  3. streaming: a scripted stream of 20 calls arriving 50 ms apart, each call taking
     100 ms: the largest time from a call's object being complete to its start (target
     <= 5 ms for the first), and the tick's wall time against the stream's plus the last
     call's own duration (target <= 1.1);
  4. delegates: a tick with one call delegated to an anonymous delegate (one tick of its
     own), against the same tick with the call as an activity plus the delegate's loop run
     directly; the difference is the engine time a delegate adds (target <= 1 ms).

Run: python bench/agent.py
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from obelisk import Context, compile_plan, gc_tuned
from obelisk.agent import Asked, Ran, Transcript, build_request, run_agent
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.common import clock_of
from obelisk.interpreters.executors import Registry, async_executor
from obelisk.llm import ScriptedLLM

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


PLAN_CALLS = 20
TICKS = 200
STEP = {"type": "object", "description": "Do one step.",
        "properties": {"_tool": {"const": "step"}, "n": {"type": "integer"},
                       "_output": {"type": "integer"}}, "required": ["n"]}


async def noop_async(call: Any, tool: Any, context: Any) -> int:
    return 1


def tick_calls() -> list[Any]:
    return [{"_tool": "step", "n": i, "_outputPath": f"†state.s{i}"} for i in range(PLAN_CALLS)]


def loop_overhead() -> None:
    context = Context.of([{"type": "input", "input": {"task": "twenty steps"}}])
    activities = {"step": noop_async}
    solution = {"calls": tick_calls(), "output": None}
    marks: list[float] = []
    contexts: list[Context] = []  # the context each tick's plan was compiled against

    def observe(event: Any) -> None:
        if isinstance(event, Asked):
            marks.append(time.perf_counter())
        elif isinstance(event, Ran):
            contexts.append(event.run.plan.context)

    asyncio.run(run_agent(context, ScriptedLLM([solution] * (TICKS + 1)), tools=[STEP],
                          activities=activities, max_ticks=TICKS + 1, observer=observe))
    ticks = [b - a for a, b in zip(marks, marks[1:], strict=False)]
    clock = clock_of(None)

    async def plan_alone(ctx: Context) -> float:
        # The same plan compiled and run on the same context, without the loop around it.
        start = time.perf_counter()
        plan = compile_plan(tick_calls(), tools=[STEP], context=ctx)
        await drive_async(plan, ctx, async_executor(plan, Registry(activities=activities)),
                          None, clock)
        return time.perf_counter() - start

    async def plans() -> list[float]:
        return [await plan_alone(ctx) for ctx in contexts[:TICKS]]

    alone = asyncio.run(plans())
    overhead = statistics.median(t - a for t, a in zip(ticks, alone, strict=False))
    print(f"agent loop, {PLAN_CALLS}-call plan per tick, median of {TICKS} ticks: "
          f"tick {statistics.median(ticks) * 1e3:.2f} ms, the same plan alone on the same "
          f"context (compile + run) {statistics.median(alone) * 1e3:.2f} ms, loop overhead "
          f"{overhead * 1e3:.2f} ms per tick (target <= 5 ms)")


STREAM_CALLS, STREAM_GAP, CALL_SECONDS = 20, 0.05, 0.1


def streaming() -> None:
    """Figure 3: how soon a streamed call starts, and the tick's wall time."""
    from obelisk.agent.judging import Judge
    from obelisk.agent.stream import run_streamed

    async def slow(call: Any, tool: Any, context: Any) -> int:
        await asyncio.sleep(CALL_SECONDS)
        return 1

    calls = [{"_tool": "lookup", "id": str(i), "_outputPath": f"†state.c{i}"}
             for i in range(STREAM_CALLS)]
    llm = ScriptedLLM([{"calls": calls, "output": None}], delays=STREAM_GAP)
    context = Context.of([])
    request = build_request(context, tools=TOOLS)

    async def once() -> Any:
        began = time.perf_counter()
        streamed = await run_streamed(
            llm.stream(request), context,
            lambda seen, is_open: compile_plan(seen, tools=TOOLS, context=context,
                                               open=is_open),
            Judge.of_text(request.schema_text), Registry(activities={"lookup": slow}),
            clock_of(None))
        return streamed, time.perf_counter() - began, began

    streamed, wall, began = asyncio.run(once())
    delays = [streamed.started[i] - streamed.arrived[i] for i in range(STREAM_CALLS)]
    stream_time = streamed.arrived[-1] - began
    bound = stream_time + CALL_SECONDS
    print(f"streaming {STREAM_CALLS} calls {STREAM_GAP * 1e3:.0f} ms apart: first call started "
          f"{delays[0] * 1e3:.2f} ms after its object was complete (target <= 5 ms), the "
          f"slowest {max(delays) * 1e3:.2f} ms; tick wall {wall * 1e3:.0f} ms against stream + "
          f"last call {bound * 1e3:.0f} ms, ratio {wall / bound:.3f} (target <= 1.1)")


def delegate_overhead() -> None:
    """Figure 4: the engine time one delegate adds over running its loop directly."""
    tool = {"type": "object", "properties": {
        "_tool": {"const": "ask"}, "q": {"type": "string"},
        "_delegate": {"const": "anonymous"}, "_output": {"type": "string"}}}
    plain = {"type": "object", "properties": {
        "_tool": {"const": "ask"}, "q": {"type": "string"}, "_output": {"type": "string"}}}
    call = {"_tool": "ask", "q": "why", "_outputPath": "†state.a"}
    first = {"calls": [call], "output": "†state.a"}
    inner = {"calls": [], "output": "because"}

    async def answer(c: Any, t: Any, x: Any) -> str:
        return "because"

    async def delegated() -> None:
        await run_agent([], ScriptedLLM([first, inner]), tools=[tool])

    async def direct() -> None:
        await run_agent([], ScriptedLLM([first]), tools=[plain], activities={"ask": answer})
        await run_agent([{"type": "input", "input": {"q": "why"}}], ScriptedLLM([inner]),
                        tools=[plain], output_schema={"type": "string"})

    with_delegate = median_seconds(lambda: asyncio.run(delegated()), 200)
    without = median_seconds(lambda: asyncio.run(direct()), 200)
    print(f"a delegate: {with_delegate * 1e3:.2f} ms against its loop run directly "
          f"{without * 1e3:.2f} ms, difference {(with_delegate - without) * 1e3:.2f} ms "
          "(target <= 1 ms)")


def main() -> None:
    # The collector tuned as the command line tunes it (the library leaves it alone).
    with gc_tuned(freeze=True):
        streaming()
        delegate_overhead()
        loop_overhead()
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
