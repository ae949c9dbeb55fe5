"""The agent loop: ticks of request, solution, plan, run, until an output (the shell).

Each tick:

1. builds the request (:func:`obelisk.agent.request.build_request`, with a
   :class:`Transcript` kept beside the context) and asks the adapter for a solution;
2. validates it against the request's solution schema: an invalid solution appends an
   ``InvalidSolution`` error and the tick ends;
3. compiles ``calls`` (:func:`obelisk.compile_plan`); in lazy mode shows the plan to
   ``on_plan``, which approves, edits (the edit is compiled again) or rejects it (a
   ``Denied`` error, the tick ends);
4. runs the plan through the asyncio interpreter with ``isolate_invalid=True`` (a call
   with an error diagnostic ends ``Invalid`` and the rest runs), latent calls answered by
   :class:`obelisk.agent.latent.LLMLatent`;
5. resolves ``output``'s references against the context after the calls ran: a MISSING
   one appends ``OutputMissing``, a value outside the output schema ``OutputSchema``;
6. appends the plan message ``{"type": "plan", "plan", "mode", "outcomes"}``.

A solution without calls and with a null output appends ``NoProgress``; ``max_stalls``
such ticks in a row end the run ``stalled``. Completion is checked before the tick
budget, so a tick that completes on the last allowed tick ends ``completed``. Every rule of
running a plan is the machine's: this module only strings the pure pieces together.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from attrs import evolve, frozen
from pyrsistent import pvector

from obelisk.agent.checks import Validators, error_message, resolve_output
from obelisk.agent.delegate import MAX_DELEGATE_DEPTH, DelegateRunner, Delegation, as_root
from obelisk.agent.hooks import (
    AgentError,
    AgentEvent,
    AgentObserver,
    ApprovePlan,
    Asked,
    CallStarted,
    Delegated,
    EditPlan,
    OnPlan,
    PlanVerdict,
    Ran,
    RejectPlan,
    TickEnded,
    plan_verdict,
)
from obelisk.agent.latent import LLMLatent
from obelisk.agent.request import Transcript, build_request, merge_tools
from obelisk.agent.result import AgentResult, AgentStatus, PlanOutcome, Tick
from obelisk.agent.schema import Mode
from obelisk.agent.source import AgentJournal, TickSource
from obelisk.agent.stream import run_streamed
from obelisk.compiler.nodes import Node
from obelisk.compiler.plan import CompiledPlan, compile_plan
from obelisk.compiler.tools import ToolRegistry
from obelisk.core.context import Context
from obelisk.core.values import thaw
from obelisk.interpreters.activities import Activity
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.common import clock_of
from obelisk.interpreters.dryrun import DRY_RUN_DATE, example_of_tool
from obelisk.interpreters.events import RunStatus
from obelisk.interpreters.executors import Registry, async_executor
from obelisk.interpreters.mocks import Counts, Turn, check_mocks
from obelisk.interpreters.result import RunResult
from obelisk.llm.base import LLM, LLMError, StreamItem, Usage

__all__ = ["MAX_STALLS", "MAX_TICKS", "run_agent", "run_agent_sync"]

#: Default budgets.
MAX_TICKS = 25
MAX_STALLS = 2


# -- the loop ------------------------------------------------------------------------------


def _initial_mode(context: Context) -> Mode:
    for message in reversed(context.messages):
        if message.get("type") == "plan":
            mode = message.get("mode")
            return Mode(mode) if mode in ("eager", "lazy") else Mode.EAGER
    return Mode.EAGER


def _outcomes(result: RunResult) -> list[PlanOutcome]:
    out = []
    for call in result.calls:
        word = "denied" if call.error == "Denied" else call.outcome
        out.append(PlanOutcome(call.call, call.instance, word, call.error))
    return out


@frozen
class _Options:
    """The run's options, fixed for every tick."""

    llm: LLM
    tools: tuple[Any, ...]
    activities: Mapping[str, Activity]
    output_schema: Any
    max_ticks: int
    max_stalls: int
    approve: Callable[[dict[str, Any]], Any] | None
    on_plan: OnPlan | None
    clock: Callable[[], str]
    max_concurrency: int | None
    timeout: float | None
    instances: bool
    mocks: Mapping[str, Any] | None
    latent_tools: frozenset[str] | None
    observer: AgentObserver | None
    delegation: Delegation = Delegation()
    stream: bool = False
    ticks: TickSource | None = None  # the run's journal, when it is recorded
    refresh: Refresh | None = None


