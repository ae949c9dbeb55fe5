"""A tick's plan: compiling its calls, asking ``on_plan`` in lazy mode, and running it
through the asyncio interpreter with what its calls run on (activities or mocks, the LLM
for latent calls, delegates)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, frozen

from obelisk.agent.checks import error_message
from obelisk.agent.delegate import DelegateRunner, Delegation
from obelisk.agent.hooks import (
    AgentEvent,
    ApprovePlan,
    Delegated,
    EditPlan,
    PlanVerdict,
    Ran,
    RejectPlan,
    plan_verdict,
)
from obelisk.agent.judging import Judge
from obelisk.agent.latent import LLMLatent
from obelisk.agent.options import Options
from obelisk.agent.request import Transcript, merge_tools
from obelisk.agent.result import AgentResult, PlanOutcome
from obelisk.agent.schema import Mode
from obelisk.agent.telemetry import reviewed
from obelisk.compiler.nodes import CompiledPlan, Node
from obelisk.compiler.plan import compile_plan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.core.plain import thaw
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.dryrun import example_of_tool
from obelisk.interpreters.events import RunStatus
from obelisk.interpreters.executors import Registry, async_executor
from obelisk.interpreters.follower import PlanFollower
from obelisk.interpreters.mocks import Counts, Turn
from obelisk.interpreters.result import RunResult
from obelisk.llm.base import Usage

__all__ = ["PlanRun", "delegates_of", "outcomes", "paid", "registry_of", "rejected",
           "run_calls", "run_plan"]


@frozen
class PlanRun:
    """What running a tick's calls gave: the context after them, the plan message, the
    outcomes, the usage so far; or the ``Denied`` error of a rejected plan."""

    context: Context
    usage: Usage
    plan_message: dict[str, Any] | None = None
    outcomes: tuple[PlanOutcome, ...] = ()
    edited: bool = False
    cancelled: bool = False
    rejected: dict[str, Any] | None = None


def outcomes(result: RunResult) -> list[PlanOutcome]:
    """Each call's outcome for the plan message (a denied call says so); a skipped or
    denied one says why (the machine's reason)."""
    out = []
    for call in result.calls:
        word = "denied" if call.error == "Denied" else call.outcome
        reason = call.reason if word in ("skipped", "denied") else None
        out.append(PlanOutcome(call.call, call.instance, word, call.error, reason))
    return out


async def run_calls(calls: list[Any], context: Context, transcript: Transcript, number: int,
                    solution: Any, mode: Mode, ran: PlanRun, options: Options,
                    judge: Judge) -> PlanRun:
    """Compile the calls (each judged against its branch of the solution schema), ask
    ``on_plan`` in lazy mode, and run the plan."""
    registry = merge_tools(options.tools, [thaw(t) for t in transcript.tools])
    try:
        compiled, verdict = await _compile(calls, registry, context, mode, options, number,
                                           judge)
    except asyncio.CancelledError:  # stopped while the reviewer was asked: nothing ran
        return evolve(ran, cancelled=True)
    if isinstance(verdict, RejectPlan):
        return rejected(ran, compiled, calls, mode, verdict)
    edited = isinstance(verdict, EditPlan)
    if isinstance(verdict, EditPlan):
        calls = list(verdict.calls)
        compiled = judge.judged(_compile_calls(calls, registry, context, mode, options))
    latent = LLMLatent(options.llm, compiled, context, transcript,
                       on_usage=paid(options, number), max_bytes=options.max_request_bytes,
                       emitter=options.emitter, tick=number)
    delegates = delegates_of(options, (*options.tools, *transcript.tools), number)
    result = await run_plan(compiled, context, latent, options, delegates, number)
    if options.observer is not None:
        options.observer(Ran(number, solution, result))
    done = outcomes(result)
    plan_message: dict[str, Any] = {"type": "plan", "plan": calls, "mode": mode.value,
                                    "outcomes": [o.to_json() for o in done]}
    if edited:
        plan_message["edited"] = True
    return PlanRun(result.context, ran.usage + latent.usage + delegates.usage, plan_message,
                tuple(done), edited, cancelled=result.status is RunStatus.CANCELLED)


def rejected(ran: PlanRun, plan: CompiledPlan, calls: list[Any], mode: Mode,
             verdict: RejectPlan) -> PlanRun:
    """A plan the reviewer rejected (§8.2 step 5): its ``Denied`` error with the reason
    (and who, when said), then a plan message whose every outcome is ``denied``, so the
    LLM sees what it proposed and why it was refused. Nothing ran."""
    said = f"rejected by {verdict.by}" if verdict.by is not None else "rejected"
    why = f"the plan was {said}: {verdict.reason}"
    done = tuple(PlanOutcome(node.index, node.instance, "denied", reason=why)
                 for node in plan.nodes)
    message = {"type": "plan", "plan": calls, "mode": mode.value,
               "outcomes": [o.to_json() for o in done]}
    denied = (error_message("Denied", verdict.reason) if verdict.by is None
              else error_message("Denied", verdict.reason, {"by": verdict.by}))
    return evolve(ran, plan_message=message, outcomes=done, rejected=denied)


def _compile_calls(calls: Sequence[Any], registry: ToolRegistry, context: Context,
                   mode: Mode, options: Options) -> CompiledPlan:
    if mode is Mode.LAZY:
        # A lazy solution is a plan only: a result the LLM wrote into a call is not taken,
        # latent calls are executed by the latent executor when the plan runs.
        calls = [{k: v for k, v in c.items() if k != "_output"} if isinstance(c, Mapping)
                 else c for c in calls]
    return compile_plan(calls, tools=registry, context=context, instances=options.instances)


async def _compile(calls: Sequence[Any], registry: ToolRegistry, context: Context, mode: Mode,
                   options: Options, number: int,
                   judge: Judge) -> tuple[CompiledPlan, PlanVerdict]:
    """The compiled plan and, in lazy mode, what ``on_plan`` said about it (a recorded
    verdict is not asked again; a new one is recorded before the plan runs)."""
    compiled = judge.judged(_compile_calls(calls, registry, context, mode, options))
    if mode is not Mode.LAZY or options.on_plan is None:
        return compiled, ApprovePlan()
    verdict = options.ticks.recorded_review(number)
    if verdict is not None:
        if options.emitter is not None:  # told as recorded
            times = options.ticks.recorded_review_times(number)
            marks: dict[str, Any] = {"replayed": True}
            if times is not None:
                marks["time"] = times[1]
            reviewed(options.emitter, number, verdict, times[0] if times else None,
                     marks=marks)
        return compiled, verdict
    options.ticks.settle()  # the solution is on disk before anyone is asked
    asked_at = time.time()
    answer = options.on_plan(compiled)
    if isinstance(answer, Awaitable):
        answer = await answer
    verdict = plan_verdict(answer)
    times = (asked_at, time.time())
    options.ticks.record_review(number, verdict, times)
    reviewed(options.emitter, number, verdict, asked_at, marks={"time": times[1]})
    return compiled, verdict


def paid(options: Options, number: int) -> Callable[[Usage], None]:
    """Records what a latent call or a delegate of tick ``number`` cost."""
    ticks = options.ticks
    return lambda usage: ticks.record_usage(number, usage)


def delegates_of(options: Options, tools: Iterable[Any], number: int) -> DelegateRunner:
    """The tick's delegate executor: a nested run of the agent with the same adapter
    (recorded in the run's journal, under the delegated call's idempotency key, when the
    run is journaled)."""

    async def run(context: list[Any], saved_tools: tuple[Any, ...], schema: Any,
                  max_ticks: int | None, nested: Delegation, key: str | None) -> AgentResult:
        # A call has an idempotency key only in a journaled run.
        journal = None if key is None else options.ticks.delegate(number, key,
                                                                  nested.chain[-1])
        return await options.nested(
            context, options.llm, tools=saved_tools, activities=options.activities,
            output_schema=schema, max_ticks=max_ticks or options.max_ticks,
            max_stalls=options.max_stalls, approve=options.approve, clock=options.clock,
            max_concurrency=options.max_concurrency, timeout=options.timeout,
            instances=options.instances, mocks=options.mocks, latent_tools=options.latent_tools,
            delegate_root=nested.root, max_delegate_depth=nested.max_depth, stream=options.stream,
            observer=passed_on, journal=journal, run_id=key, _chain=nested.chain,
            interpreter=options.interpreter, _spending=nested.spending,
            max_request_bytes=options.max_request_bytes,
            on_event=None if options.emitter is None else options.emitter.relay(
                delegate=list(nested.chain)))

    def passed_on(event: AgentEvent) -> None:
        # The caller's observer follows the chain of delegates, not their own ticks.
        if options.observer is not None and isinstance(event, Delegated):
            options.observer(event)

    def ended(chain: tuple[str, ...], result: AgentResult) -> None:
        if options.observer is not None:
            options.observer(Delegated(chain, result.status.value, len(result.ticks)))

    return DelegateRunner(options.delegation, tuple(thaw(t) for t in tools), run, ended)


def registry_of(options: Options, latent: LLMLatent, delegates: DelegateRunner,
                counts: Counts | None = None) -> Registry:
    """What a tick's calls run with: activities (or mocks), the LLM, delegates."""
    if options.mocks is not None:
        return Registry(mocks=options.mocks, counts=counts or Counts(), example=example_of_tool,
                        latent_executor=latent, latent_tools=options.latent_tools,
                        delegate_executor=delegates)
    activities = options.activities if options.interpreter is None else \
        options.interpreter.wrap(options.activities)
    return Registry(activities=activities, latent_executor=latent,
                    delegate_executor=delegates)


async def run_plan(plan: CompiledPlan, context: Context, latent: LLMLatent,
                   options: Options, delegates: DelegateRunner, number: int) -> RunResult:
    """Run one tick's plan through the asyncio interpreter (the run's journal records it,
    or replays what it recorded), keeping going past invalid calls; with mocks, as a dry
    run (latent calls without a mock still go to the LLM). A resumed dry run gives each
    call the mock turn it had: the turns follow the recorded invocations, and a call
    invoked again keeps its own."""
    registry = registry_of(options, latent, delegates,
                           _Turns(plan, options.ticks.invoked(number)))
    invoke = async_executor(plan, registry)
    follower = None
    if options.emitter is not None:
        follower = PlanFollower(options.emitter, plan, context, tick=number,
                                isolate_invalid=True, approvals=options.approve is not None)
        invoke = follower.wrap_async(invoke)
    result = await options.ticks.run_tick(
        number, plan, context, invoke, options.approve, options.clock,
        max_concurrency=options.max_concurrency, timeout=options.timeout, observer=follower)
    if follower is not None:
        follower.end()
    return result


class _Turns(Counts):
    """Mock turns fixed per node: seeded with the nodes already invoked (in order), and a
    node invoked again takes the turn it had."""

    def __init__(self, plan: CompiledPlan, invoked: Iterable[int]) -> None:
        super().__init__()
        self._turns: dict[int, tuple[int, int]] = {}
        for node in invoked:
            self._turn(plan.nodes[node])

    def _turn(self, node: Node) -> tuple[int, int]:
        if node.id not in self._turns:
            tool, instance = node.tool, node.instance
            self._turns[node.id] = (self.per_tool.get(tool, 0),
                                    self.per_instance.get((tool, instance), 0))
            self.per_tool[tool] = self._turns[node.id][0] + 1
            self.per_instance[(tool, instance)] = self._turns[node.id][1] + 1
        return self._turns[node.id]

    def next(self, node: Node, invocation: Invocation) -> Turn:
        """The turn of this invocation: the node's own when it had one."""
        rank, instance_rank = self._turn(node)
        return Turn(node, invocation, rank, instance_rank)
