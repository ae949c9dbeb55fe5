"""What a journal recorded, told again as call events: a resumed run (a plan's, or an agent
tick replayed) tells the calls its journal had before it goes on, so its event stream is
as complete as an uninterrupted run's; ``obelisk report run.db`` reads a run so.

The rows go through the follower a live run's events go through (the machine's own
replay): each call event is marked ``replayed`` and carries the time the journal recorded
for it (a call's ready, start and finish times; rows written before obelisk recorded
times carry the time of the last recorded event before them, else the clock's).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any

from obelisk.interpreters.events import Finished, Started
from obelisk.interpreters.follower import PlanFollower
from obelisk.journal.codec import decode
from obelisk.journal.store import Record, RecordKind

__all__ = ["dated", "retell", "row_time", "seconds", "started_times"]


def retell(follower: PlanFollower, records: Sequence[Record], where: str) -> None:
    """Tell ``follower`` the call events ``records`` (one run's or one tick's rows) hold,
    in their order, marked ``replayed`` and dated as recorded; ``where`` names the journal
    in errors."""
    begun = started_times(records)
    follower.marks = {"replayed": True}
    try:
        for record in records:
            kind = record.kind
            if kind is RecordKind.INVOKE:
                if record.node is not None:
                    _dated(follower, begun.get(record.node))
                    follower.invoked(record.node)
                continue
            if kind not in _CALL_ROWS:
                continue
            follower.retold_seq = record.seq
            for event in decode((record,), where):
                _dated(follower, row_time(record, event))
                follower(event)
                if isinstance(event, Started):  # the journal writes a batch's first only
                    for other in follower.batch():
                        follower(Started(other, {}))
        follower.end()  # a run (a tick) that had ended: the skips its end made
    finally:
        follower.marks, follower.retold_seq = {}, None


_CALL_ROWS = frozenset({RecordKind.START, RecordKind.DECIDE, RecordKind.FINISH})
_TIMED_ROWS = _CALL_ROWS


def _dated(follower: PlanFollower, when: float | None) -> None:
    if when is not None:
        follower.marks["time"] = when


def started_times(records: Sequence[Record]) -> dict[int, float]:
    """When each call's activity started, as its finish row records it."""
    found: dict[int, float] = {}
    for record in records:
        if record.kind is RecordKind.FINISH and record.node is not None and record.data:
            data = _object(record.data)
            if isinstance(data.get("started"), (int, float)):
                found[record.node] = float(data["started"])
    return found


def row_time(record: Record, event: Any = None) -> float | None:
    """The time a row records: a start row's (the batch made ready), a decide row's (the
    verdict), a finish row's (the outcome; for rows written before times were, its date
    when it reads as one)."""
    if record.kind in _TIMED_ROWS:
        data = _object(record.data)
        if isinstance(data.get("t"), (int, float)):
            return float(data["t"])
    if isinstance(event, Finished):
        return seconds(event.date)
    return None


def _object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def seconds(text: str, default: float | None = None) -> float | None:
    """An ISO 8601 date as seconds since the epoch (``default`` when it does not read: a
    run's own clock may stamp anything)."""
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError, AttributeError):
        return default
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def dated(events: list[dict[str, Any]], created: float, status: str, kind: str,
          since: float) -> list[dict[str, Any]]:
    """A journal's events as a report reads them: the events that are not replayed (the
    run's start, a plan, a tick's start and end) and the replayed ones the journal holds
    no time for (dated at or after ``since``, when the reading began: rows written before
    obelisk recorded times) dated by the replayed event before them (the first ones by the
    run's creation), numbered from 1, and the run's recorded end (``status``) last, with
    its duration (and an agent's tokens)."""
    when = created
    for seq, event in enumerate(events, 1):
        if event.get("replayed") and event["time"] < since:
            when = event["time"]
        else:
            event["time"] = when
        event["seq"] = seq
    first = events[0]["time"] if events else created
    ending: dict[str, Any] = {"seq": len(events) + 1, "type": "run_ended", "time": when,
                              "kind": kind, "status": status, "duration": when - first}
    if kind == "agent":
        ticks = [e for e in events if e["type"] == "tick_ended" and "delegate" not in e]
        for name in ("input_tokens", "output_tokens"):
            ending[name] = sum(e.get(name) or 0 for e in ticks)
    events.append(ending)
    return events