#: Asked before each tick: new ``(tools, activities)`` to use from this tick on (MCP
#: servers re-listed after their tool list changed), or None when nothing changed.
Refresh: TypeAlias = Callable[[], Awaitable["tuple[Sequence[Any], Mapping[str, Activity]] | None"]]


async def run_agent(
    context: Context | Iterable[Any],
    llm: LLM,
    *,
    tools: Iterable[Any] = (),
    activities: Mapping[str, Activity] | None = None,
    output_schema: Any = None,
    mode: Mode | str | None = None,
    max_ticks: int = MAX_TICKS,
    max_stalls: int = MAX_STALLS,
    approve: Callable[[dict[str, Any]], Any] | None = None,
    on_plan: OnPlan | None = None,
    clock: Callable[[], Any] | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    instances: bool = False,
    mocks: Mapping[str, Any] | None = None,
    latent_tools: Iterable[str] | None = None,
    observer: AgentObserver | None = None,
    delegate_root: str | os.PathLike[str] | None = None,
    max_delegate_depth: int = MAX_DELEGATE_DEPTH,
    stream: bool = False,
    journal: AgentJournal | None = None,
    run_id: str | None = None,
    refresh: Refresh | None = None,
    _chain: tuple[str, ...] = (),
) -> AgentResult:
    """Run the agent on asyncio until it completes, stalls, fails, is cancelled or runs
    out of ticks.

    ``context`` the initial context; ``llm`` the adapter; ``tools`` tool schemas passed in
    (before the context's ``tool`` messages); ``activities`` by name; ``output_schema``
    the schema the output must match; ``mode`` ``eager``/``lazy`` (default: the newest
    plan message's mode, else eager); ``approve`` asked before each call as in a plain
    run; ``on_plan`` shown each compiled plan in lazy mode (returns a
    :data:`PlanVerdict`); ``clock``, ``max_concurrency``, ``timeout``, ``instances`` as for
    :func:`obelisk.run_async`; ``mocks`` runs every tick as a dry run with these mocks (no
    activity is called; ``latent_tools`` then names the latent tools the LLM still
    answers, None: all); ``observer`` follows the run (:data:`AgentEvent`);
    ``delegate_root`` the folder of saved requests that ``_delegate`` names, and
    ``max_delegate_depth`` how deep delegates may nest (:mod:`obelisk.agent.delegate`);
    ``stream`` asks the adapter's ``stream`` method and starts each call as soon as it
    has arrived and is ready (:mod:`obelisk.agent.stream`); ``journal`` (an
    :class:`obelisk.Journal`) records the run under ``run_id`` (a new id when None; an id
    the journal holds for the same start is resumed): see docs/durable.md; ``refresh`` is
    asked before each tick for new tools and activities (:data:`Refresh`). Raises
    :class:`AgentError` for bad options and :class:`obelisk.ToolError` for a bad tool.
    """
    ctx = context if isinstance(context, Context) else Context.of(context)
    if max_ticks < 1 or max_stalls < 1 or max_delegate_depth < 0:
        raise AgentError("max_ticks and max_stalls must be at least 1, max_delegate_depth "
                         "at least 0")
    if mocks is not None:
        check_mocks(dict(mocks))
    run_mode = Mode(mode) if mode is not None else _initial_mode(ctx)
    options = _Options(
        llm=llm, tools=tuple(tools), activities=dict(activities or {}),
        output_schema=output_schema, max_ticks=max_ticks, max_stalls=max_stalls,
        approve=approve, on_plan=on_plan,
        clock=clock_of(clock, default=lambda: DRY_RUN_DATE) if mocks is not None
        else clock_of(clock),
        max_concurrency=max_concurrency, timeout=timeout, instances=instances,
        mocks=None if mocks is None else dict(mocks),
        latent_tools=None if latent_tools is None else frozenset(latent_tools),
        observer=observer,
        delegation=Delegation(as_root(delegate_root), max_delegate_depth, tuple(_chain)),
        stream=stream, refresh=refresh)
    merge_tools(options.tools, ())  # a bad passed-in tool fails before the first tick
    if journal is not None:
        recorded: dict[str, Any] = {
            "mode": None if mode is None else run_mode.value, "output_schema": output_schema,
            "max_ticks": max_ticks, "max_stalls": max_stalls, "approvals": approve is not None,
            "instances": instances, "max_concurrency": max_concurrency, "timeout": timeout}
        # Only options that differ from the default are added, so a run recorded before
        # they existed keeps its header (and its digest).
        if on_plan is not None:
            recorded["on_plan"] = True
        if mocks is not None:
            recorded["mocks"] = dict(mocks)
            recorded["latent_tools"] = (None if latent_tools is None
                                        else sorted(options.latent_tools or ()))
        if stream:
            recorded["stream"] = True
        ticks = journal.agent_source(run_id, ctx, options.tools, recorded)
        options = evolve(options, ticks=ticks)
        result = await _loop(ctx, run_mode, options)
        ticks.end(result.status.value, sum(1 for m in result.context.messages
                                           if m.get("type") == "error"))
        return result
    return await _loop(ctx, run_mode, options)


