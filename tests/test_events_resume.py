"""A resumed run's event stream: what its journal recorded is told again (marked
``replayed``, at the recorded times) before the run goes on, so the events of a resumed
run are those of the uninterrupted run (docs/observability.md)."""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import jsonschema
import pytest

import obelisk
from obelisk import Journal, RecordKind, ScriptedLLM

VALIDATOR = jsonschema.Draft202012Validator(obelisk.event_schema())
CALL_EVENTS = {"call_admitted", "call_ready", "call_approved", "call_started", "call_finished",
               "call_skipped"}

ADD = {"type": "object", "properties": {"_tool": {"const": "add"}, "a": {"type": "integer"}}}
FAIL = {"type": "object", "properties": {"_tool": {"const": "fail"}}}
TOOLS = [ADD, FAIL]


def boom(*_: Any) -> Any:
    raise ValueError("no")


ACTIVITIES = {"add": lambda call, *_: call["a"] + 1, "fail": boom}
#: Tick 1: a call, one failing into its error branch (so a reader of the other branch is
#: skipped), one reading the first call; tick 2: another call; tick 3: the output.
TICKS = [
    {"calls": [{"_tool": "add", "a": 1, "_outputPath": "†one"},
               {"_tool": "fail", "_outputPath": "†ok || †err"},
               {"_tool": "add", "a": "†ok", "_outputPath": "†never"},
               {"_tool": "add", "a": "†one", "_outputPath": "†two"}], "output": None},
    {"calls": [{"_tool": "add", "a": "†two", "_outputPath": "†three"}], "output": None},
    {"calls": [], "output": "†three"},
]


