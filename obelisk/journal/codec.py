"""Run events as journal rows and back; a run's header and its digest.

Only what the machine cannot derive is written: a Started row is the node alone (the
machine recomputes the resolved call), a Finished row is the outcome and the clock's
value, a Decided row the verdict.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.context import Context
from obelisk.core.errors import NotJSONError
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING, freeze, plainly_json
from obelisk.interpreters.events import (
    Admitted,
    Cancelled,
    Closed,
    Decided,
    Finished,
    RunEvent,
    Started,
)
from obelisk.interpreters.outcomes import (
    Approve,
    Chose,
    Deny,
    Outcome,
    Raised,
    Replace,
    Returned,
    Verdict,
)
from obelisk.journal.store import FORMAT_VERSION, JournalUnreadable, Record, RecordKind

#: One encoder for every row: ``json.dumps`` with options builds a new one per call, and
#: a run writes a row per event.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _c_encoder() -> Callable[[Any, int], Any] | None:
    # The C encoder behind _ENCODER, made once: JSONEncoder.encode makes a new one for
    # every value. Without the circular check's markers (kept per encoder, they are not
    # cleared when encoding fails): a value that holds itself recurses until Python's
    # recursion limit, and dumps then asks _ENCODER, which names the problem.
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - a Python without the _json accelerator
        return None
    return make(None, _ENCODER.default, json.encoder.encode_basestring, None,  # type: ignore[no-any-return]
                _ENCODER.key_separator, _ENCODER.item_separator, False, False, False)


_C_ENCODER = _c_encoder()

# Read for every call's row: an Enum member read through its class costs about 70 ns on
# Python 3.11, a module constant about 6.
_FINISH = RecordKind.FINISH


def dumps(value: Any) -> str:
    """Compact JSON text, keys in the order given (the order a context was written in)."""
    if _C_ENCODER is not None and type(value) is dict:
        try:
            return "".join(_C_ENCODER(value, 0))
        except (RecursionError, ValueError, TypeError):
            pass  # said again by the ordinary encoder, which names the problem
    return _ENCODER.encode(value)


def header_of(plan: CompiledPlan, context: Context, options: Mapping[str, Any]) -> tuple[str, str]:
    """A run's header (its calls, initial context, tools and options) as JSON text, and
    the digest of that text and the format version."""
    tools = [json.loads(tool.text) for tool in plan.tools.tools] if plan.tools else []
    header = {"calls": [thaw(call) for call in plan.calls], "context": context.to_json(),
              "tools": tools, "options": dict(options)}
    text = dumps(header)
    return text, digest_of(text)


def digest_of(header: str, version: int = FORMAT_VERSION) -> str:
    """The SHA-256 of a header's text and the format version, in hex."""
    return hashlib.sha256(f"{version}\n{header}".encode()).hexdigest()


def _finished(outcome: Outcome, date: str) -> dict[str, Any]:
    # A FINISH row's data: the date, then the outcome.
    if isinstance(outcome, Returned):  # most rows: without the match's pattern tests
        return {"date": date, "returned": outcome.value}
    match outcome:
        case Chose(path=path, value=value):
            return {"date": date, "chose": path, "value": value}
        case Raised(type=etype, message=message, data=data, contract=contract):
            out: dict[str, Any] = {"date": date, "raised": etype, "message": message}
            if data is not MISSING:
                out["data"] = data
            if contract:
                out["contract"] = True
            return out
    raise TypeError(f"not an outcome: {outcome!r}")  # pragma: no cover


def _not_json(outcome: Outcome, dropped: bool) -> Outcome:
    """The outcome as the machine will take it. A value that is not JSON is a NotJSON
    failure with this text (the machine's ``_write`` words it the same way; the journal
    tests compare a replay with the run), unless the call is fire-and-forget: its value
    is dropped unread, so the record drops it too."""
    if not isinstance(outcome, (Returned, Chose)):
        return outcome
    if dropped:
        return Returned(None) if isinstance(outcome, Returned) else Chose(outcome.path, None)
    if plainly_json(outcome.value):  # most results: told without freezing them
        return outcome
    try:
        freeze(outcome.value)
    except NotJSONError as exc:
        return Raised("NotJSON", f"the result is not JSON: {exc}", contract=True)
    return outcome


def encode(event: RunEvent, plan: CompiledPlan) -> tuple[RecordKind, int | None, str | None]:
    """One run event of a run of ``plan`` as a row's kind, node and JSON data."""
    if isinstance(event, Finished):  # most rows: without the match's pattern tests
        # The machine's own check first: a value json.dumps would write but the machine
        # refuses (a key that is not a string) must be recorded as refused.
        node = event.node
        outcome = _not_json(event.outcome, plan.nodes[node].output is None)
        return _FINISH, node, dumps(_finished(outcome, event.date))
    match event:
        case Started(node=node):
            return RecordKind.START, node, None
        case Decided(node=node, verdict=verdict):
            return RecordKind.DECIDE, node, dumps(_verdict(verdict))
        case Cancelled():
            return RecordKind.CANCEL, None, None
        case Admitted() | Closed():
            raise TypeError("streaming runs are not journaled yet")
    raise TypeError(f"not a run event: {event!r}")  # pragma: no cover


