"""One tick of the agent loop: the request, the solution (asked for whole, or streamed),
its check, its calls run, its output resolved and checked, and what the tick appends to
the context (its errors, then its plan message)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, TypeAlias

from attrs import evolve, frozen
from pyrsistent import pvector

from obelisk.agent.budget import BudgetExceeded
from obelisk.agent.checks import error_message, resolve_output
from obelisk.agent.hooks import AgentError, Asked, CallStarted, Ran
from obelisk.agent.judging import (
    Validators,
    invalid_solution,
    read_answer,
    solution_error,
    unusable_solution,
)
from obelisk.agent.latent import LLMLatent
from obelisk.agent.options import Options
from obelisk.agent.plans import PlanRun, delegates_of, outcomes, paid, registry_of, run_calls
from obelisk.agent.request import Transcript, build_request, merge_tools
from obelisk.agent.result import AgentStatus, Tick
from obelisk.agent.schema import Mode
from obelisk.agent.sizes import data_too_large, request_too_large
from obelisk.agent.source import StreamJournal
from obelisk.agent.stream import StreamedRun, run_streamed
from obelisk.agent.streamevents import FollowedStream
from obelisk.agent.telemetry import answered, asked
from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.plan import compile_plan
from obelisk.core.context import Context
from obelisk.core.plain import thaw
from obelisk.interpreters.events import RunStatus
from obelisk.interpreters.follower import PlanFollower
from obelisk.interpreters.stream import scoped
from obelisk.llm.answers import Unusable
from obelisk.llm.base import LLMError, Reply, StreamItem, Usage
from obelisk.llm.request import Request

__all__ = ["End", "TickState", "tick"]


@frozen
class TickState:
    """The loop's state between ticks: the context, its transcript, the validators."""

    context: Context
    transcript: Transcript
    validators: Validators


#: How a tick ended the run: status, output, reason (None: the loop goes on).
End: TypeAlias = "tuple[AgentStatus, Any, str] | None"


async def tick(state: TickState, number: int, mode: Mode,
               options: Options) -> tuple[TickState, Tick, End]:
    """One tick; returns the new loop state, the tick, and how the run ends (if it does)."""
    context = state.context
    state = evolve(state, transcript=state.transcript.advance(context))
    what, limit = f"the request for tick {number}", options.max_request_bytes
    too_large = data_too_large(context, state.transcript.blocks, limit, what)
    if too_large is not None:  # measured before it is rendered
        return _not_sent(state, number, too_large)
    request = build_request(context, tools=options.tools, output_schema=options.output_schema,
                            mode=mode, activity_names=options.activities.keys(),
                            transcript=state.transcript)
    too_large = request_too_large(request, limit, what)
    if too_large is not None:
        return _not_sent(state, number, too_large)
    if options.stream and mode is Mode.EAGER:  # lazy mode shows the whole plan first
        return await _streamed_tick(state, number, request, options)
    reply = options.ticks.recorded_reply(number)
    _asked(options, number, request, replayed=reply is not None)
    if reply is None:
        asking = asked(options.emitter, options.llm, number, request)
        try:
            with scoped(options.emitter, asking):
                reply = await options.llm.solve(request)
        except LLMError as exc:
            answered(options.emitter, options.llm, number, None, error=exc)
            return _failed(state, number, exc)
        answered(options.emitter, options.llm, number, reply)
        options.ticks.record_solution(number, recordable(reply.value), reply.usage)
    elif options.emitter is not None:
        _retold(options, number, request, reply)
    judge = state.validators.judge(request.schema_text)
    solution = read_answer(reply.value)
    if isinstance(solution, Unusable):
        return _ended(state, number, solution.to_json(), reply.usage,
                      [unusable_solution(solution)])
    problems = judge.shape_problems(solution)
    if problems:
        return _ended(state, number, solution, reply.usage, [invalid_solution(problems)])
    calls, output = solution["calls"], solution["output"]
    if not calls and output is None:
        return _ended(state, number, solution, reply.usage, [_no_progress()])
    ran = PlanRun(context, reply.usage)
    if calls:
        ran = await run_calls(calls, context, state.transcript, number, solution, mode, ran,
                              options, judge)
        if ran.rejected is not None:  # its Denied error, then the plan all denied
            return _ended(state, number, solution, ran.usage, [ran.rejected], ran)
        if ran.cancelled:
            return _ended(evolve(state, context=ran.context), number, solution, ran.usage, [],
                          ran, end=_cancelled(number))
    return _conclude(state, number, solution, output, ran, [])


