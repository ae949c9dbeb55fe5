"""A recorded run's events as plain JSON rows, for people and for ``obelisk history``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from obelisk.journal.agentruns import recorded_agent, run_kind
from obelisk.journal.run import recorded
from obelisk.journal.store import JournalUnreadable, RecordKind

if TYPE_CHECKING:
    from obelisk.journal.journal import Journal

#: An agent run's own rows whose node is a tick.
_AGENT_ROWS = frozenset({RecordKind.ADMIT, RecordKind.REVIEW, RecordKind.USAGE,
                         RecordKind.DELEGATE})


def history(journal: Journal, run_id: str | None = None) -> dict[str, Any]:
    """The run ``run_id`` (None: the newest) as ``{"run", "created", "status", "events"}``.

    Each event is ``{"seq", "event"}`` plus, by kind, the call's ``call`` index and
    ``instance``, the ``tick`` of a solution, the idempotency ``key`` of an invocation,
    the ``date`` and ``outcome`` of a finished call, the ``verdict`` of a decision, the
    ``status`` of the end. ``status`` is the recorded end's, else ``"unfinished"``.
    An agent run's call events carry their ``tick`` and ``node`` (the call's node in that
    tick's plan) instead of ``call``, and ``kind`` is ``"agent"``; its own events carry
    their ``tick`` and: a streamed call admitted its ``call``, an ``on_plan`` review its
    ``verdict``, tokens paid their ``usage`` (``input_tokens``, ``output_tokens``), a
    delegated call the ``run`` that records its delegate.
    """
    if run_kind(journal, run_id) == "agent":
        header = recorded_agent(journal, run_id).header
        nodes = None
    else:
        run = recorded(journal, run_id)
        header, nodes = run.header, run.plan.nodes
    events: list[dict[str, Any]] = []
    status = "unfinished"
    tick = 0
    for record in journal.records(header.run_id):
        row: dict[str, Any] = {"seq": record.seq, "event": record.kind.value}
        data: Any = record.data
        if data and record.kind is not RecordKind.INVOKE:
            try:
                data = json.loads(data)
            except ValueError:
                raise JournalUnreadable(f"{journal.name}: event {record.seq} holds text that "
                                        "is not JSON: the journal is damaged") from None
        if record.kind is RecordKind.SOLUTION:
            row["tick"] = tick = record.node or 0
            row["solution"] = data
        elif record.kind in _AGENT_ROWS:
            row["tick"] = record.node
            if record.kind is RecordKind.ADMIT:
                tick = record.node or 0
                row["call"] = data
            elif record.kind is RecordKind.REVIEW:
                row["verdict"] = data
            elif record.kind is RecordKind.USAGE:
                row["usage"] = {"input_tokens": data["in"], "output_tokens": data["out"]}
            else:
                row["run"] = data["run"]
        elif record.node is not None and nodes is None:
            row["tick"], row["node"] = tick, record.node
        elif record.node is not None and nodes is not None:
            if not 0 <= record.node < len(nodes):
                raise JournalUnreadable(f"{journal.name}: event {record.seq} names call node "
                                        f"{record.node}, which the plan does not have")
            node = nodes[record.node]
            row["call"] = node.index
            if node.instance is not None:
                row["instance"] = node.instance
        if record.kind is RecordKind.INVOKE:
            row["key"] = data
        elif record.kind is RecordKind.FINISH:
            row["date"] = data.pop("date")
            row["outcome"] = data
        elif record.kind is RecordKind.DECIDE:
            row["verdict"] = data
        elif record.kind is RecordKind.END:
            status = data["status"]
            row.update(data)
        elif record.kind is RecordKind.RESUME:
            row.update(data)
        events.append(row)
    out = {"run": header.run_id, "created": header.created, "status": status,
           "events": events}
    if nodes is None:
        out["kind"] = "agent"
    return out
