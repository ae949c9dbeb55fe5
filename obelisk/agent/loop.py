"""The agent loop: ticks of request, solution, plan, run, until an output (the shell).

Each tick (:mod:`obelisk.agent.tick`):

1. builds the request (:func:`obelisk.agent.request.build_request`, with a
   :class:`Transcript` kept beside the context) and asks the adapter for a solution;
2. validates it against the request's solution schema: an invalid solution appends an
   ``InvalidSolution`` error and the tick ends;
3. compiles ``calls`` (:func:`obelisk.compile_plan`); in lazy mode shows the plan to
   ``on_plan``, which approves, edits (the edit is compiled again) or rejects it (a
   ``Denied`` error, the tick ends);
4. runs the plan through the asyncio interpreter with ``isolate_invalid=True`` (a call
   with an error diagnostic ends ``Invalid`` and the rest runs), latent calls answered by
   :class:`obelisk.agent.latent.LLMLatent` (:mod:`obelisk.agent.plans`);
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
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import evolve
from pyrsistent import pvector

from obelisk.agent.budget import Budgets, Spending, metered
from obelisk.agent.delegate import MAX_DELEGATE_DEPTH, Delegation, as_root
from obelisk.agent.hooks import AgentError, AgentObserver, OnPlan, TickEnded
from obelisk.agent.judging import Validators
from obelisk.agent.options import MAX_REQUEST_BYTES, MAX_STALLS, MAX_TICKS, Options, Refresh
from obelisk.agent.request import Transcript, merge_tools
from obelisk.agent.result import AgentResult, AgentStatus, Tick
from obelisk.agent.schema import Mode
from obelisk.agent.source import NO_JOURNAL, AgentJournal, TickSource
from obelisk.agent.tick import TickState, tick
from obelisk.core.context import Context
from obelisk.core.plain import thaw
from obelisk.interpreters.activities import Activity, Offload
from obelisk.interpreters.common import clock_of
from obelisk.interpreters.dryrun import DRY_RUN_DATE
from obelisk.interpreters.mocks import check_mocks
from obelisk.interpreters.stream import EventSink, emitter_for, following
from obelisk.llm.base import LLM

__all__ = ["MAX_STALLS", "MAX_TICKS", "run_agent", "run_agent_sync"]


async def run_agent(
    context: Context | Iterable[Any], llm: LLM, *, tools: Iterable[Any] = (),
    activities: Mapping[str, Activity] | None = None, output_schema: Any = None,
    mode: Mode | str | None = None, max_ticks: int = MAX_TICKS, max_stalls: int = MAX_STALLS,
    approve: Callable[[dict[str, Any]], Any] | None = None, on_plan: OnPlan | None = None,
    clock: Callable[[], Any] | None = None, max_concurrency: int | None = None,
    timeout: float | None = None, instances: bool = False, on_event: EventSink | None = None,
    mocks: Mapping[str, Any] | None = None, latent_tools: Iterable[str] | None = None,
    observer: AgentObserver | None = None, delegate_root: str | os.PathLike[str] | None = None,
    max_delegate_depth: int = MAX_DELEGATE_DEPTH, stream: bool = False,
    journal: AgentJournal | None = None, run_id: str | None = None,
    refresh: Refresh | None = None, interpreter: Offload | None = None,
    budgets: Budgets | None = None, max_request_bytes: int = MAX_REQUEST_BYTES,
    _chain: tuple[str, ...] = (), _spending: Spending | None = None,
) -> AgentResult:
    """Run the agent on asyncio until it completes, stalls, fails, is cancelled or ticks out.

    ``context`` the initial context; ``llm`` the adapter; ``tools`` schemas passed in (before
    the context's ``tool`` messages); ``activities`` by name; ``output_schema`` the output's
    schema; ``mode`` ``eager``/``lazy`` (default: the newest plan message's, else eager);
    ``approve`` asked before each call; ``on_plan`` shown each plan in lazy mode (returns a
    :data:`PlanVerdict`); ``clock``, ``max_concurrency``, ``timeout``, ``instances`` as for
    :func:`obelisk.run_async`; ``mocks`` makes every tick a dry run (``latent_tools``: the
    latent tools the LLM still answers, None: all); ``observer`` follows the run
    (:data:`AgentEvent`); ``delegate_root``, ``max_delegate_depth``: delegates
    (:mod:`obelisk.agent.delegate`); ``stream`` starts calls as they arrive
    (:mod:`obelisk.agent.stream`); ``journal`` records the run under ``run_id`` (docs/durable.md);
    ``refresh`` gives new tools before each tick (:data:`Refresh`); ``interpreter`` runs
    activities elsewhere (a DaskInterpreter); ``budgets`` bound what the run and its delegates
    spend (:mod:`obelisk.agent.budget`); ``max_request_bytes`` bounds each request
    (:mod:`obelisk.agent.sizes`); ``on_event`` is given the run's typed events
    (docs/observability.md). Raises :class:`AgentError` (bad options), ToolError.
    """
    ctx = context if isinstance(context, Context) else Context.of(context)
    llm = metered(llm, _spending, _checked(max_ticks, max_stalls, max_delegate_depth, budgets))
    if mocks is not None:
        check_mocks(dict(mocks))
    run_mode = Mode(mode) if mode is not None else _initial_mode(ctx)
    options = Options(
        llm=llm, tools=tuple(tools), activities=dict(activities or {}),
        output_schema=output_schema, max_ticks=max_ticks, max_stalls=max_stalls,
        approve=approve, on_plan=on_plan, clock=_clock(clock, dry=mocks is not None),
        max_concurrency=max_concurrency, timeout=timeout, instances=instances,
        mocks=None if mocks is None else dict(mocks), observer=observer, nested=run_agent,
        latent_tools=None if latent_tools is None else frozenset(latent_tools),
        delegation=Delegation(as_root(delegate_root), max_delegate_depth, tuple(_chain),
                              llm.spending),
        stream=stream, refresh=refresh, interpreter=interpreter,
        max_request_bytes=max_request_bytes, emitter=emitter_for(on_event))
    merge_tools(options.tools, ())  # a bad passed-in tool fails before the first tick
    ticks = (NO_JOURNAL if journal is None else journal).agent_source(
        run_id, ctx, options.tools, _recorded(options, None if mode is None else run_mode))
    return evolve(await _told(ctx, run_mode, evolve(options, ticks=ticks), run_id),
                  requests=llm.spending.requests)


def _checked(max_ticks: int, max_stalls: int, max_delegate_depth: int,
             budgets: Budgets | None) -> Budgets:
    """The run's budgets (the defaults for None); raises :class:`AgentError` for a bound
    out of range."""
    if max_ticks < 1 or max_stalls < 1 or max_delegate_depth < 0:
        raise AgentError("max_ticks and max_stalls must be at least 1, max_delegate_depth "
                         "at least 0")
    budgets = Budgets() if budgets is None else budgets
    if min(budgets.max_requests, budgets.max_tokens, budgets.max_delegates) < 1:
        raise AgentError("the budgets (max_requests, max_tokens, max_delegates) must be at "
                         "least 1")
    return budgets


async def _told(ctx: Context, run_mode: Mode, options: Options,
                run_id: str | None) -> AgentResult:
    """The loop, told as a run in the event stream when someone watches (its trace
    context recorded in the run's journal); its end recorded."""
    chain = options.delegation.chain
    with following(options.emitter, "agent", name=chain[-1] if chain else "obelisk",
                   **_run_fields(options, options.ticks, run_id)) as ending:
        _trace_recorded(options, options.ticks)
        result = await _loop(ctx, run_mode, options)
        ending.update(status=result.status.value, reason=result.reason,
                      input_tokens=sum(t.usage.input_tokens for t in result.ticks),
                      output_tokens=sum(t.usage.output_tokens for t in result.ticks))
    options.ticks.end(result.status.value,
                      sum(1 for m in result.context.messages if m.get("type") == "error"))
    return result


def _run_fields(options: Options, ticks: TickSource, run_id: str | None) -> dict[str, Any]:
    """``run_started``'s fields: the run id, and the trace a resumed run links to."""
    fields: dict[str, Any] = {} if run_id is None else {"run": run_id}
    if options.emitter is not None and options.emitter.tracer is not None:
        previous = ticks.last_trace()
        if previous is not None:
            fields["resumes"] = previous
    return fields


def _trace_recorded(options: Options, ticks: TickSource) -> None:
    """A traced run's trace context, recorded in its journal for a later resume."""
    parent = None if options.emitter is None else options.emitter.traceparent()
    if parent is not None:
        ticks.record_trace(parent)


def _clock(clock: Callable[[], Any] | None, *, dry: bool) -> Callable[[], str]:
    """The run's clock: the one given, else a dry run's fixed date or the real time."""
    return clock_of(clock, default=lambda: DRY_RUN_DATE) if dry else clock_of(clock)


def _recorded(options: Options, mode: Mode | None) -> dict[str, Any]:
    """The options a journal records in the run's header (what a resume must match;
    ``mode`` when one was given)."""
    recorded: dict[str, Any] = {
        "mode": None if mode is None else mode.value,
        "output_schema": options.output_schema, "max_ticks": options.max_ticks,
        "max_stalls": options.max_stalls, "approvals": options.approve is not None,
        "instances": options.instances, "max_concurrency": options.max_concurrency,
        "timeout": options.timeout}
    # Only options that differ from the default are added, so a run recorded before they
    # existed keeps its header (and its digest).
    if options.on_plan is not None:
        recorded["on_plan"] = True
    if options.mocks is not None:
        recorded["mocks"] = dict(options.mocks)
        recorded["latent_tools"] = (None if options.latent_tools is None
                                    else sorted(options.latent_tools))
    if options.stream:
        recorded["stream"] = True
    return recorded


def _initial_mode(context: Context) -> Mode:
    for message in reversed(context.messages):
        if message.get("type") == "plan":
            mode = message.get("mode")
            return Mode(mode) if mode in ("eager", "lazy") else Mode.EAGER
    return Mode.EAGER


async def _loop(ctx: Context, run_mode: Mode, options: Options) -> AgentResult:
    max_ticks, max_stalls, observer = options.max_ticks, options.max_stalls, options.observer
    state = TickState(ctx, Transcript(), Validators(options.output_schema))
    ticks: list[Tick] = []
    stalls = 0
    for number in range(1, max_ticks + 1):
        before = len(state.context.messages)
        if options.refresh is not None:  # before the request: it shows the tools
            changed = await options.refresh()
            if changed is not None:
                options = evolve(options, tools=tuple(changed[0]), activities=dict(changed[1]))
        if options.emitter is not None:
            options.emitter.emit("tick_started", tick=number)
        try:
            state, made, end = await tick(state, number, run_mode, options)
        except asyncio.CancelledError:  # while asking the LLM (a running plan returns instead)
            return AgentResult(state.context, AgentStatus.CANCELLED, None, pvector(ticks),
                               f"cancelled during tick {number}")
        options.ticks.settle()  # what replayed work cost when it was first done:
        made = evolve(made, usage=made.usage + options.ticks.recorded_usage(number))
        ticks.append(made)
        if options.emitter is not None:
            options.emitter.emit("tick_ended", tick=number, errors=list(made.errors),
                                 input_tokens=made.usage.input_tokens,
                                 output_tokens=made.usage.output_tokens)
        if observer is not None:
            added = state.context.messages[before:]
            observer(TickEnded(made, tuple(thaw(m) for m in added if m.get("type") == "error")))
        if end is not None:
            status, output, reason = end
            return AgentResult(state.context, status, output, pvector(ticks), reason)
        stalls = stalls + 1 if "NoProgress" in made.errors else 0
        if stalls >= max_stalls:
            return AgentResult(state.context, AgentStatus.STALLED, None, pvector(ticks),
                               f"{stalls} ticks in a row without calls or output")
    return AgentResult(state.context, AgentStatus.MAX_TICKS, None, pvector(ticks),
                       f"no output after {max_ticks} tick{'' if max_ticks == 1 else 's'}")


def run_agent_sync(context: Context | Iterable[Any], llm: LLM, **options: Any) -> AgentResult:
    """:func:`run_agent` from synchronous code (starts and closes its own event loop)."""
    return asyncio.run(run_agent(context, llm, **options))