async def _loop(ctx: Context, run_mode: Mode, options: _Options) -> AgentResult:
    max_ticks, max_stalls, observer = options.max_ticks, options.max_stalls, options.observer
    state = _Loop(ctx, Transcript(), Validators(options.output_schema))
    ticks: list[Tick] = []
    stalls = 0
    for number in range(1, max_ticks + 1):
        before = len(state.context.messages)
        if options.refresh is not None:  # before the request: it shows the tools
            changed = await options.refresh()
            if changed is not None:
                options = evolve(options, tools=tuple(changed[0]), activities=dict(changed[1]))
        try:
            state, tick, end = await _tick(state, number, run_mode, options)
        except asyncio.CancelledError:  # while asking the LLM (a running plan returns instead)
            return AgentResult(state.context, AgentStatus.CANCELLED, None, pvector(ticks),
                               f"cancelled during tick {number}")
        if options.ticks is not None:  # what replayed work cost when it was first done
            options.ticks.settle()
            tick = evolve(tick, usage=tick.usage + options.ticks.recorded_usage(number))
        ticks.append(tick)
        if observer is not None:
            added = state.context.messages[before:]
            observer(TickEnded(tick, tuple(thaw(m) for m in added if m.get("type") == "error")))
        if end is not None:
            status, output, reason = end
            return AgentResult(state.context, status, output, pvector(ticks), reason)
        stalls = stalls + 1 if "NoProgress" in tick.errors else 0
        if stalls >= max_stalls:
            return AgentResult(state.context, AgentStatus.STALLED, None, pvector(ticks),
                               f"{stalls} ticks in a row without calls or output")
    return AgentResult(state.context, AgentStatus.MAX_TICKS, None, pvector(ticks),
                       f"no output after {max_ticks} ticks")


def run_agent_sync(context: Context | Iterable[Any], llm: LLM, **options: Any) -> AgentResult:
    """:func:`run_agent` from synchronous code (starts and closes its own event loop)."""
    return asyncio.run(run_agent(context, llm, **options))


@frozen
class _Loop:
    """The loop's state between ticks: the context, its transcript, the validators."""

    context: Context
    transcript: Transcript
    validators: Validators


#: How a tick ended the run: status, output, reason (None: the loop goes on).
_End: TypeAlias = "tuple[AgentStatus, Any, str] | None"


async def _tick(state: _Loop, number: int, mode: Mode,
                options: _Options) -> tuple[_Loop, Tick, _End]:
    """One tick; returns the new loop state, the tick, and how the run ends (if it does)."""
    context = state.context
    transcript = state.transcript.advance(context)
    request = build_request(context, tools=options.tools, output_schema=options.output_schema,
                            mode=mode, activity_names=options.activities.keys(),
                            transcript=transcript)
    if options.observer is not None:
        options.observer(Asked(number, len(request.render())))
    if options.stream and mode is Mode.EAGER:  # lazy mode shows the whole plan first
        return await _streamed_tick(_Loop(context, transcript, state.validators), number,
                                    request, options)
    reply = None if options.ticks is None else options.ticks.recorded_reply(number)
    if reply is None:
        try:
            reply = await options.llm.solve(request)
        except LLMError as exc:
            return _Loop(context, transcript, state.validators), Tick(number, None), (
                AgentStatus.FAILED, None, str(exc))
        if options.ticks is not None:
            options.ticks.record_solution(number, reply.value, reply.usage)
    solution = reply.value
    state = _Loop(context, transcript, state.validators)
    problems = state.validators.solution_errors(request.schema_text, solution)
    if problems:
        text = "; ".join(f"{p['pointer'] or '/'}: {p['message']}" for p in problems)
        error = error_message("InvalidSolution", "the solution does not match the solution "
                              "schema: " + text, {"errors": problems})
        return _ended(state, number, solution, reply.usage, [error])
    calls, output = solution["calls"], solution["output"]
    if not calls and output is None:
        error = error_message("NoProgress", "the solution has no calls and a null output: "
                              "plan calls, or give the output")
        return _ended(state, number, solution, reply.usage, [error])
    ran = _Ran(context, reply.usage)
    if calls:
        ran = await _run_calls(calls, state, number, solution, mode, ran, options)
        if ran.rejected is not None:
            return _ended(state, number, solution, ran.usage, [ran.rejected])
        if ran.cancelled:
            return _ended(evolve(state, context=ran.context), number, solution, ran.usage, [],
                          ran, end=(AgentStatus.CANCELLED, None, f"cancelled during tick {number}"))
    return _conclude(state, number, solution, output, ran, [])


