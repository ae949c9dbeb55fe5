"""The state of a streamed tick (:mod:`obelisk.agent.stream`), shared with its replay
(:mod:`obelisk.agent.streamreplay`): what arrived, what the machine holds, and the
functions both the live tick and its replay call to admit calls and to end the stream."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from attrs import frozen

from obelisk.agent.judging import Judge
from obelisk.agent.source import StreamJournal
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.values import MISSING
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.result import RunResult
from obelisk.interpreters.state import RunState
from obelisk.llm.answers import Unusable
from obelisk.llm.base import LLMError, Usage

__all__ = ["CompilePart", "Streamed", "StreamedRun", "admitted", "closing_solution",
           "late_writers", "whole_plan"]


@frozen
class StreamedRun:
    """What a streamed tick gave: the run's result, the calls and output as they arrived,
    the usage, the ``late-writer`` pairs ``(writer, reader)``, the ``InvalidSolution``
    error when the whole solution was not valid (None: it was), the adapter's failure
    when the stream broke (the calls that ran keep their outcomes in ``result``), and
    when each call arrived and started (monotonic seconds, by call index) for the
    figures."""

    result: RunResult
    calls: tuple[Any, ...]
    output: Any
    usage: Usage
    late: tuple[tuple[int, int], ...]
    invalid: dict[str, Any] | None
    arrived: tuple[float, ...]
    started: dict[int, float]
    failure: LLMError | None = None
    #: The answer as the tick records it (what a whole tick's ``Tick.solution`` holds).
    answer: Any = None


#: Compiles the calls seen so far; ``open`` while the stream is open.
CompilePart = Callable[[list[Any], bool], CompiledPlan]


class Streamed:
    """The bookkeeping of one streamed tick (only its own loop and tasks touch it)."""

    def __init__(self, state: RunState, timeout: float | None, journal: StreamJournal,
                 compile_part: CompilePart, judge: Judge,
                 scope: Callable[[Invocation], AbstractContextManager[Any]] | None = None
                 ) -> None:
        self.state = state
        self.queue: asyncio.Queue[tuple[Any, Any]] = asyncio.Queue()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.calls: list[Any] = []
        self.output: Any = None
        self.solution: Any = MISSING  # the answer as a whole, when the adapter gave it
        self.unusable: Unusable | None = None  # why the answer stopped being usable
        self.usage = Usage()
        self.late: list[tuple[int, int]] = []
        self.invalid: dict[str, Any] | None = None
        self.answer: Any = None  # the answer as the stream ended (closing_solution)
        self.failure: LLMError | None = None
        self.arrived: list[float] = []
        self.started: dict[int, float] = {}
        self.open = True
        self.pause_until = 0.0  # monotonic seconds: calls arriving before then wait to batch
        self.admitted_at = float("-inf")  # when the last admission began
        self.timeout = timeout
        self.journal = journal
        self.compile_part = compile_part
        self.judge = judge
        #: The context a call's activity runs in (its span current, when traced).
        self.scope = scope or _no_scope

    @property
    def stopped(self) -> bool:
        """Nothing more starts: the solution is invalid, or the stream broke."""
        return self.invalid is not None or self.failure is not None


def _no_scope(invocation: Invocation) -> AbstractContextManager[Any]:
    """The context of a call no tracer follows: nothing."""
    return nullcontext()


def late_writers(plan: CompiledPlan, state: RunState, first_new: int) -> list[tuple[int, int]]:
    """The (writer, reader) node pairs where a node from ``first_new`` on writes what an
    earlier node that already left PENDING read."""
    pairs = []
    for writer in range(first_new, len(plan.nodes)):
        for reader in plan.successors[writer]:
            if reader < first_new and state.status[reader].value != "pending":
                pairs.append((writer, reader))
    return pairs


def admitted(run: Streamed, calls: list[Any]) -> CompiledPlan:
    """The run's plan with ``calls`` appended, each judged against its branch of the
    solution schema under its own index; notes the late writers they add."""
    first_call = len(run.calls)
    run.calls.extend(calls)
    first_new = len(run.state.plan.nodes)
    plan = run.judge.judged(run.compile_part(run.calls, True), first_call)
    run.late.extend(late_writers(plan, run.state, first_new))
    return plan


def closing_solution(run: Streamed) -> Any:
    """The solution as the stream ended: the adapter's whole answer (its calls as they
    arrived), an unusable one's record, or the calls and output as they arrived."""
    if run.unusable is not None:
        return run.unusable.to_json()
    if run.solution is MISSING:
        return {"calls": list(run.calls), "output": run.output}
    if isinstance(run.solution, dict) and isinstance(run.solution.get("calls"), list):
        return {**run.solution, "calls": list(run.calls)}
    return run.solution


def whole_plan(run: Streamed) -> CompiledPlan:
    """The run's calls compiled as a whole (closed), judged as they were."""
    return run.judge.judged(run.compile_part(run.calls, False))