def _failed(state: TickState, number: int, exc: LLMError) -> tuple[TickState, Tick, End]:
    """The adapter failed (or a budget is spent: its ``BudgetExceeded`` error is appended):
    the run ends ``failed``."""
    errors = [error_message("BudgetExceeded", exc.detail, {"budget": exc.budget,
                                                             "limit": exc.limit})
              ] if isinstance(exc, BudgetExceeded) else []
    state, made, _ = _ended(state, number, None, Usage(), errors)
    return state, made, (AgentStatus.FAILED, None, str(exc))


def _asked(options: Options, number: int, request: Request, *, replayed: bool) -> None:
    """Tell the observer the tick asks the LLM (or replays its answer from the journal)."""
    if options.observer is not None:
        options.observer(Asked(number, len(request.render()), replayed, request))


def _retold(options: Options, number: int, request: Request, reply: Reply) -> None:
    """A replayed tick's request and answer, told as recorded: marked ``replayed``, with
    the tokens and times the journal holds (when it holds them)."""
    found = options.ticks.recorded_answer(number)
    usage, begun, came = found if found is not None else (Usage(), None, None)
    marks: dict[str, Any] = {"replayed": True}
    asked(options.emitter, options.llm, number, request,
          marks=marks if begun is None else {**marks, "time": begun})
    answered(options.emitter, options.llm, number, Reply(reply.value, usage),
             marks=marks if came is None else {**marks, "time": came})


def recordable(answer: Any) -> Any:
    """An answer as a journal records it (an unusable one as its JSON form)."""
    return answer.to_json() if isinstance(answer, Unusable) else answer


def _not_sent(state: TickState, number: int, problem: str) -> tuple[TickState, Tick, End]:
    """A request over ``max_request_bytes`` is not sent: a ``RequestTooLarge`` error, and
    the run ends ``failed`` (the LLM cannot be asked for the next step)."""
    context = state.context.append(error_message("RequestTooLarge", problem))
    return (evolve(state, context=context), Tick(number, None, errors=pvector(["RequestTooLarge"])),
            (AgentStatus.FAILED, None, problem))


def _no_progress() -> dict[str, Any]:
    """The error of a solution that neither plans calls nor gives the output."""
    return error_message("NoProgress", "the solution has no calls and a null output: "
                         "plan calls, or give the output")


def _cancelled(number: int) -> End:
    return AgentStatus.CANCELLED, None, f"cancelled during tick {number}"


def _conclude(state: TickState, number: int, solution: Any, output: Any, ran: PlanRun,
              errors: list[dict[str, Any]]) -> tuple[TickState, Tick, End]:
    """The end of a tick whose calls ran: resolve and check the output, then record."""
    end: End = None
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


def _ended(state: TickState, number: int, solution: Any, usage: Usage,
           errors: list[dict[str, Any]], ran: PlanRun | None = None, *,
           end: End = None) -> tuple[TickState, Tick, End]:
    """Append the tick's errors without a call, then its plan message; make the Tick."""
    context = state.context
    for error in errors:
        context = context.append(error)
    if ran is not None and ran.plan_message is not None:
        context = context.append(ran.plan_message)
    made = Tick(number, solution, pvector(ran.outcomes if ran is not None else ()),
                pvector(e["data"]["error"]["type"] for e in errors), usage,
                ran.edited if ran is not None else False)
    return evolve(state, context=context), made, end


# -- a streamed tick ------------------------------------------------------------------------


async def _streamed_tick(state: TickState, number: int, request: Request,
                         options: Options) -> tuple[TickState, Tick, End]:
    """A tick whose solution is streamed: each call starts as soon as it is admitted and
    ready (:mod:`obelisk.agent.stream`), then the tick ends as a whole one does."""
    context, transcript = state.context, state.transcript
    registry = merge_tools(options.tools, [thaw(t) for t in transcript.tools])

    def compile_part(calls: list[Any], is_open: bool) -> CompiledPlan:
        return compile_plan(calls, tools=registry, context=context,
                            instances=options.instances, open=is_open)

    def on_start(call: int, seen: int, is_open: bool) -> None:
        if options.observer is not None:
            options.observer(CallStarted(number, call, seen, is_open))

    latent = LLMLatent(options.llm, compile_part([], True), context, transcript,
                       on_usage=paid(options, number), max_bytes=options.max_request_bytes,
                       emitter=options.emitter, tick=number)
    delegates = delegates_of(options, (*options.tools, *transcript.tools), number)
    journal = options.ticks.stream_tick(number)
    _asked(options, number, request, replayed=bool(journal.steps))
    follower = None
    if options.emitter is not None:
        follower = PlanFollower(options.emitter, compile_part([], True), context, tick=number,
                                isolate_invalid=True, open=True,
                                approvals=options.approve is not None)
        journal = _followed(journal, follower, options, number, request, state, compile_part)
    try:
        # A recorded tick's stream is not asked again (it is replayed from the journal).
        if follower is not None and not journal.steps:
            asked(options.emitter, options.llm, number, request, stream=True)
        items = _no_items() if journal.steps else options.llm.stream(request)
        streamed = await run_streamed(
            items, context, compile_part, state.validators.judge(request.schema_text),
            registry_of(options, latent, delegates), options.clock,
            approve=options.approve, on_plan=lambda plan: setattr(latent, "plan", plan),
            on_start=on_start, timeout=options.timeout, journal=journal,
            scope=None if follower is None else follower.scope)
    except LLMError as exc:
        answered(options.emitter, options.llm, number, None, error=exc)
        return _failed(state, number, exc)
    except NotImplementedError:
        raise AgentError(f"the adapter {options.llm!r} cannot stream: run without "
                         "stream=True (--stream)") from None
    if follower is not None:
        follower.end()
    return _streamed_end(state, number, streamed, streamed.usage + latent.usage
                         + delegates.usage, options)


