"""A recorded run's events as plain JSON rows, for people and for ``obelisk history``."""

from __future__ import annotations

import json
from typing import Any

from obelisk.journal.recorder import Journal
from obelisk.journal.run import recorded
from obelisk.journal.store import JournalUnreadable, RecordKind


def history(journal: Journal, run_id: str | None = None) -> dict[str, Any]:
    """The run ``run_id`` (None: the newest) as ``{"run", "created", "status", "events"}``.

    Each event is ``{"seq", "event"}`` plus, by kind, the call's ``call`` index and
    ``instance``, the ``tick`` of a solution, the idempotency ``key`` of an invocation,
    the ``date`` and ``outcome`` of a finished call, the ``verdict`` of a decision, the
    ``status`` of the end. ``status`` is the recorded end's, else ``"unfinished"``.
    """
    run = recorded(journal, run_id)
    nodes = run.plan.nodes
    events: list[dict[str, Any]] = []
    status = "unfinished"
    for record in journal.records(run.header.run_id):
        row: dict[str, Any] = {"seq": record.seq, "event": record.kind.value}
        data: Any = record.data
        if data and record.kind is not RecordKind.INVOKE:
            try:
                data = json.loads(data)
            except ValueError:
                raise JournalUnreadable(f"{journal.name}: event {record.seq} holds text that "
                                        "is not JSON: the journal is damaged") from None
        if record.kind is RecordKind.SOLUTION:
            row["tick"] = record.node
            row["solution"] = data
        elif record.node is not None:
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
    return {"run": run.header.run_id, "created": run.header.created, "status": status,
            "events": events}