def _conclude(state: _Loop, number: int, solution: Any, output: Any, ran: _Ran,
              errors: list[dict[str, Any]]) -> tuple[_Loop, Tick, _End]:
    """The end of a tick whose calls ran: resolve and check the output, then record."""
    end: _End = None
    if output is not None:
        value, missing = resolve_output(output, ran.context)
        problems_text = "" if missing else state.validators.output_problems(value)
        if missing:
            errors.append(error_message("OutputMissing", "; ".join(missing)))
        elif problems_text:
            errors.append(error_message("OutputSchema", "the output does not match the output "
                                        "schema: " + problems_text))
        else:
            end = (AgentStatus.COMPLETED, value, f"output given at tick {number}")
    return _ended(evolve(state, context=ran.context), number, solution, ran.usage, errors, ran,
                  end=end)


@frozen
class _Ran:
    """What running a tick's calls gave: the context after them, the plan message, the
    outcomes, the usage so far; or the ``Denied`` error of a rejected plan."""

    context: Context
    usage: Usage
    plan_message: dict[str, Any] | None = None
    outcomes: tuple[PlanOutcome, ...] = ()
    edited: bool = False
    cancelled: bool = False
    rejected: dict[str, Any] | None = None


async def _run_calls(calls: list[Any], state: _Loop, number: int, solution: Any, mode: Mode,
                     ran: _Ran, options: _Options) -> _Ran:
    """Compile the calls, ask ``on_plan`` in lazy mode, and run the plan."""
    context = state.context
    registry = merge_tools(options.tools, [thaw(t) for t in state.transcript.tools])
    compiled, verdict = await _compile(calls, registry, context, mode, options, number)
    if isinstance(verdict, RejectPlan):
        return evolve(ran, rejected=error_message("Denied", verdict.reason))
    edited = isinstance(verdict, EditPlan)
    if isinstance(verdict, EditPlan):
        calls = list(verdict.calls)
        compiled = _compile_calls(calls, registry, context, mode, options)
    latent = LLMLatent(options.llm, compiled, context, state.transcript,
                       on_usage=_paid(options, number))
    delegates = _delegates(options, (*options.tools, *state.transcript.tools), number)
    result = await _run(compiled, context, latent, options, delegates, number)
    if options.observer is not None:
        options.observer(Ran(number, solution, result))
    outcomes = _outcomes(result)
    plan_message: dict[str, Any] = {"type": "plan", "plan": calls, "mode": mode.value,
                                    "outcomes": [o.to_json() for o in outcomes]}
    if edited:
        plan_message["edited"] = True
    return _Ran(result.context, ran.usage + latent.usage + delegates.usage, plan_message,
                tuple(outcomes),
                edited, cancelled=result.status is RunStatus.CANCELLED)


def _ended(state: _Loop, number: int, solution: Any, usage: Usage,
           errors: list[dict[str, Any]], ran: _Ran | None = None, *,
           end: _End = None) -> tuple[_Loop, Tick, _End]:
    """Append the tick's errors without a call, then its plan message; make the Tick."""
    context = state.context
    for error in errors:
        context = context.append(error)
    if ran is not None and ran.plan_message is not None:
        context = context.append(ran.plan_message)
    tick = Tick(number, solution, pvector(ran.outcomes if ran is not None else ()),
                pvector(e["data"]["error"]["type"] for e in errors), usage,
                ran.edited if ran is not None else False)
    return evolve(state, context=context), tick, end


