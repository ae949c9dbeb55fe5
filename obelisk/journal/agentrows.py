"""An agent run's rows read back: by tick (:class:`AgentRows`), and the JSON of the rows
that only agent runs have (plan reviews, token usage), each way."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from obelisk.agent.hooks import ApprovePlan, EditPlan, PlanVerdict, RejectPlan
from obelisk.core.context import Context
from obelisk.journal.codec import decided_by, digest_of, dumps, said
from obelisk.journal.store import JournalUnreadable, Record, RecordKind, end_status
from obelisk.llm.base import Usage

#: The rows of a tick's plan run (the others are the run's own).
TICK_ROWS = frozenset({RecordKind.START, RecordKind.INVOKE, RecordKind.DECIDE,
                       RecordKind.FINISH, RecordKind.CANCEL})

#: The ends a resume goes on from.
GOES_ON = frozenset({"cancelled", "failed"})


def usage_data(usage: Usage, asked: float | None = None, answered: float | None = None) -> str:
    """Tokens paid as a USAGE row's JSON; a solution's, with when the LLM was asked and
    when it answered (seconds since the epoch; rows written before these were have
    neither)."""
    data: dict[str, Any] = {"in": usage.input_tokens, "out": usage.output_tokens}
    if asked is not None and answered is not None:
        data.update(asked=asked, answered=answered)
    return dumps(data)


def usage_of(data: Any) -> Usage:
    """The tokens a USAGE row's JSON records (ValueError for another shape)."""
    if not isinstance(data, dict):
        raise ValueError(f"a usage row holds {type(data).__name__}, not an object")
    paid_in, paid_out = data["in"], data["out"]
    if type(paid_in) is not int or type(paid_out) is not int:
        raise ValueError("a usage row's token counts are not integers")
    return Usage(paid_in, paid_out)


def review_data(verdict: PlanVerdict) -> dict[str, Any]:
    """``on_plan``'s verdict as a REVIEW row's JSON, with who made it and why."""
    if isinstance(verdict, RejectPlan):
        return decided_by({"verdict": "reject", "reason": verdict.reason}, verdict.by, None)
    if isinstance(verdict, EditPlan):
        data: dict[str, Any] = {"verdict": "edit", "calls": list(verdict.calls)}
    else:
        data = {"verdict": "approve"}
    return decided_by(data, verdict.by, verdict.reason)


def review_of(data: Mapping[str, Any]) -> PlanVerdict:
    """The verdict a REVIEW row's JSON records (ValueError for another shape)."""
    if not isinstance(data, dict):
        raise ValueError(f"a review row holds {type(data).__name__}, not an object")
    by = said(data, "by")
    match data["verdict"]:
        case "approve":
            return ApprovePlan(by=by, reason=said(data, "reason"))
        case "edit" if isinstance(data["calls"], list):
            return EditPlan(list(data["calls"]), by=by, reason=said(data, "reason"))
        case "reject":
            return RejectPlan(str(data["reason"]), by=by)
    raise ValueError(f"unknown plan verdict {data['verdict']!r}")


def delegate_of(data: Any) -> str:
    """The run a DELEGATE row's JSON names (ValueError for another shape)."""
    if not isinstance(data, dict) or not isinstance(data.get("run"), str):
        raise ValueError("a delegate row does not name a run")
    return str(data["run"])


def agent_header(context: Context, tools: tuple[Any, ...],
                 options: Mapping[str, Any]) -> tuple[str, str]:
    """An agent run's header (its initial context, passed-in tools and options, marked
    ``"kind": "agent"``) as JSON text, and its digest."""
    header = {"calls": [], "context": context.to_json(), "tools": list(tools),
              "options": {"kind": "agent", **options}}
    text = dumps(header)
    return text, digest_of(text)


class AgentRows:
    """An agent run's rows by tick: each tick's plan rows, a streamed tick's rows, the
    tokens, reviews, admitted calls and invoked nodes recorded per tick, the delegates'
    runs (with their ticks) and the idempotency keys of the calls with an outcome.
    Raises :class:`JournalUnreadable` naming the run for a row that does not decode."""

    def __init__(self, where: str, records: Sequence[Record]) -> None:
        self.rows: dict[int, list[Record]] = {}
        self.streamed: dict[int, list[Record]] = {}  # a streamed tick's rows, all kinds
        self.usage: dict[int, Usage] = {}
        self.answers: dict[int, tuple[Usage, float | None, float | None]] = {}
        self.reviews: dict[int, PlanVerdict] = {}
        self.review_times: dict[int, tuple[float, float]] = {}
        self.admitted: dict[int, list[Any]] = {}
        self.invoked: dict[int, list[int]] = {}
        self.delegates: dict[str, int] = {}
        self.finished: set[str] = set()
        # A run cancelled, or failed because the LLM did, goes on when resumed (from the
        # tick it stopped at); one that ended otherwise replays to its result.
        self.ended = any(r.kind is RecordKind.END and end_status(r.data) not in GOES_ON
                         for r in records)
        self._keys: dict[int, str] = {}
        self._tick = 0
        try:
            for record in records:
                self._read(record)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise JournalUnreadable(f"{where}: a row does not decode ({exc!r}): the journal "
                                    "is damaged") from None

    def _read(self, record: Record) -> None:
        kind, node = record.kind, record.node
        if kind in TICK_ROWS:
            self.rows.setdefault(self._tick, []).append(record)
            if self._tick in self.streamed:
                self.streamed[self._tick].append(record)
            if kind is RecordKind.INVOKE and node is not None:
                self.invoked.setdefault(self._tick, []).append(node)
                self._keys[node] = record.data or ""
            elif kind is RecordKind.FINISH and node in self._keys:
                self.finished.add(self._keys[node])
        elif kind is RecordKind.DELEGATE and node is not None:
            self.delegates[delegate_of(json.loads(record.data or ""))] = node
        elif node is None:
            return
        elif kind is RecordKind.SOLUTION or kind is RecordKind.ADMIT:
            if node != self._tick:
                self._keys = {}
            self._tick = node
            if kind is RecordKind.ADMIT:
                self.streamed.setdefault(node, []).append(record)
                self.admitted.setdefault(node, []).append(json.loads(record.data or ""))
            elif node in self.streamed:
                self.streamed[node].append(record)
        elif kind is RecordKind.USAGE:
            data = json.loads(record.data or "")
            paid = usage_of(data)
            self.usage[node] = self.usage.get(node, Usage()) + paid
            if isinstance(data.get("asked"), (int, float)) and node not in self.answers:
                self.answers[node] = (paid, float(data["asked"]),
                                      float(data.get("answered") or data["asked"]))
        elif kind is RecordKind.REVIEW:
            data = json.loads(record.data or "")
            self.reviews[node] = review_of(data)
            asked, answered = data.get("asked"), data.get("answered")
            if isinstance(asked, (int, float)) and isinstance(answered, (int, float)):
                self.review_times[node] = (float(asked), float(answered))
