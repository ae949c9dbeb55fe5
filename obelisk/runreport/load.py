"""Where a report's events come from: a JSON Lines file of events (``--events``), a
journal (a file or a ``postgresql://`` URL: the recorded run's events, read back through
the machine), or a run's ``--json`` report (outcomes only: no times, no graph edges)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from obelisk.jsonio import InputError

__all__ = ["from_report", "is_journal", "load_events"]

_SQLITE = b"SQLite format 3\x00"


def load_events(source: str, run_id: str | None = None) -> list[dict[str, Any]]:
    """The events of the run ``source`` holds; :class:`InputError` when it holds none."""
    if is_journal(source):
        return _from_journal(source, run_id)
    try:
        text = pathlib.Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"{source}: not UTF-8 text: give an events file (--events), a "
                         "journal or a --json report") from None
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n{" not in stripped.rstrip():
        try:
            whole = json.loads(stripped)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict) and "type" not in whole and (
                "calls" in whole or isinstance(whole.get("ticks"), list)):
            return _from_json_report(source, whole)
    return _from_lines(source, text)


def _from_json_report(source: str, report: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``--json`` report's events, each checked as an events file's are."""
    events, checkers = from_report(report), _checkers()
    for event in events:
        problem = _problem(event, checkers)
        if problem is not None:
            call = f"call {event['call']}: " if "call" in event else ""
            tick = f"tick {event['tick']}: " if "tick" in event else ""
            raise InputError(f"{source}: not a --json report obelisk wrote: {tick}{call}"
                             f"{problem}")
    return events


def is_journal(source: str) -> bool:
    """Whether ``source`` names a journal (a PostgreSQL URL, or an SQLite file)."""
    return source.startswith(("postgresql://", "postgres://")) or _is_sqlite(source)


def _is_sqlite(source: str) -> bool:
    try:
        with open(source, "rb") as handle:
            return handle.read(16) == _SQLITE
    except OSError:
        return False


def _from_lines(source: str, text: str) -> list[dict[str, Any]]:
    """The events of an events file, each checked against its kind's schema (a file that
    is not one says where and what is wrong, rather than failing later, half drawn)."""
    events: list[dict[str, Any]] = []
    checkers = _checkers()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}:{number}:{exc.colno}: not a JSON event ({exc.msg}): "
                             "give an events file written by --events") from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise InputError(f"{source}:{number}: not an event (an object with a \"type\")")
        if event["type"] not in checkers:  # (a newer obelisk's kind of event: left out)
            continue
        problem = _problem(event, checkers)
        if problem is not None:
            raise InputError(f"{source}:{number}: {problem}: give an events file written "
                             "by --events (its schema: obelisk.event_schema())")
        events.append(event)
    if not events:
        raise InputError(f"{source}: no events in it")
    return events


def _problem(event: dict[str, Any], checkers: dict[str, Any]) -> str | None:
    """What is wrong with ``event`` by its kind's schema, and where (a JSON Pointer)."""
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

    checker = checkers.get(event.get("type"))  # type: ignore[arg-type]
    if checker is None:
        return f"an event of unknown type {event.get('type')!r}"
    found = best_match(checker.iter_errors(event))
    if found is None:
        return None
    where = "".join(f"/{part}" for part in found.absolute_path) or "/"
    return f"{event['type']} event, at {where}: {found.message}"


def _checkers() -> dict[str, Any]:
    """A validator of each kind of event, from the schema the package ships, checking the
    fields an event has (a field left out is drawn as unknown: a hand-made file or a
    ``--json`` report's outcomes are partial; a field of the wrong type, or an event that
    does not say which call or tick it is about, is an error)."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    from obelisk.interpreters.stream import event_schema

    defs = _optional(event_schema()["$defs"])
    return {kind: Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": defs})
            for kind in defs}


#: The fields that say which call or tick an event is about: required where the schema
#: requires them (the others may be left out).
_IDENTITY = frozenset({"call", "node", "tick"})


def _optional(schema: Any) -> Any:
    """``schema`` with no field required but those of :data:`_IDENTITY`, at any depth."""
    if isinstance(schema, dict):
        found = {k: _optional(v) for k, v in schema.items() if k != "required"}
        kept = [f for f in schema.get("required", ()) if f in _IDENTITY]
        if kept:
            found["required"] = kept
        return found
    if isinstance(schema, list):
        return [_optional(v) for v in schema]
    return schema


def _from_journal(source: str, run_id: str | None) -> list[dict[str, Any]]:
    from obelisk.journal import Journal, JournalError
    from obelisk.journal.events import recorded_events

    try:
        with Journal.open(source, create=False, read_only=True) as journal:
            return recorded_events(journal, run_id)
    except JournalError as exc:
        raise InputError(str(exc)) from None


def from_report(report: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``--json`` report's calls as events: the plan's nodes, each call's outcome (an
    agent's report: per tick, its solution, tokens and outcomes)."""
    if isinstance(report.get("ticks"), list) and "calls" not in report:
        return _from_agent_report(report)
    calls = [c for c in report.get("calls", []) if isinstance(c, dict)]
    events: list[dict[str, Any]] = [
        {"type": "run_started", "kind": "plan", "calls": len(calls), "time": 0.0},
        *_outcomes(calls, None)]
    events.append({"type": "run_ended", "kind": "plan", "time": 0.0, "duration": 0.0,
                   "status": report.get("status", "completed")})
    return _numbered(events)