def _compile_calls(calls: Sequence[Any], registry: ToolRegistry, context: Context,
                   mode: Mode, options: _Options) -> CompiledPlan:
    if mode is Mode.LAZY:
        # A lazy solution is a plan only: a result the LLM wrote into a call is not taken,
        # latent calls are executed by the latent executor when the plan runs.
        calls = [{k: v for k, v in c.items() if k != "_output"} if isinstance(c, Mapping)
                 else c for c in calls]
    return compile_plan(calls, tools=registry, context=context, instances=options.instances)


async def _compile(calls: Sequence[Any], registry: ToolRegistry, context: Context, mode: Mode,
                   options: _Options, number: int) -> tuple[CompiledPlan, PlanVerdict]:
    """The compiled plan and, in lazy mode, what ``on_plan`` said about it (a recorded
    verdict is not asked again; a new one is recorded before the plan runs)."""
    compiled = _compile_calls(calls, registry, context, mode, options)
    if mode is not Mode.LAZY or options.on_plan is None:
        return compiled, ApprovePlan()
    verdict = None if options.ticks is None else options.ticks.recorded_review(number)
    if verdict is not None:
        return compiled, verdict
    if options.ticks is not None:  # the solution is on disk before anyone is asked
        options.ticks.settle()
    answer = options.on_plan(compiled)
    if isinstance(answer, Awaitable):
        answer = await answer
    verdict = plan_verdict(answer)
    if options.ticks is not None:
        options.ticks.record_review(number, verdict)
    return compiled, verdict


def _paid(options: _Options, number: int) -> Callable[[Usage], None] | None:
    """Records what a latent call or a delegate of tick ``number`` cost (journaled runs)."""
    ticks = options.ticks
    if ticks is None:
        return None
    return lambda usage: ticks.record_usage(number, usage)


async def _streamed_tick(state: _Loop, number: int, request: Any,
                         options: _Options) -> tuple[_Loop, Tick, _End]:
    """A tick whose solution is streamed: each call starts as soon as it is admitted and
    ready (:mod:`obelisk.agent.stream`), then the tick ends as a whole one does."""
    context = state.context
    tools = (*options.tools, *state.transcript.tools)
    registry = merge_tools(options.tools, [thaw(t) for t in state.transcript.tools])

    def compile_part(calls: list[Any], is_open: bool) -> CompiledPlan:
        return compile_plan(calls, tools=registry, context=context,
                            instances=options.instances, open=is_open)

    def on_start(call: int, seen: int, is_open: bool) -> None:
        if options.observer is not None:
            options.observer(CallStarted(number, call, seen, is_open))

    latent = LLMLatent(options.llm, compile_part([], True), context, state.transcript,
                       on_usage=_paid(options, number))
    delegates = _delegates(options, tools, number)
    journal = None if options.ticks is None else options.ticks.stream_tick(number)
    try:
        # A recorded tick's stream is not asked again (it is replayed from the journal).
        items = _no_items() if journal is not None and journal.steps else options.llm.stream(
            request)
        streamed = await run_streamed(
            items, context, compile_part,
            lambda solution: state.validators.solution_errors(request.schema_text, solution),
            registry_of(options, latent, delegates), options.clock,
            approve=options.approve, on_plan=lambda plan: setattr(latent, "plan", plan),
            on_start=on_start, timeout=options.timeout, journal=journal)
    except LLMError as exc:
        return state, Tick(number, None), (AgentStatus.FAILED, None, str(exc))
    except NotImplementedError:
        raise AgentError(f"the adapter {options.llm!r} cannot stream: run without "
                         "stream=True (--stream)") from None
    solution = {"calls": list(streamed.calls), "output": streamed.output}
    result = streamed.result
    if options.observer is not None:
        options.observer(Ran(number, solution, result))
    outcomes = _outcomes(result)
    plan_message = {"type": "plan", "plan": list(streamed.calls), "mode": Mode.EAGER.value,
                    "outcomes": [o.to_json() for o in outcomes]}
    nodes = result_plan_nodes(result)
    errors = [error_message("late-writer", f"call {nodes[w]} arrived after call {nodes[r]} had "
                            f"started, and writes what call {nodes[r]} read: put writers "
                            "before their readers", {"writer": nodes[w], "reader": nodes[r]})
              for w, r in streamed.late]
    usage = streamed.usage + latent.usage + delegates.usage
    if not streamed.calls and streamed.output is None and not streamed.problems:
        errors.append(error_message("NoProgress", "the solution has no calls and a null "
                                    "output: plan calls, or give the output"))
    ran = _Ran(result.context, usage, plan_message if streamed.calls else None,
               tuple(outcomes), cancelled=result.status is RunStatus.CANCELLED)
    if streamed.problems:
        text = "; ".join(f"{p['pointer'] or '/'}: {p['message']}" for p in streamed.problems)
        errors.append(error_message("InvalidSolution", "the solution does not match the "
                                    "solution schema: " + text,
                                    {"errors": list(streamed.problems)}))
        return _ended(evolve(state, context=ran.context), number, solution, usage, errors, ran)
    if ran.cancelled:
        return _ended(evolve(state, context=ran.context), number, solution, usage, errors, ran,
                      end=(AgentStatus.CANCELLED, None, f"cancelled during tick {number}"))
    return _conclude(state, number, solution, streamed.output, ran, errors)


