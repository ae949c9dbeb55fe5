"""The journal of one streamed agent tick (:class:`StreamTick`): its recorded steps, to
replay, and the recording of what happens now into the run's recorder."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from obelisk.agent.source import StreamStep
from obelisk.compiler.nodes import CompiledPlan
from obelisk.compiler.plan import compile_plan
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.events import RunEvent
from obelisk.interpreters.follower import Rows
from obelisk.interpreters.outcomes import Outcome
from obelisk.journal.agentrows import usage_data
from obelisk.journal.codec import decode, dumps
from obelisk.journal.retell import row_time, started_times
from obelisk.journal.session import Session, at_most_once, interrupted
from obelisk.journal.store import JournalUnreadable, Record, RecordKind
from obelisk.llm.base import Usage

if TYPE_CHECKING:
    from obelisk.journal.agent import AgentRun


class StreamTick:
    """The journal of one streamed tick (the agent loop's
    :class:`~obelisk.agent.source.StreamJournal`): its recorded steps, decoded, and the
    recording of the rest of it into the run's recorder."""

    def __init__(self, run: AgentRun, tick: int, rows: list[Record]) -> None:
        self.run = run
        self.tick = tick
        self.begun = time.time()  # the stream is asked for right after
        recorder = run.recorder
        recorder.begin_tick(tick, compile_plan([]))
        self.steps: list[StreamStep] = []
        self.times: list[float | None] = []
        self.seqs: list[int] = []  # each step's row
        self.rows: Rows | None = recorder  # the event stream names keys and rows from it
        calls: list[Any] = []
        invoked: set[int] = set()
        finished: set[int] = set()
        begun = started_times(rows)
        try:
            for record in rows:
                when, before = row_time(record), len(self.steps)
                if record.kind is RecordKind.ADMIT:
                    calls.append(json.loads(record.data or ""))
                    self.steps.append(("admit", calls[-1]))
                elif record.kind is RecordKind.SOLUTION:
                    self.steps.append(("close", json.loads(record.data or "")))
                elif record.kind is RecordKind.INVOKE and record.node is not None:
                    invoked.add(record.node)
                    self.steps.append(("invoke", record.node))
                    when = begun.get(record.node)
                else:
                    if record.kind is RecordKind.FINISH and record.node is not None:
                        finished.add(record.node)
                    decoded = decode([record], run.journal.name)
                    self.steps.extend(("event", e) for e in decoded)
                    self.times.extend([when] * (len(decoded) - 1))
                    if not decoded:
                        continue
                self.times.append(when)
                self.seqs.extend([record.seq] * (len(self.steps) - before))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise JournalUnreadable(f"{run.journal.name}: run {run.run_id!r}: streamed tick "
                                    f"{tick} does not decode ({exc!r})") from None
        self.session = Session(recorder, None, frozenset(invoked - finished), run.ended)
        self._seen: set[int] = set()

    def follow(self, plan: CompiledPlan) -> None:
        """The tick's plan as replayed (its nodes name the keys of the calls run again)."""
        self.run.recorder.plan = plan

    def admitted(self, call: Any, plan: CompiledPlan) -> None:
        """Record the call, on disk before it can start; follow the grown plan."""
        self.run.recorder.plan = plan
        self.run.recorder.record(RecordKind.ADMIT, self.tick, dumps(call), commit=True)

    def started(self, node: int) -> None:
        """Record that the machine started a batch (``node`` its first call)."""
        self.run.recorder.started(node)

    def decided(self, event: RunEvent) -> None:
        """Record the approval hook's verdict, on disk before the call runs."""
        self.run.recorder(event)

    def invoke(self, invocation: Invocation) -> Outcome | None:
        """Record the invocation and give the call its idempotency key (or the Interrupted
        outcome of an at-most-once call that was running at the stop)."""
        stopped = interrupted(self.session, invocation, self._seen)
        if stopped is not None:
            return stopped
        invocation.call["_idempotencyKey"] = self.run.recorder.invoking(
            invocation.node, commit=self.run.dry or at_most_once(invocation.tool))
        return None

    def finished(self, event: RunEvent) -> None:
        """Record a call's outcome (and its date), or the tick's cancellation, on disk
        before the run goes on."""
        self.run.recorder(event)

    def closed(self, solution: Any, usage: Usage) -> None:
        """Record the whole solution and its cost when the stream ended."""
        paid = usage.input_tokens or usage.output_tokens
        self.run.recorder.record_solution(
            self.tick, solution, usage_data(usage, self.begun, time.time()) if paid else None)
        self.run.recorder.settle()