def timed(data: str | None, at: float, started: float | None = None) -> str:
    """A START or FINISH row's data with the time the shell read (``t``, seconds since
    the epoch: when the batch was made ready, when the outcome came) and, for an outcome,
    when its activity was invoked (``started``). Old rows have neither; a reader that does
    not know them skips them."""
    times = f'"t":{at!r}' if started is None else f'"t":{at!r},"started":{started!r}'
    if data is None:
        return "{" + times + "}"
    return data[:-1] + "," + times + "}"  # ``data`` is a JSON object's text


def _verdict(verdict: Verdict) -> dict[str, Any]:
    match verdict:
        case Approve():
            data: dict[str, Any] = {"verdict": "approve"}
        case Deny(reason=reason):
            data = {"verdict": "deny", "reason": reason}
        case Replace(call=call):
            data = {"verdict": "replace", "call": dict(call)}
        case _:  # pragma: no cover
            raise TypeError(f"not a verdict: {verdict!r}")
    return decided_by(data, verdict.by, None if isinstance(verdict, Deny) else verdict.reason)


def decided_by(data: dict[str, Any], by: str | None, reason: str | None) -> dict[str, Any]:
    """A decision's row with who made it and why, when said (rows of runs recorded before
    a decision said so have neither)."""
    if by is not None:
        data["by"] = by
    if reason is not None:
        data["reason"] = reason
    return data


def said(data: Mapping[str, Any], key: str) -> str | None:
    """A decision row's optional ``by`` or ``reason`` (ValueError when it is not text)."""
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"a decision's {key!r} is not text")
    return value


def decode(records: Iterable[Record], where: str) -> list[RunEvent]:
    """The run events among a run's rows (other rows are skipped); ``where`` names the
    journal in errors. Raises :class:`JournalUnreadable` for a row that does not decode."""
    rows = records if isinstance(records, (list, tuple)) else list(records)
    try:
        return _decode_all(rows)
    except (KeyError, TypeError, ValueError, AttributeError):
        pass
    for record in rows:  # the slow way, only to name the row that does not decode
        try:
            _decode(record)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise JournalUnreadable(f"{where}: event {record.seq} ({record.kind.value}) does "
                                    f"not decode: {exc!r}") from None
    raise AssertionError("unreachable: a row failed to decode once")  # pragma: no cover


def _decode_all(records: Sequence[Record]) -> list[RunEvent]:
    """:func:`_decode` of every row, the frequent kinds first (a resume replays thousands:
    one loop, no per-row exception frame)."""
    events: list[RunEvent] = []
    append, loads = events.append, json.loads
    finish, start, invoke = RecordKind.FINISH, RecordKind.START, RecordKind.INVOKE
    for record in records:
        kind = record.kind
        if kind is finish:
            data = loads(record.data or "")
            append(Finished(_node(record.node), outcome_of(data), data["date"]))
        elif kind is invoke and type(record.data) is not str:
            raise ValueError("an invoke row holds no idempotency key")
        elif kind is start:
            append(Started(_node(record.node), {}))
        elif kind is invoke:
            continue  # as many as the outcomes, and not a run event
        else:
            event = _decode(record)
            if event is not None:
                append(event)
    return events


def _decode(record: Record) -> RunEvent | None:
    kind, node = record.kind, record.node
    if kind is RecordKind.START:
        return Started(_node(node), {})
    if kind is RecordKind.INVOKE and not isinstance(record.data, str):
        raise ValueError("an invoke row holds no idempotency key")
    if kind is RecordKind.CANCEL:
        # A cancelled run stopped, as a killed one did: resuming it runs the cancelled
        # calls again, so the cancellation is not replayed.
        return None
    if kind not in (RecordKind.FINISH, RecordKind.DECIDE):
        return None
    data = json.loads(record.data or "")
    if kind is RecordKind.DECIDE:
        return Decided(_node(node), verdict_of(data))
    return Finished(_node(node), outcome_of(data), data["date"])


def _node(node: int | None) -> int:
    if not isinstance(node, int):
        raise TypeError(f"a call event without a node: {node!r}")
    return node


def outcome_of(data: Mapping[str, Any]) -> Outcome:
    """The outcome a FINISH row's data records (ValueError for another shape)."""
    if not isinstance(data, dict) or not isinstance(data.get("date"), str):
        raise ValueError("a finish row is not an object with a date")
    if "returned" in data:
        return Returned(data["returned"])
    if "chose" in data:
        if not isinstance(data["chose"], str):
            raise ValueError("a finish row's chosen path is not a string")
        return Chose(data["chose"], data["value"])
    if not isinstance(data["raised"], str) or not isinstance(data["message"], str):
        raise ValueError("a finish row's error has no type and message")
    return Raised(data["raised"], data["message"], data.get("data", MISSING),
                  bool(data.get("contract", False)))


def verdict_of(data: Mapping[str, Any]) -> Verdict:
    """The verdict a DECIDE row's data records (ValueError for another shape)."""
    if not isinstance(data, dict):
        raise ValueError(f"a decide row holds {type(data).__name__}, not an object")
    by = said(data, "by")
    match data["verdict"]:
        case "approve":
            return Approve(by=by, reason=said(data, "reason"))
        case "deny" if isinstance(data["reason"], str):
            return Deny(data["reason"], by=by)
        case "replace" if isinstance(data["call"], dict):
            return Replace(data["call"], by=by, reason=said(data, "reason"))
    raise ValueError(f"unknown verdict {data['verdict']!r}")