async def _no_items() -> AsyncIterator[StreamItem]:
    """An empty stream (a replayed tick reads none)."""
    return
    yield  # pragma: no cover - makes this an async generator


def result_plan_nodes(result: RunResult) -> list[int]:
    """Each node's call index, by node id."""
    return [node.index for node in result.plan.nodes]


def _delegates(options: _Options, tools: Iterable[Any], number: int) -> DelegateRunner:
    """The tick's delegate executor: a nested :func:`run_agent` with the same adapter
    (recorded in the run's journal, under the delegated call's idempotency key, when the
    run is journaled)."""
    ticks = options.ticks

    async def run(context: list[Any], saved_tools: tuple[Any, ...], schema: Any,
                  max_ticks: int | None, nested: Delegation, key: str | None) -> AgentResult:
        journal = None if ticks is None or key is None else ticks.delegate(
            number, key, nested.chain[-1])
        return await run_agent(
            context, options.llm, tools=saved_tools, activities=options.activities,
            output_schema=schema, max_ticks=max_ticks or options.max_ticks,
            max_stalls=options.max_stalls, approve=options.approve, clock=options.clock,
            max_concurrency=options.max_concurrency, timeout=options.timeout,
            instances=options.instances, mocks=options.mocks, latent_tools=options.latent_tools,
            delegate_root=nested.root, max_delegate_depth=nested.max_depth, stream=options.stream,
            observer=passed_on, journal=journal, run_id=None if journal is None else key,
            _chain=nested.chain)

    def passed_on(event: AgentEvent) -> None:
        # The caller's observer follows the chain of delegates, not their own ticks.
        if options.observer is not None and isinstance(event, Delegated):
            options.observer(event)

    def ended(chain: tuple[str, ...], result: AgentResult) -> None:
        if options.observer is not None:
            options.observer(Delegated(chain, result.status.value, len(result.ticks)))

    return DelegateRunner(options.delegation, tuple(thaw(t) for t in tools), run, ended)


def registry_of(options: _Options, latent: LLMLatent, delegates: DelegateRunner,
                counts: Counts | None = None) -> Registry:
    """What a tick's calls run with: activities (or mocks), the LLM, delegates."""
    if options.mocks is not None:
        return Registry(mocks=options.mocks, counts=counts or Counts(), example=example_of_tool,
                        latent_executor=latent, latent_tools=options.latent_tools,
                        delegate_executor=delegates)
    return Registry(activities=options.activities, latent_executor=latent,
                    delegate_executor=delegates)


async def _run(plan: CompiledPlan, context: Context, latent: LLMLatent,
               options: _Options, delegates: DelegateRunner, number: int) -> RunResult:
    """Run one tick's plan through the asyncio interpreter, keeping going past invalid
    calls; with mocks, as a dry run (latent calls without a mock still go to the LLM)."""
    if options.ticks is not None:
        # A resumed dry run gives each call the mock turn it had: the turns follow the
        # recorded invocations, and a call invoked again keeps its own.
        registry = registry_of(options, latent, delegates,
                               _Turns(plan, options.ticks.invoked(number)))
        return await options.ticks.run_tick(
            number, plan, context, async_executor(plan, registry), options.approve,
            options.clock, max_concurrency=options.max_concurrency, timeout=options.timeout)
    registry = registry_of(options, latent, delegates)
    return await drive_async(plan, context, async_executor(plan, registry), options.approve,
                             options.clock, max_concurrency=options.max_concurrency,
                             timeout=options.timeout, isolate_invalid=True)


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

