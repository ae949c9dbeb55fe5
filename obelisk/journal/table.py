"""A recorded run's events as plain JSON rows, for people and for ``obelisk history``.

Each kind of row is read by one function of :data:`_READERS`, which checks its shape: a
row of the wrong shape (valid JSON, but not what its kind records) is refused with
:class:`JournalUnreadable` naming the run and the event, as any damage is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from obelisk.journal.agentrows import delegate_of, review_of, usage_of
from obelisk.journal.agentruns import recorded_agent, run_kind
from obelisk.journal.codec import outcome_of, verdict_of
from obelisk.journal.run import recorded
from obelisk.journal.store import JournalUnreadable, Record, RecordKind

if TYPE_CHECKING:
    from obelisk.compiler.nodes import Node
    from obelisk.journal.journal import Journal

#: An agent run's own rows whose node is a tick.
_AGENT_ROWS = frozenset({RecordKind.ADMIT, RecordKind.REVIEW, RecordKind.USAGE,
                         RecordKind.DELEGATE})


def history(journal: Journal, run_id: str | None = None) -> dict[str, Any]:
    """The run ``run_id`` (None: the newest) as ``{"run", "created", "status", "events"}``.

    Each event is ``{"seq", "event"}`` plus, by kind, the call's ``call`` index and
    ``instance``, the ``tick`` of a solution, the idempotency ``key`` of an invocation,
    the ``date`` and ``outcome`` of a finished call (and, when recorded, the ``time`` it
    finished and the time its activity was ``started``; a start's ``time``: when its batch
    was made ready), the ``verdict`` of a decision, the
    ``status`` of the end. ``status`` is the recorded end's, else ``"unfinished"``.
    An agent run's call events carry their ``tick``, their ``node`` in that tick's plan
    and the ``call`` index (with ``instance``: see :func:`_agent_calls`), and ``kind`` is
    ``"agent"``; its own events carry
    their ``tick`` and: a streamed call admitted its ``call``, an ``on_plan`` review its
    ``verdict``, tokens paid their ``usage`` (``input_tokens``, ``output_tokens``), a
    delegated call the ``run`` that records its delegate. Raises JournalUnreadable.
    """
    nodes: Sequence[Node] | None
    instanced = False
    if run_kind(journal, run_id) == "agent":
        agent = recorded_agent(journal, run_id)
        header, nodes, instanced = agent.header, None, bool(agent.options.get("instances"))
    else:
        run = recorded(journal, run_id)
        header, nodes = run.header, run.plan.nodes
    reader = _Reader(nodes)
    events: list[dict[str, Any]] = []
    for record in journal.records(header.run_id):
        try:
            events.append(reader.row(record))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise JournalUnreadable(
                f"{journal.name}: run {header.run_id!r}: event {record.seq} "
                f"({record.kind.value}) does not read ({exc!r}): the journal is damaged"
            ) from None
    out = {"run": header.run_id, "created": header.created, "status": reader.status,
           "events": events}
    if nodes is None:
        out["kind"] = "agent"
        _agent_calls(events, instanced)
    return out


def _agent_calls(events: list[dict[str, Any]], instanced: bool) -> None:
    """Give each call row of an agent run its ``call`` index: its node, when the run maps
    no instances (a node per call, in call order); else the index and ``instance`` that
    the idempotency key of the node's invocation in that tick names (a row of a call
    never invoked, skipped or denied, keeps its node only)."""
    keys: dict[tuple[int, int], tuple[int, str | None]] = {}
    if instanced:
        for row in events:
            if row["event"] == "invoke" and "node" in row:
                tick, index, instance = row["key"].rsplit("/", 3)[1:]
                keys[int(tick), row["node"]] = (int(index), unquote(instance) or None)
    for row in events:
        if "node" not in row:
            continue
        if not instanced:
            row["call"] = row["node"]
        elif (row["tick"], row["node"]) in keys:
            row["call"], instance = keys[row["tick"], row["node"]]
            if instance is not None:
                row["instance"] = instance


class _Reader:
    """Reads a run's rows in order: the tick an agent run's call rows belong to, and the
    status the last ``end`` row records."""

    def __init__(self, nodes: Sequence[Node] | None) -> None:
        self.nodes = nodes
        self.tick = 0
        self.status = "unfinished"

    def row(self, record: Record) -> dict[str, Any]:
        """One event as a JSON row (raises ValueError and kin for a row of another shape)."""
        row: dict[str, Any] = {"seq": record.seq, "event": record.kind.value}
        data: Any = record.data
        if data and record.kind is not RecordKind.INVOKE:
            data = json.loads(data)
        if record.kind is RecordKind.SOLUTION:
            row["tick"] = self.tick = _tick(record.node)
        elif record.kind in _AGENT_ROWS:
            row["tick"] = _tick(record.node)
            if record.kind is RecordKind.ADMIT:
                self.tick = row["tick"]
        elif record.node is not None:
            self._call(row, record.node)
        _READERS[record.kind](self, row, data)
        return row

    def _call(self, row: dict[str, Any], node: int) -> None:
        if self.nodes is None:
            row["tick"], row["node"] = self.tick, node
            return
        if not 0 <= node < len(self.nodes):
            raise IndexError(f"the plan has no call node {node}")
        found = self.nodes[node]
        row["call"] = found.index
        if found.instance is not None:
            row["instance"] = found.instance

    def end(self, row: dict[str, Any], data: Any) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("status"), str) \
                or type(data.get("errors")) is not int:
            raise ValueError("an end row holds no status and count of errors")
        self.status = data["status"]
        row.update(data)


def _tick(node: int | None) -> int:
    if type(node) is not int:
        raise ValueError(f"an agent row without its tick: {node!r}")
    return node


def _nothing(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    """cancel: the row says all."""


def _start(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    """start: when the batch was made ready (rows recorded before times were: nothing)."""
    if isinstance(data, dict) and isinstance(data.get("t"), (int, float)):
        row["time"] = data["t"]


def _key(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    if not isinstance(data, str):
        raise ValueError("an invoke row holds no idempotency key")
    row["key"] = data


def _finish(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    outcome_of(data)  # checks its shape
    row["date"] = data.pop("date")
    for name, said in (("t", "time"), ("started", "started")):  # when recorded
        if name in data:
            row[said] = data.pop(name)
    row["outcome"] = data


def _decide(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    verdict_of(data)  # checks its shape
    row["verdict"] = data


def _resume(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    if not isinstance(data, dict) or not isinstance(data.get("at"), str):
        raise ValueError("a resume row does not say when")
    row.update(data)


def _trace(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    if not isinstance(data, dict) or not isinstance(data.get("traceparent"), str):
        raise ValueError("a trace row holds no traceparent")
    row.update(data)


def _review(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    review_of(data)  # checks its shape
    for name in ("asked", "answered"):  # when recorded
        if name in data:
            row[name] = data.pop(name)
    row["verdict"] = data


def _usage(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    usage = usage_of(data)
    row["usage"] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def _delegate(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    row["run"] = delegate_of(data)


def _solution(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    row["solution"] = data


def _admit(reader: _Reader, row: dict[str, Any], data: Any) -> None:
    row["call"] = data


#: How each kind of row is read into its JSON row.
_READERS: dict[RecordKind, Callable[[_Reader, dict[str, Any], Any], None]] = {
    RecordKind.START: _start, RecordKind.CANCEL: _nothing, RecordKind.INVOKE: _key,
    RecordKind.FINISH: _finish, RecordKind.DECIDE: _decide, RecordKind.END: _Reader.end,
    RecordKind.RESUME: _resume, RecordKind.REVIEW: _review, RecordKind.USAGE: _usage,
    RecordKind.DELEGATE: _delegate, RecordKind.SOLUTION: _solution, RecordKind.ADMIT: _admit,
    RecordKind.TRACE: _trace,
}