def _followed(journal: StreamJournal, follower: PlanFollower, options: Options, number: int,
              request: Request, state: TickState,
              compile_part: Callable[[list[Any], bool], CompiledPlan]) -> FollowedStream:
    """The streamed tick's journal, its steps told to ``follower``: a resumed tick's
    recorded steps first (marked ``replayed``, after its request), then what runs now."""
    judge = state.validators.judge(request.schema_text)

    def closed(solution: Any, usage: Usage | None, first: float | None,
               marks: dict[str, Any] | None = None) -> None:
        if usage is None:  # the recorded end of a resumed tick's stream
            found = options.ticks.recorded_answer(number)
            usage = found[0] if found is not None else Usage()
            if found is not None and found[2] is not None and marks is not None:
                marks = {**marks, "time": found[2]}
        answered(options.emitter, options.llm, number, Reply(solution, usage),
                 first_call=first, marks=marks)

    if journal.steps:
        found = options.ticks.recorded_answer(number)
        marks: dict[str, Any] = {"replayed": True}
        if found is not None and found[1] is not None:
            marks["time"] = found[1]
        asked(options.emitter, options.llm, number, request, stream=True, marks=marks)
    return FollowedStream(journal, follower, closed,
                          lambda calls: judge.judged(compile_part(calls, False)),
                          lambda solution: solution_error(judge, solution) is None)


def _streamed_end(state: TickState, number: int, streamed: StreamedRun, usage: Usage,
                  options: Options) -> tuple[TickState, Tick, End]:
    """A streamed tick's end: its late writers, a missing output, an invalid whole
    solution, a stream that broke (the run fails, keeping what ran), then the output as a
    whole tick's."""
    solution = streamed.answer
    result = streamed.result
    if options.observer is not None:
        options.observer(Ran(number, solution, result))
    done = outcomes(result)
    plan_message = {"type": "plan", "plan": list(streamed.calls), "mode": Mode.EAGER.value,
                    "outcomes": [o.to_json() for o in done]}
    nodes = [node.index for node in result.plan.nodes]  # each node's call, by node id
    errors = [error_message("late-writer", f"call {nodes[w]} arrived after call {nodes[r]} had "
                            f"started, and writes what call {nodes[r]} read: put writers "
                            "before their readers", {"writer": nodes[w], "reader": nodes[r]})
              for w, r in streamed.late]
    stopped = streamed.invalid is not None or streamed.failure is not None
    if not streamed.calls and streamed.output is None and not stopped:
        errors.append(_no_progress())
    ran = PlanRun(result.context, usage, plan_message if streamed.calls else None,
                  tuple(done), cancelled=result.status is RunStatus.CANCELLED)
    after = evolve(state, context=ran.context)
    if streamed.failure is not None:  # what ran keeps its outcomes and writes (§9)
        failure = streamed.failure
        if isinstance(failure, BudgetExceeded):
            errors.append(error_message("BudgetExceeded", failure.detail,
                                        {"budget": failure.budget, "limit": failure.limit}))
        return _ended(after, number, solution, usage, errors, ran,
                      end=(AgentStatus.FAILED, None, str(failure)))
    if streamed.invalid is not None:
        errors.append(streamed.invalid)
    if ran.cancelled:  # what finished is kept; the run ends here
        return _ended(after, number, solution, usage, errors, ran, end=_cancelled(number))
    if streamed.invalid is not None:
        return _ended(after, number, solution, usage, errors, ran)
    return _conclude(state, number, solution, streamed.output, ran, errors)


async def _no_items() -> AsyncIterator[StreamItem]:
    """An empty stream (a replayed tick reads none)."""
    return
    yield  # pragma: no cover - makes this an async generator
