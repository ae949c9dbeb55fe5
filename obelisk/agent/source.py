"""Where the agent loop takes a tick's solution from and how it runs a tick's plan: the
:class:`TickSource` hook (``obelisk.journal`` implements it for a recorded run, and
:class:`NoJournal`, a Null Object, for a run that is not recorded).

The loop stays the loop: a source only answers "was this tick's solution recorded?",
records a new one, and runs a tick's plan (recording it, or replaying it through the
machine when it was recorded). The loop asks every run's source the same questions, so it
holds no "is this run recorded?" branch. The agent layer never imports the journal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from obelisk.agent.hooks import PlanVerdict
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.common import Observer
from obelisk.interpreters.events import RunEvent
from obelisk.interpreters.executors import AsyncExecutor
from obelisk.interpreters.follower import Rows
from obelisk.interpreters.outcomes import Outcome
from obelisk.interpreters.result import RunResult
from obelisk.llm.base import Reply, Usage

#: No tokens (a recorded solution's cost was paid already).
NO_USAGE = Usage()

#: A recorded solution's tokens, and when it was asked for and came (seconds since the
#: epoch; None when not recorded).
Answer = tuple[Usage, "float | None", "float | None"]


class TickSource(Protocol):
    """The journal of one agent run, as the loop sees it."""

    def recorded_reply(self, tick: int) -> Reply | None:
        """The solution recorded for ``tick`` (no usage: it was paid for already), or None
        when the LLM must be asked."""

    def record_solution(self, tick: int, solution: Any, usage: Usage = NO_USAGE) -> None:
        """Record the LLM's solution for ``tick`` and what it cost, on disk before anything
        of the tick runs."""

    def settle(self) -> None:
        """Commit what the tick recorded so far (at a tick's end, before a review)."""

    async def run_tick(self, tick: int, plan: CompiledPlan, context: Context,
                       invoke: AsyncExecutor, approve: Callable[[dict[str, Any]], Any] | None,
                       clock: Callable[[], str], *, max_concurrency: int | None,
                       timeout: float | None, observer: Observer | None = None) -> RunResult:
        """Run tick ``tick``'s plan (keeping going past invalid calls), recorded;
        ``observer`` follows its run events (the event stream)."""

    def end(self, status: str, errors: int) -> None:
        """Record the run's end."""

    def recorded_usage(self, tick: int) -> Usage:
        """The tokens recorded for ``tick`` before this process (work replayed, not paid
        again)."""

    def recorded_answer(self, tick: int) -> Answer | None:
        """What ``tick``'s recorded solution cost and when it was asked for and came, when
        recorded (a replayed tick's ``llm_answer``)."""

    def record_usage(self, tick: int, usage: Usage) -> None:
        """Record tokens paid during ``tick`` by a latent call or a delegate (with the
        call's outcome)."""

    def recorded_review(self, tick: int) -> PlanVerdict | None:
        """What ``on_plan`` said about ``tick``'s plan (lazy mode), when recorded."""

    def record_review(self, tick: int, verdict: PlanVerdict,
                      times: tuple[float, float] | None = None) -> None:
        """Record ``on_plan``'s verdict (and when it was asked and answered), before the
        plan runs."""

    def recorded_review_times(self, tick: int) -> tuple[float, float] | None:
        """When ``on_plan`` was asked about ``tick``'s plan and answered, when recorded."""

    def recorded_calls(self, tick: int) -> list[Any] | None:
        """The streamed calls of ``tick`` admitted before the stop (None: not streamed)."""

    def record_admitted(self, tick: int, call: Any) -> None:
        """Record a streamed call of ``tick`` as admitted, before it can start."""

    def invoked(self, tick: int) -> tuple[int, ...]:
        """The nodes of ``tick``'s plan recorded as invoked, in order (a dry run's mock
        turns follow it)."""

    def last_trace(self) -> str | None:
        """The trace context recorded last for the run (a resumed run links to it)."""

    def record_trace(self, traceparent: str) -> None:
        """Record the trace context of the run as it goes on here."""

    def stream_tick(self, tick: int) -> StreamJournal:
        """The journal of streamed tick ``tick``."""

    def delegate(self, tick: int, key: str, to: str) -> AgentJournal:
        """Where the delegate run by the call with idempotency key ``key`` of ``tick`` is
        recorded."""


#: A recorded step of a streamed tick, in order: ``("admit", call)``, ``("event", event)``
#: (Started, Decided, Finished), ``("invoke", node)`` (a call's activity invoked: for the
#: event stream, not the machine) or ``("close", output)`` (the stream ended with
#: ``output``).
StreamStep = tuple[str, Any]


class StreamJournal(Protocol):
    """The journal of one streamed tick: what was recorded of it (to replay), and the
    recording of what happens now."""

    #: The tick's recorded steps (empty for a tick not seen before).
    steps: list[StreamStep]
    #: When each step happened, as recorded (None where the journal holds no time).
    times: list[float | None]
    #: The journal row of each step (empty when not recorded).
    seqs: list[int]
    #: Where the tick is recorded, as the event stream names calls' keys and rows (None:
    #: not recorded).
    rows: Rows | None

    def follow(self, plan: CompiledPlan) -> None:
        """The tick's plan as the replay rebuilt it (nothing is recorded)."""

    def admitted(self, call: Any, plan: CompiledPlan) -> None:
        """A call arrived and was admitted (``plan``: the run's plan with it): on disk
        before it can start."""

    def started(self, node: int) -> None:
        """The machine started a batch of calls, ``node`` the first."""

    def decided(self, event: RunEvent) -> None:
        """The approval hook's verdict (a Decided event)."""

    def invoke(self, invocation: Invocation) -> Outcome | None:
        """A call is about to be invoked: record it and give it its idempotency key; or
        its ``Interrupted`` outcome (an at-most-once call that was running at the stop)."""

    def finished(self, event: RunEvent) -> None:
        """A call's outcome (a Finished event), or the tick's cancellation (Cancelled)."""

    def closed(self, solution: Any, usage: Usage) -> None:
        """The stream ended: the whole solution and what it cost."""


class AgentJournal(Protocol):
    """What ``run_agent(journal=...)`` takes: a journal that opens an agent run."""

    def agent_source(self, run_id: str | None, context: Context, tools: tuple[Any, ...],
                     options: Mapping[str, Any]) -> TickSource:
        """The run ``run_id`` (None: a new one) recorded in this journal."""


# -- a run that is not recorded -------------------------------------------------------------


class NoJournal:
    """The :class:`TickSource` of a run that is not recorded: nothing was recorded before
    (every tick asks the LLM and the hooks), recording does nothing, and a tick's plan
    runs through the asyncio interpreter as it is."""

    def recorded_reply(self, tick: int) -> Reply | None:
        """Nothing was recorded: the LLM is asked."""
        return None

    def record_solution(self, tick: int, solution: Any, usage: Usage = NO_USAGE) -> None:
        """Nothing is recorded."""

    def settle(self) -> None:
        """Nothing to commit."""

    async def run_tick(self, tick: int, plan: CompiledPlan, context: Context,
                       invoke: AsyncExecutor, approve: Callable[[dict[str, Any]], Any] | None,
                       clock: Callable[[], str], *, max_concurrency: int | None,
                       timeout: float | None, observer: Observer | None = None) -> RunResult:
        """The plan run through the asyncio interpreter, keeping going past invalid calls."""
        return await drive_async(plan, context, invoke, approve, clock,
                                 max_concurrency=max_concurrency, timeout=timeout,
                                 isolate_invalid=True, observer=observer,
                                 trace=False)

    def end(self, status: str, errors: int) -> None:
        """Nothing is recorded."""

    def recorded_usage(self, tick: int) -> Usage:
        """No work was replayed: none was paid before."""
        return NO_USAGE

    def recorded_answer(self, tick: int) -> Answer | None:
        """Nothing was recorded."""
        return None

    def record_usage(self, tick: int, usage: Usage) -> None:
        """Nothing is recorded."""

    def recorded_review(self, tick: int) -> PlanVerdict | None:
        """Nothing was recorded: ``on_plan`` is asked."""
        return None

    def record_review(self, tick: int, verdict: PlanVerdict,
                      times: tuple[float, float] | None = None) -> None:
        """Nothing is recorded."""

    def recorded_review_times(self, tick: int) -> tuple[float, float] | None:
        """Nothing was recorded."""
        return None

    def recorded_calls(self, tick: int) -> list[Any] | None:
        """Nothing was recorded."""
        return None

    def record_admitted(self, tick: int, call: Any) -> None:
        """Nothing is recorded."""

    def invoked(self, tick: int) -> tuple[int, ...]:
        """No node was invoked before."""
        return ()

    def last_trace(self) -> str | None:
        """Nothing was recorded."""
        return None

    def record_trace(self, traceparent: str) -> None:
        """Nothing is recorded."""

    def stream_tick(self, tick: int) -> StreamJournal:
        """A streamed tick that is not recorded either."""
        return NoStreamJournal()

    def delegate(self, tick: int, key: str, to: str) -> AgentJournal:
        """A delegate's run that is not recorded either."""
        return NO_JOURNAL


class NoStreamJournal:
    """The :class:`StreamJournal` of a streamed tick that is not recorded: no steps to
    replay, and recording does nothing."""

    def __init__(self) -> None:
        self.steps: list[StreamStep] = []
        self.times: list[float | None] = []
        self.seqs: list[int] = []
        self.rows: Rows | None = None

    def follow(self, plan: CompiledPlan) -> None:
        """Nothing is recorded."""

    def admitted(self, call: Any, plan: CompiledPlan) -> None:
        """Nothing is recorded."""

    def started(self, node: int) -> None:
        """Nothing is recorded."""

    def decided(self, event: RunEvent) -> None:
        """Nothing is recorded."""

    def invoke(self, invocation: Invocation) -> Outcome | None:
        """The call runs: it was never interrupted."""
        return None

    def finished(self, event: RunEvent) -> None:
        """Nothing is recorded."""

    def closed(self, solution: Any, usage: Usage) -> None:
        """Nothing is recorded."""


class _NoAgentJournal:
    """The :class:`AgentJournal` that records nothing: its runs' sources are NoJournals."""

    def agent_source(self, run_id: str | None, context: Context, tools: tuple[Any, ...],
                     options: Mapping[str, Any]) -> TickSource:
        """A source that records nothing."""
        return NoJournal()


#: The journal of runs that are not recorded (``run_agent`` without ``journal=``).
NO_JOURNAL: AgentJournal = _NoAgentJournal()
