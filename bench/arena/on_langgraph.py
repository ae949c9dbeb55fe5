"""The LangGraph contenders: LangGraph's prebuilt ReAct agent (``create_react_agent``,
whose tools run in a ``ToolNode``) asking the same simulated model through a fake chat
model, with the same tools and latencies.

- ``lg-react``: the model asks for one tool call a turn, then gives the answer;
- ``lg-parallel``: the model asks, in one turn, for every call whose inputs it has seen
  (parallel tool calls: the ``ToolNode`` runs them at once), then gives the answer.

The model writes each call's arguments as values, read from the tool results in the
messages it is given (LangGraph has no references). A request is rendered as an
OpenAI-style chat request (the messages and the tools' JSON Schemas), and the answer as
its tool calls (name and arguments) or its text, to count tokens the way the obelisk
contenders count theirs. Needs ``langgraph``.
"""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .llm import Latency, count_tokens, sleep_until
from .measured import Measured, Settings
from .schedule import waves
from .tasks import FAILED, Task, Tool, resolve, store

__all__ = ["run_langgraph"]


def _seen(messages: Sequence[Any]) -> dict[str, Any]:
    """The results the messages hold, by step id (a failed call's: ``FAILED``)."""
    from langchain_core.messages import ToolMessage

    state: dict[str, Any] = {}
    for message in messages:
        if isinstance(message, ToolMessage):
            step = message.tool_call_id.removeprefix("call_")
            store(state, step, FAILED if message.status == "error"
                  else json.loads(str(message.content)))
    return state


def policy(task: Task, one_at_a_time: bool) -> Callable[[Sequence[Any]], Any]:
    """The simulated model's answer to ``messages``: the next request's tool calls of
    the current user turn, with their arguments read from the results seen, or the
    turn's answer once every call has been made."""
    from langchain_core.messages import AIMessage, HumanMessage

    plans = [waves(turn, task.fails, one_at_a_time=one_at_a_time) for turn in task.turns]

    def answer(messages: Sequence[Any]) -> Any:
        users = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        turn, plan = task.turns[len(users) - 1], plans[len(users) - 1]
        asked = sum(isinstance(m, AIMessage) for m in messages[users[-1]:])
        state = _seen(messages)
        if asked < len(plan):
            return AIMessage(content="", tool_calls=[
                {"name": s.tool, "args": resolve(dict(s.args), state), "id": f"call_{s.id}"}
                for s in plan[asked]])
        return AIMessage(content=json.dumps(resolve(turn.output, state), ensure_ascii=False))
    return answer


def chat_model(answer: Callable[[Sequence[Any]], Any], latency: Latency,
               log: list[tuple[int, int]]) -> Any:
    """A LangGraph chat model giving ``answer``'s messages at ``latency``'s pace; each
    request's tokens in and out are appended to ``log``."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import convert_to_openai_messages
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class SimulatedChatModel(BaseChatModel):
        tools: list[Any] = []

        @property
        def _llm_type(self) -> str:
            return "simulated"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.model_copy(update={"tools": [convert_to_openai_tool(t) for t in tools]})

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> Any:
            raise NotImplementedError("the simulated model answers on asyncio only")

        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                             **kwargs: Any) -> Any:
            start = asyncio.get_running_loop().time()
            message = answer(messages)
            request = json.dumps({"messages": convert_to_openai_messages(messages),
                                  "tools": self.tools}, ensure_ascii=False)
            calls = [{"name": c["name"], "arguments": c["args"]} for c in message.tool_calls]
            text = json.dumps(calls, ensure_ascii=False) if calls else str(message.content)
            log.append((count_tokens(request), count_tokens(text)))
            await sleep_until(start + latency.until(log[-1][1]))
            return ChatResult(generations=[ChatGeneration(message=message)])

    return SimulatedChatModel()


def langgraph_tools(tools: tuple[Tool, ...], scale: float) -> list[Any]:
    """The tools as LangGraph tools: async, sleeping their latency, answering JSON text."""
    from langchain_core.tools import StructuredTool

    def make(tool: Tool) -> Any:
        async def run(**args: Any) -> str:
            await asyncio.sleep(tool.seconds(args) * scale)
            return json.dumps(tool.run(**args), ensure_ascii=False)
        return StructuredTool.from_function(coroutine=run, name=tool.name,
                                            description=tool.description,
                                            args_schema=tool.schema())
    return [make(tool) for tool in tools]


async def run_langgraph(task: Task, contender: str, settings: Settings) -> Measured:
    """Run ``task`` with the LangGraph ``contender`` (``lg-react``, ``lg-parallel``)."""
    from langchain_core.messages import HumanMessage
    from langgraph.prebuilt import ToolNode, create_react_agent

    log: list[tuple[int, int]] = []
    model = chat_model(policy(task, contender == "lg-react"), settings.latency, log)
    node = ToolNode(langgraph_tools(task.tools(), settings.tool_scale), handle_tool_errors=True)
    with warnings.catch_warnings():  # create_react_agent is deprecated in LangGraph 1.x
        warnings.simplefilter("ignore")
        graph = create_react_agent(model, node)
    messages: list[Any] = []
    answers = []
    start = time.perf_counter()
    for turn in task.turns:
        state = await graph.ainvoke({"messages": [*messages, HumanMessage(turn.question)]},
                                    {"recursion_limit": 200})
        messages = state["messages"]
        answers.append(json.loads(str(messages[-1].content)))
    seconds = time.perf_counter() - start
    return Measured(contender, task.name, len(log), seconds, sum(i for i, _ in log),
                    sum(o for _, o in log), tuple(answers))


