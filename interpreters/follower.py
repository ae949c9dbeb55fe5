"""The follower of one plan run: the machine's run events (an interpreter's observer
events) as call events of the typed stream (:mod:`obelisk.interpreters.stream`).

It folds each event through the machine (``replay_open``/``replay_more``, the functions
the run used, no rule of its own) to learn each call's final status, its alternative and
the calls the machine skipped, with their reasons.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.core.plain import thaw
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.common import reads_calls
from obelisk.interpreters.events import (
    FINAL,
    Admitted,
    Cancelled,
    Closed,
    Decided,
    Finished,
    RunEvent,
    Started,
    Status,
    Waiting,
)
from obelisk.interpreters.executors import AsyncExecutor, SyncExecutor
from obelisk.interpreters.machine import advance
from obelisk.interpreters.outcomes import Approve, Deny, Outcome
from obelisk.interpreters.replaying import Folding, replay_open
from obelisk.interpreters.state import RunState
from obelisk.interpreters.stream import Emitter

__all__ = ["MAX_EDGES_TOLD", "Joined", "PlanFollower", "followed_async", "followed_sync",
           "joined"]


class Rows(Protocol):
    """The journal a durable run records into, as its events name it: a call's
    idempotency key, the sequence number of the row recorded last."""

    last_seq: int

    def key_for(self, index: int, instance: str | None) -> str: ...


class PlanFollower:
    """One plan run's call events, from the machine's run events (an observer); a durable
    run's (``rows``: its recorder, which sees each event first) name each call's
    idempotency key and the journal row of its outcome."""

    def __init__(self, emitter: Emitter, plan: CompiledPlan, context: Context | None, *,
                 tick: int | None = None, isolate_invalid: bool = False, open: bool = False,
                 approvals: bool = False, rows: Rows | None = None) -> None:
        self.emitter, self.plan, self.tick, self.rows = emitter, plan, tick, rows
        # the machine's state as the run's events leave it, folded one event at a time
        self.folding = Folding(replay_open(plan, context, (), isolate_invalid=isolate_invalid,
                                           open=open), approvals=approvals)
        self.reported = set(self.folding.state.reasons)  # skips told already
        self.ended: set[int] = set()
        self.cancelled = False
        self.lost = False  # the fold failed (a run picked up midway): events go on, unfolded
        self.told = 0  # how many of the plan's nodes the ``plan`` events described
        self.readied: set[int] = set()  # the nodes told ``call_ready``
        self.reads_calls = emitter.content  # the call of a Started event: only as content
        #: Fields every call event gets besides its own: a journal's retelling of what a
        #: run recorded marks its events ``replayed`` and dates them as recorded.
        self.marks: dict[str, Any] = {}
        #: The journal row being retold (its outcome's row, not the recorder's last one).
        self.retold_seq: int | None = None

    def _call(self, node: int, **fields: Any) -> dict[str, Any]:
        found = self.folding.state.plan.nodes[node]
        out: dict[str, Any] = {"call": found.index, "node": node, "tool": found.tool}
        if found.instance is not None:
            out["instance"] = found.instance
        if self.tick is not None:
            out["tick"] = self.tick
        out.update(fields)
        if self.marks:
            out.update(self.marks)
        return out

    def _fold(self, event: RunEvent) -> None:
        if self.lost:
            return
        try:
            self.folding.more(event)
        except Exception:  # noqa: BLE001 - a run the follower did not see begin: it
            self.lost = True  # still tells what it sees, and never stops the run
            return
        self._skips(self.folding.state)

    def _skips(self, state: RunState) -> None:
        """``call_skipped`` for each call the machine skipped since last told."""
        reasons = state.reasons
        if len(reasons) == len(self.reported):
            return
        for node in sorted(set(reasons) - self.reported):
            self.reported.add(node)
            if state.status[node] is Status.SKIPPED:
                self.emitter.emit("call_skipped", **self._call(node, reason=reasons[node]))

    def describe(self) -> None:
        """``plan``: the plan's nodes and edges (its structure; the calls as written only
        as content), once, and again for the nodes a streamed run admitted since."""
        plan = self.folding.state.plan
        if self.told == len(plan.nodes):
            return
        nodes = plan.nodes[self.told:]
        fields: dict[str, Any] = {"nodes": [_node_of(node) for node in nodes]}
        first = self.told
        if len(plan.edges) <= MAX_EDGES_TOLD:
            fields["edges"] = [[e.writer, e.reader, list(e.alternatives)] for e in plan.edges
                               if e.reader >= first or e.writer >= first]
        else:
            fields["edges_omitted"] = len(plan.edges)
        if self.tick is not None:
            fields["tick"] = self.tick
        if self.emitter.content:
            fields["calls"] = [thaw(node.call) for node in nodes]
        self.told = len(plan.nodes)
        self.emitter.emit("plan", **fields)

    def __call__(self, event: RunEvent | Waiting) -> None:
        """Observe one machine event (a ``Waiting`` notice tells nothing)."""
        self.describe()
        emit = self.emitter.emit
        match event:
            case Started(node=node, call=call):
                self._fold(event)
                fields: dict[str, Any] = {}
                if self.emitter.content:
                    resolved = call or self._resolved(node)
                    if resolved:
                        fields["params"] = resolved
                self.readied.add(node)
                emit("call_ready", **self._call(node, **fields))
            case Decided(node=node, verdict=verdict):
                self._fold(event)
                emit("call_approved", **self._call(node, **_verdict(verdict)))
                self._ended(node)
            case Finished(node=node, outcome=outcome):
                self._fold(event)
                self._ended(node, outcome)
            case Cancelled():
                self.cancelled = True
                running = [n for n, s in enumerate(self.folding.state.status)
                           if s is Status.RUNNING]
                self._fold(event)
                for node in running:
                    self._ended(node)
            case Admitted(plan=extended):
                before = len(self.folding.state.plan.nodes)
                self._fold(event)
                self.describe()
                for added in extended.nodes[before:]:
                    emit("call_admitted", **self._call(added.id))
            case Closed():
                self._fold(event)
                state = self.folding.state  # closing fails the readers nothing will write
                for node, status in enumerate(state.status):
                    if status in FINAL and status is not Status.SKIPPED and node not in self.ended:
                        self._ended(node)

    def _resolved(self, node: int) -> dict[str, Any] | None:
        """The resolved call of a started node, as the fold made it (a streamed tick's
        Started events carry none)."""
        invocation = self.folding.started(node)
        return invocation.call if invocation is not None else None

    def _ended(self, node: int, outcome: Outcome | None = None) -> None:
        """``call_finished`` for a call that reached a final status (once)."""
        state = self.folding.state
        status = state.status[node] if node < len(state.status) else Status.RUNNING
        if self.lost and outcome is not None:
            status = Status.FAILED if type(outcome).__name__ == "Raised" else Status.EXECUTED
        if status in (Status.PENDING, Status.RUNNING) or node in self.ended:
            return
        self.ended.add(node)
        fields: dict[str, Any] = {"outcome": status.value,
                                  "alternative": state.alts.get(node, 0)}
        if status is Status.EXECUTED:
            fields.update(_taken(state.plan.nodes[node], fields["alternative"]))
        if self.rows is not None and node < len(state.plan.nodes):
            found = state.plan.nodes[node]
            fields["key"] = self.rows.key_for(found.index, found.instance)
            if outcome is not None:  # (the row of the Finished event just recorded)
                fields["journal_seq"] = (self.retold_seq if self.retold_seq is not None
                                         else self.rows.last_seq)
        if node in state.reasons:
            fields["reason"] = state.reasons[node]
        error = state.errors.get(node)
        if error is not None:
            fields["error"] = _error_of(thaw(error))
        if self.emitter.content and outcome is not None and hasattr(outcome, "value"):
            fields["result"] = _plain(outcome.value)
        self.emitter.emit("call_finished", **self._call(node, **fields))

    def batch(self) -> list[int]:
        """The started calls not told ``call_ready`` yet (a loop that tells only the first
        of a batch: the streamed tick's journal)."""
        return [i.node for i in self.folding.under_way() if i.node not in self.readied]

    def started(self, invocation: Invocation) -> dict[str, Any]:
        """``call_started``: the call's activity is about to run."""
        return self.invoked(invocation.node)

    def invoked(self, node: int) -> dict[str, Any]:
        """``call_started`` for node ``node`` (a journal's invoke row, retold)."""
        self.describe()
        return self.emitter.emit("call_started", **self._call(node))

    def scope(self, invocation: Invocation) -> AbstractContextManager[Any]:
        """The tracer's context for ``invocation``'s call while its activity runs, for a
        loop that runs it itself (the streamed tick; the others are :meth:`wrap_async`)."""
        return self.emitter.scope({"type": "call_started", **self._call(invocation.node)})

    def end(self) -> None:
        """The run's last skips: those the machine's final ``advance`` makes (a run
        returns without asking it once nothing can run)."""
        self.describe()
        state = self.folding.state
        if not self.cancelled and not self.lost and state.running == 0 and not state.open:
            self._skips(advance(state)[0])

    def wrap_sync(self, invoke: SyncExecutor) -> SyncExecutor:
        """The sync executor ``invoke``, telling ``call_started`` first and running in
        the tracer's context."""
        def run(invocation: Invocation, wait: Callable[[Any], Any]) -> Outcome:
            with self.emitter.scope(self.started(invocation)):
                return invoke(invocation, wait)
        return run

    def wrap_async(self, invoke: AsyncExecutor) -> AsyncExecutor:
        """The asyncio executor ``invoke``, as :meth:`wrap_sync`."""
        async def run(invocation: Invocation) -> Outcome:
            with self.emitter.scope(self.started(invocation)):
                return await invoke(invocation)
        return run


class Joined:
    """Two observers of one run, in order (the caller's, then the follower)."""

    def __init__(self, first: Any, second: PlanFollower) -> None:
        self.first, self.second = first, second
        self.reads_calls = reads_calls(first) or second.reads_calls

    def __call__(self, event: RunEvent | Waiting) -> None:
        self.first(event)
        self.second(event)


def joined(observer: Any, follower: PlanFollower | None) -> Any:
    """The run's observer: ``follower`` alone, or after the caller's ``observer`` (the
    caller's alone when nobody follows the run)."""
    if follower is None:
        return observer
    return follower if observer is None else Joined(observer, follower)


def followed_sync(follower: PlanFollower | None, invoke: SyncExecutor) -> SyncExecutor:
    """``invoke``, telling ``follower`` each call that starts (as it is, without one)."""
    return invoke if follower is None else follower.wrap_sync(invoke)


def followed_async(follower: PlanFollower | None, invoke: AsyncExecutor) -> AsyncExecutor:
    """:func:`followed_sync` for the asyncio loop."""
    return invoke if follower is None else follower.wrap_async(invoke)


#: Past this many edges a ``plan`` event leaves them out (says how many there were).
MAX_EDGES_TOLD = 50_000


def _node_of(node: Any) -> dict[str, Any]:
    """A node as the ``plan`` event describes it."""
    out: dict[str, Any] = {"node": node.id, "call": node.index, "tool": node.tool}
    if node.instance is not None:
        out["instance"] = node.instance
    if node.output_text is not None:
        out["output"] = node.output_text
    return out


def _taken(node: Any, alternative: int) -> dict[str, str]:
    """``output_path``: the ``_outputPath`` alternative a call wrote, as written."""
    if node.output is None or alternative >= len(node.output.alternatives):
        return {}
    span = node.output.alternatives[alternative].span
    return {"output_path": node.output_text[span.start:span.end]}


def _error_of(message: Any) -> dict[str, str]:
    """An error message's type and text."""
    data = message.get("data") if isinstance(message, dict) else None
    found = data.get("error") if isinstance(data, dict) else None
    if not isinstance(found, dict):
        return {"type": "", "message": ""}
    return {"type": str(found.get("type", "")), "message": str(found.get("message", ""))}


def _verdict(verdict: Any) -> dict[str, Any]:
    if isinstance(verdict, Approve):
        return {"verdict": "approve"}
    if isinstance(verdict, Deny):
        return {"verdict": "deny", "reason": verdict.reason}
    return {"verdict": "replace"}


def _plain(value: Any) -> Any:
    """A value as JSON can hold it (its repr when it is not JSON)."""
    from obelisk.interpreters.records import json_or_repr

    return json_or_repr(value)