def calls_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The call events without what a retelling changes: ``seq``, ``time``, the mark, and
    the journal row of an outcome (a resumed run's rows come after its resume row)."""
    return [{k: v for k, v in e.items() if k not in ("seq", "time", "replayed", "journal_seq")}
            for e in events if e["type"] in CALL_EVENTS]


def rows_of(events: list[dict[str, Any]], tick: int) -> list[Any]:
    """The journal rows tick ``tick``'s outcomes name."""
    return [e.get("journal_seq") for e in events
            if e.get("tick") == tick and e["type"] == "call_finished"]


def checked(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for event in events:
        VALIDATOR.validate(event)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    return events


def cut_run(source: Journal, target: Journal, run_id: str, keep: int) -> None:
    """``target`` holds the first ``keep`` rows of ``source``'s run ``run_id``."""
    records = list(source.records(run_id))
    target.store.create_run(source.run_header(run_id))
    target.store.append(run_id, records[:keep], target.claim(run_id).epoch)
    target.leases.release(target.leases.held(run_id))  # type: ignore[arg-type]


def whole_run(tmp_path: pathlib.Path, **options: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with Journal.open(tmp_path / "whole.db") as journal:
        result = obelisk.run_agent_sync([{"type": "task", "text": "add"}], ScriptedLLM(TICKS),
                                        tools=TOOLS, activities=ACTIVITIES, journal=journal,
                                        run_id="A", on_event=events.append, **options)
    assert result.status == "completed" and result.output == 4
    return checked(events)


def resumed(tmp_path: pathlib.Path, keep: Any, answers: list[Any],
            **options: Any) -> list[dict[str, Any]]:
    """The run cut where ``keep(records)`` says, then resumed with ``answers``."""
    with Journal.open(tmp_path / "whole.db") as whole, \
            Journal.open(tmp_path / "cut.db") as journal:
        cut_run(whole, journal, "A", keep(list(whole.records("A"))))
        events: list[dict[str, Any]] = []
        result = asyncio.run(obelisk.resume_agent(journal, "A", llm=ScriptedLLM(answers),
                                                  activities=ACTIVITIES,
                                                  on_event=events.append, **options))
    assert result.status == "completed" and result.output == 4
    return checked(events)


def before_tick(tick: int) -> Any:
    """Where tick ``tick``'s rows begin (its solution; a streamed tick's first call)."""
    return lambda records: next(i for i, r in enumerate(records) if r.node == tick and
                                r.kind in (RecordKind.SOLUTION, RecordKind.ADMIT))


def test_a_run_resumed_after_tick_1_tells_its_calls_as_the_run_did(
        tmp_path: pathlib.Path) -> None:
    whole = whole_run(tmp_path)
    again = resumed(tmp_path, before_tick(2), TICKS[1:])
    assert calls_of(again) == calls_of(whole)
    assert [e["type"] for e in again] == [e["type"] for e in whole]
    assert rows_of(again, 1) == rows_of(whole, 1) and None not in rows_of(whole, 1)
    tick1 = [e for e in again if e.get("tick") == 1 and e["type"] in CALL_EVENTS]
    later = [e for e in again if e.get("tick") == 2 and e["type"] in CALL_EVENTS]
    assert tick1 and all(e["replayed"] is True for e in tick1)
    assert later and not any("replayed" in e for e in later)
    skipped = next(e for e in again if e["type"] == "call_skipped")
    assert skipped["call"] == 2 and "†ok" in skipped["reason"]
    # The replayed tick's request and answer: marked, with the tokens recorded.
    answers = [e for e in again if e["type"] == "llm_answer"]
    assert answers[0]["replayed"] is True and answers[0]["input_tokens"] > 0
    assert answers[0]["input_tokens"] == next(
        e for e in whole if e["type"] == "llm_answer")["input_tokens"]


def test_replayed_events_carry_the_times_the_journal_recorded(tmp_path: pathlib.Path) -> None:
    whole = whole_run(tmp_path)
    again = resumed(tmp_path, lambda records: len(records), [])
    first = {(e["type"], e["call"]): e["time"] for e in whole
             if e["type"] in CALL_EVENTS and e.get("tick") == 1}
    told = {(e["type"], e["call"]): e["time"] for e in again
            if e["type"] in CALL_EVENTS and e.get("tick") == 1}
    assert first.keys() == told.keys()
    for key, when in first.items():  # recorded by the journal as the run told them
        assert abs(told[key] - when) < 0.5, key
    ended = max(e["time"] for e in whole)
    assert all(when <= ended for when in told.values())  # not the resume's clock


def test_a_run_resumed_midway_through_a_tick_runs_again_only_what_had_no_outcome(
        tmp_path: pathlib.Path) -> None:
    whole = whole_run(tmp_path)

    def after_first_outcome(records: list[Any]) -> int:
        return next(i for i, r in enumerate(records) if r.kind is RecordKind.FINISH) + 1

    again = resumed(tmp_path, after_first_outcome, TICKS[1:])
    finished = [(e["tick"], e["call"], e["outcome"]) for e in again
                if e["type"] == "call_finished"]
    assert sorted(finished) == sorted((e["tick"], e["call"], e["outcome"]) for e in whole
                                      if e["type"] == "call_finished")
    replayed = [e for e in again if e["type"] == "call_finished" and e.get("replayed")]
    assert [(e["tick"], e["call"]) for e in replayed] == [(1, 0)]


def test_an_ended_plan_run_resumed_tells_its_calls_replayed(tmp_path: pathlib.Path) -> None:
    plan = TICKS[0]["calls"]
    tools = obelisk.ToolRegistry.of(TOOLS)
    events: list[dict[str, Any]] = []
    with Journal.open(tmp_path / "plan.db") as journal:
        obelisk.run_durable(plan, [], journal=journal, run_id="P", tools=tools,
                            activities=ACTIVITIES, on_event=events.append)
        again: list[dict[str, Any]] = []
        obelisk.resume(journal, "P", activities=ACTIVITIES, on_event=again.append)
    assert calls_of(checked(again)) == calls_of(checked(events))
    assert all(e["replayed"] for e in again if e["type"] in CALL_EVENTS)


def test_the_schema_declares_the_replayed_mark() -> None:
    defs = obelisk.event_schema()["$defs"]
    for kind in (*CALL_EVENTS, "llm_request", "llm_answer"):
        assert defs[kind]["properties"]["replayed"]["const"] is True, kind
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate({"seq": 1, "type": "call_started", "time": 0.0, "call": 0,
                            "node": 0, "replayed": False})


@pytest.mark.parametrize("cut", ["tick", "call"])
def test_a_streamed_run_resumed_tells_its_recorded_steps_as_the_run_did(
        tmp_path: pathlib.Path, cut: str) -> None:
    whole = whole_run(tmp_path, stream=True)

    def first_outcome(records: list[Any]) -> int:
        return next(i for i, r in enumerate(records) if r.kind is RecordKind.FINISH) + 1

    keep = before_tick(2) if cut == "tick" else first_outcome
    again = resumed(tmp_path, keep, TICKS[1:])
    told = [e for e in again if e.get("replayed")]
    assert told and all(e.get("tick") == 1 for e in told)
    if cut == "tick":  # the whole tick was recorded: told exactly as the run told it
        assert calls_of(again) == calls_of(whole)
        assert [e["type"] for e in again] == [e["type"] for e in whole]
        assert rows_of(again, 1) == rows_of(whole, 1) and None not in rows_of(whole, 1)
        answer = next(e for e in again if e["type"] == "llm_answer")
        assert answer["replayed"] and answer["input_tokens"] == next(
            e for e in whole if e["type"] == "llm_answer")["input_tokens"]
    else:  # the calls recorded are told; what had no outcome runs again
        finished = sorted((e["tick"], e["call"]) for e in again if e["type"] == "call_finished")
        assert finished == sorted((e["tick"], e["call"]) for e in whole
                                  if e["type"] == "call_finished")


def test_a_run_with_a_delegate_resumed_tells_the_callers_calls(tmp_path: pathlib.Path) -> None:
    summarise = {"type": "object", "properties": {
        "_tool": {"const": "summarise"}, "text": {"type": "string"},
        "_delegate": {"const": "anonymous"}, "_output": {"type": "string"}}}
    answers = [{"calls": [{"_tool": "summarise", "text": "long", "_outputPath": "†s"},
                          {"_tool": "add", "a": 1, "_outputPath": "†n"}], "output": None},
               {"calls": [], "output": "short"},  # the delegate's
               {"calls": [], "output": "†s"}]
    live: list[dict[str, Any]] = []
    with Journal.open(tmp_path / "run.db") as journal:
        result = obelisk.run_agent_sync([{"type": "task", "text": "go"}], ScriptedLLM(answers),
                                        tools=[summarise, ADD], activities=ACTIVITIES,
                                        journal=journal, run_id="D", on_event=live.append)
        assert result.output == "short"
        again: list[dict[str, Any]] = []
        asyncio.run(obelisk.resume_agent(journal, "D", llm=ScriptedLLM([]),
                                         activities=ACTIVITIES, on_event=again.append))
    checked(again)
    own = [e for e in live if "delegate" not in e]
    assert calls_of(again) == calls_of(own)
    assert any("delegate" in e for e in live)
    # The delegated call's outcome is recorded, so its delegate does not run again, and
    # the delegate's own run is not told again (docs/observability.md).
    assert not any("delegate" in e for e in again)


def test_a_delegate_running_at_the_stop_tells_its_recorded_run_marked(
        tmp_path: pathlib.Path) -> None:
    summarise = {"type": "object", "properties": {
        "_tool": {"const": "summarise"}, "text": {"type": "string"},
        "_delegate": {"const": "anonymous"}, "_output": {"type": "string"}}}
    delegate_ticks = [{"calls": [{"_tool": "add", "a": 1, "_outputPath": "†x"}],
                       "output": None}, {"calls": [], "output": "short"}]
    caller_done = {"calls": [], "output": "†s"}
    runs: list[int] = []

    def add(call: dict[str, Any], *_: Any) -> Any:
        runs.append(1)
        if len(runs) == 1:
            raise KeyboardInterrupt  # the process stops while the delegate's call runs
        return call["a"] + 1

    first = [{"calls": [{"_tool": "summarise", "text": "long", "_outputPath": "†s"}],
              "output": None}, delegate_ticks[0]]
    with Journal.open(tmp_path / "run.db") as journal:
        with pytest.raises(KeyboardInterrupt):
            obelisk.run_agent_sync([{"type": "task", "text": "go"}], ScriptedLLM(first),
                                   tools=[summarise, ADD], activities={"add": add},
                                   journal=journal, run_id="D")
        again: list[dict[str, Any]] = []
        result = asyncio.run(obelisk.resume_agent(
            journal, "D", llm=ScriptedLLM([delegate_ticks[1], caller_done]),
            activities={"add": add}, on_event=again.append))
    assert result.status == "completed" and result.output == "short"
    checked(again)
    nested = [e for e in again if "delegate" in e]
    told = [(e["type"], e.get("call")) for e in nested if e.get("replayed")]
    assert ("call_ready", 0) in told and ("call_started", 0) in told
    assert ("llm_answer", None) in told
    ran = [(e["type"], e.get("call")) for e in nested if not e.get("replayed")
           and e["type"].startswith("call_")]
    assert ran == [("call_started", 0), ("call_finished", 0)]


def test_a_plan_review_is_told_and_a_resumed_run_tells_the_recorded_one(
        tmp_path: pathlib.Path) -> None:
    from obelisk.agent.hooks import ApprovePlan, RejectPlan
    from obelisk.journal.events import recorded_events
    from obelisk.runreport import render_page

    def review(plan: Any) -> Any:
        first = plan.calls[0]
        return RejectPlan("not that", by="ann") if first.get("a") == 2 else \
            ApprovePlan(by="bob", reason="fine")

    answers = [{"calls": [{"_tool": "add", "a": 1, "_outputPath": "†n"}], "output": None},
               {"calls": [{"_tool": "add", "a": 2, "_outputPath": "†m"}], "output": None},
               {"calls": [], "output": "†n"}]
    live: list[dict[str, Any]] = []
    with Journal.open(tmp_path / "run.db") as journal:
        obelisk.run_agent_sync([{"type": "task", "text": "go"}], ScriptedLLM(answers),
                               tools=TOOLS, activities=ACTIVITIES, mode="lazy",
                               on_plan=review, journal=journal, run_id="L",
                               on_event=live.append)
        again: list[dict[str, Any]] = []
        asyncio.run(obelisk.resume_agent(journal, "L", llm=ScriptedLLM([]),
                                         activities=ACTIVITIES, on_plan=review,
                                         on_event=again.append))
        read = recorded_events(journal, "L")
    said = [(e["tick"], e["verdict"], e.get("by"), e.get("reason"))
            for e in checked(live) if e["type"] == "plan_reviewed"]
    assert said == [(1, "approve", "bob", "fine"), (2, "reject", "ann", "not that")]
    assert all(e["asked"] <= e["time"] for e in live if e["type"] == "plan_reviewed")
    retold = [e for e in checked(again) if e["type"] == "plan_reviewed"]
    assert [(e["tick"], e["verdict"]) for e in retold] == [(1, "approve"), (2, "reject")]
    assert all(e["replayed"] for e in retold)
    assert [e["time"] for e in retold] == [
        e["time"] for e in live if e["type"] == "plan_reviewed"]
    for events in (live, read):  # the report: a review row per reviewed tick
        page = render_page(events)
        assert page.count('class="row review"') == 2 and "reject ann not that" in page
