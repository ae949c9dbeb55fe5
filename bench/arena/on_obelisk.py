"""The obelisk contenders: the agent loop (``obelisk.agent.run_agent``) asking the
simulated model, with the task's tools as activities.

- ``whole``: the model answers each turn with one solution (every call and the output);
  the loop runs it once it has all arrived;
- ``stream``: the same solution, streamed (``stream=True``): each call starts as soon as
  it has arrived and its inputs are there;
- ``react``: one call a tick, each result in the next request, then the output.

A user turn after the first is a ``text`` message appended to the context the previous
turn ended with, so the data written so far stays where the model reads it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from obelisk import Context, thaw
from obelisk.agent import AgentStatus, run_agent

from .llm import SimulatedLLM
from .measured import Measured, Settings
from .schedule import obelisk_solutions
from .tasks import Task, Tool

__all__ = ["obelisk_tools", "run_obelisk"]

STRATEGIES = {"whole": "plan", "stream": "plan", "react": "react"}


def obelisk_tools(tools: tuple[Tool, ...]) -> list[dict[str, Any]]:
    """The tools as obelisk tool schemas (``_tool`` first)."""
    out = []
    for tool in tools:
        schema = tool.schema()
        schema["properties"] = {"_tool": {"const": tool.name}, **schema["properties"]}
        out.append(schema)
    return out


def activities(tools: tuple[Tool, ...], scale: float) -> dict[str, Any]:
    """An async activity per tool: sleeps the tool's latency, then answers (or raises)."""
    def activity(tool: Tool) -> Any:
        async def run(call: Mapping[str, Any], schema: Any, context: Any) -> Any:
            args = {k: thaw(v) for k, v in call.items() if not k.startswith("_")}
            await asyncio.sleep(tool.seconds(args) * scale)
            return tool.run(**args)
        return run
    return {tool.name: activity(tool) for tool in tools}


async def run_obelisk(task: Task, contender: str, settings: Settings) -> Measured:
    """Run ``task`` with the obelisk ``contender`` (``whole``, ``stream``, ``react``)."""
    tools = task.tools()
    schemas, acts = obelisk_tools(tools), activities(tools, settings.tool_scale)
    context = Context.of([])
    requests = tokens_in = tokens_out = 0
    answers = []
    start = time.perf_counter()
    for turn in task.turns:
        context = context.append({"type": "text", "text": turn.question})
        llm = SimulatedLLM(obelisk_solutions(turn, task.fails, STRATEGIES[contender]),
                           settings.latency)
        result = await run_agent(context, llm, tools=schemas, activities=acts,
                                 stream=contender == "stream")
        if result.status is not AgentStatus.COMPLETED:
            raise RuntimeError(f"{task.name}, {contender}: the run ended "
                               f"{result.status.value}: {result.reason}")
        context = result.context
        requests += len(llm.requests)
        tokens_in += result.usage.input_tokens
        tokens_out += result.usage.output_tokens
        answers.append(result.output)
    seconds = time.perf_counter() - start
    return Measured(contender, task.name, requests, seconds, tokens_in, tokens_out,
                    tuple(answers))