def _from_agent_report(report: dict[str, Any]) -> list[dict[str, Any]]:
    """``obelisk agent --json``: each tick's solution and tokens, its calls' outcomes."""
    events: list[dict[str, Any]] = [{"type": "run_started", "kind": "agent", "time": 0.0}]
    for tick in report["ticks"]:
        if not isinstance(tick, dict) or type(tick.get("tick")) is not int:
            continue
        number = tick["tick"]
        usage: dict[str, Any] = tick["usage"] if isinstance(tick.get("usage"), dict) else {}
        tokens = {"input_tokens": usage.get("input_tokens", 0),
                  "output_tokens": usage.get("output_tokens", 0)}
        solution = tick.get("solution")
        events += [{"type": "tick_started", "tick": number, "time": 0.0},
                   {"type": "llm_answer", "tick": number, "time": 0.0, "content": solution,
                    **tokens}]
        written = solution.get("calls") if isinstance(solution, dict) else None
        outcomes = [o for o in tick.get("outcomes") or [] if isinstance(o, dict)]
        for index, outcome in enumerate(outcomes):
            call = outcome.get("call", index)
            found = written[call] if isinstance(written, list) and isinstance(
                call, int) and 0 <= call < len(written) else None
            if isinstance(found, dict) and "tool" not in outcome:
                outcome = {**outcome, "tool": found.get("_tool")}
            outcomes[index] = {**outcome, "outcome": "failed" if outcome.get(
                "outcome") == "denied" else outcome.get("outcome"),
                "error": outcome.get("error") or (
                    "Denied" if outcome.get("outcome") == "denied" else None)}
        events += _outcomes(outcomes, number)
        events.append({"type": "tick_ended", "tick": number, "time": 0.0,
                       "errors": list(tick.get("errors") or []), **tokens})
    paid: dict[str, Any] = report["usage"] if isinstance(report.get("usage"), dict) else {}
    events.append({"type": "run_ended", "kind": "agent", "time": 0.0, "duration": 0.0,
                   "status": report.get("status", "completed"),
                   "input_tokens": paid.get("input_tokens", 0),
                   "output_tokens": paid.get("output_tokens", 0)})
    return _numbered(events)


def _outcomes(calls: list[dict[str, Any]], tick: int | None) -> list[dict[str, Any]]:
    """A plan's nodes and each call's outcome, from a report's per-call rows."""
    marks = {} if tick is None else {"tick": tick}
    nodes = [{"node": n, "call": c.get("call", n), "tool": c.get("tool"),
              **({"instance": c["instance"]} if c.get("instance") is not None else {})}
             for n, c in enumerate(calls)]
    events: list[dict[str, Any]] = [{"type": "plan", "nodes": nodes, "time": 0.0, **marks}]
    for node, call in zip(nodes, calls, strict=True):
        base = {"call": node["call"], "node": node["node"], "time": 0.0, **marks}
        if call.get("outcome") == "skipped":
            events.append({"type": "call_skipped", **base, "reason": call.get("reason") or ""})
        else:
            done: dict[str, Any] = {"type": "call_finished", **base,
                                    "outcome": call.get("outcome") or "executed"}
            if call.get("reason"):
                done["reason"] = call["reason"]
            if call.get("error"):
                done["error"] = {"type": call["error"], "message": ""}
            events.append(done)
    return events


def _numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for seq, event in enumerate(events, 1):
        event["seq"] = seq
    return events
