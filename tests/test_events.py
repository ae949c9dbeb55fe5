"""The typed event stream: ``on_event`` in Python, ``--events FILE`` on the command line,
the JSON Schema in the package (docs/observability.md)."""

from __future__ import annotations

import asyncio
import io
import json
import pathlib
from collections.abc import Awaitable
from typing import Any

import jsonschema
import pytest

import obelisk
from obelisk.cli import main
from obelisk.interpreters.stream import CONTENT_VARIABLE, emitter_for
from obelisk.llm.scripted import ScriptedLLM

TESTS = pathlib.Path(__file__).parent
EXAMPLES = TESTS.parent / "examples"
VALIDATOR = jsonschema.Draft202012Validator(obelisk.event_schema())
CALL_EVENTS = {"call_admitted", "call_ready", "call_approved", "call_started", "call_finished",
               "call_skipped"}


def boom(call: dict[str, Any], *_: Any) -> Any:
    raise ValueError("no")


#: a raises (routed to †err), so b (reading †r) is skipped and c (reading †err) runs.
ROUTED = [{"_tool": "a", "x": 1, "_outputPath": "†r || †err"},
          {"_tool": "b", "y": "†r", "_outputPath": "†s"},
          {"_tool": "c", "z": "†err", "_outputPath": "†t"}]
ACTS = {"a": boom, "b": lambda *_: 2, "c": lambda *_: {"token": "x", "v": 3}}


def checked(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event valid under the schema, ``seq`` counting up by one from 1, ``call`` on
    every call event."""
    for event in events:
        VALIDATOR.validate(event)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all("call" in e for e in events if e["type"] in CALL_EVENTS)
    return events


def call_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The call events without what differs between a run and its retelling: ``seq``,
    ``time`` and the ``replayed`` mark."""
    return [{k: v for k, v in e.items() if k not in ("seq", "time", "replayed")}
            for e in events if e["type"] in CALL_EVENTS]


def kinds(events: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    return [(e["type"], e.get("call")) for e in events]


def test_a_plain_run_tells_every_step_with_its_skip_reason() -> None:
    events: list[dict[str, Any]] = []
    result = obelisk.run_sync(ROUTED, [], activities=ACTS, on_event=events.append)
    assert kinds(checked(events)) == [
        ("run_started", None), ("plan", None), ("call_ready", 0), ("call_started", 0), ("call_finished", 0),
        ("call_skipped", 1), ("call_ready", 2), ("call_started", 2), ("call_finished", 2),
        ("run_ended", None)]
    finished = events[4]
    assert finished["outcome"] == "executed" and finished["alternative"] == 1
    assert finished["reason"] == result.calls[0].reason == "ValueError routed to alternative 2"
    assert events[5]["reason"] == result.calls[1].reason
    plan = events[1]
    assert [n["call"] for n in plan["nodes"]] == [0, 1, 2]
    assert plan["nodes"][0]["output"] == "†r || †err" and "calls" not in plan
    assert plan["edges"] == [[0, 1, [0]], [0, 2, [1]]]
    assert events[-1]["status"] == "completed" and events[0]["calls"] == 3
    # Content is not recorded unless opted in.
    assert not any("params" in e or "result" in e for e in events)


def test_content_is_recorded_only_when_opted_in_and_secrets_are_masked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONTENT_VARIABLE, "true")
    events: list[dict[str, Any]] = []
    obelisk.run_sync(ROUTED, [], activities=ACTS, on_event=events.append)
    ready = [e for e in checked(events) if e["type"] == "call_ready"]
    assert next(e for e in events if e["type"] == "plan")["calls"] == ROUTED
    assert ready[0]["params"]["x"] == 1
    done = [e for e in events if e["type"] == "call_finished"]
    assert done[1]["result"] == {"token": "***", "v": 3}


def test_a_skip_made_by_the_last_advance_is_told() -> None:
    # A denial leaves the reader a candidate the machine skips in its last advance,
    # after the loop's last event (failed before: the follower asked only a done state).
    plan = [{"_tool": "a", "_outputPath": "†a"}, {"_tool": "b", "v": "†a", "_outputPath": "†b"}]
    events: list[dict[str, Any]] = []
    obelisk.run_sync(plan, [], activities={"a": ACTS["b"], "b": ACTS["b"]},
                     approve=lambda call: call["_tool"] != "a", on_event=events.append)
    assert kinds(checked(events))[-2:] == [("call_skipped", 1), ("run_ended", None)]


def test_the_asyncio_run_tells_approvals_denials_and_failures() -> None:
    plan = [{"_tool": "a", "_outputPath": "†r"}, {"_tool": "c", "_outputPath": "†t"},
            {"_tool": "b", "_outputPath": "†s"}]
    events: list[dict[str, Any]] = []

    def approve(call: dict[str, Any]) -> Any:
        return "not this one" if call["_tool"] == "c" else True

    asyncio.run(obelisk.run_async(plan, [], activities={"a": boom, "b": ACTS["b"], "c": boom},
                                  approve=approve, on_event=events.append))
    checked(events)
    approved = {e["call"]: e for e in events if e["type"] == "call_approved"}
    assert approved[1]["verdict"] == "deny" and approved[1]["reason"] == "not this one"
    assert approved[0]["verdict"] == "approve"
    finished = {e["call"]: e for e in events if e["type"] == "call_finished"}
    assert finished[1]["outcome"] == "failed" and finished[1]["error"]["type"] == "Denied"
    assert finished[0]["outcome"] == "failed" and finished[0]["error"] == {
        "type": "ValueError", "message": "no"}
    assert finished[2]["outcome"] == "executed"
    assert not any(e["type"] == "call_started" and e["call"] == 1 for e in events)


async def cancelled_once_started(run: Awaitable[Any], events: list[dict[str, Any]]) -> Any:
    """``run`` cancelled once its ``events`` tell a call started: what it returns."""
    task = asyncio.ensure_future(run)
    while not any(e["type"] == "call_started" for e in events):
        await asyncio.sleep(0.001)
    task.cancel()
    return await task


def test_a_cancelled_run_ends_its_calls_and_the_run() -> None:
    async def hang(*_: Any) -> Any:
        await asyncio.sleep(60)

    events: list[dict[str, Any]] = []
    result = asyncio.run(cancelled_once_started(obelisk.run_async(
        [{"_tool": "h", "_outputPath": "†x"}], [], activities={"h": hang},
        on_event=events.append), events))
    assert result.status == "cancelled"
    assert [e["outcome"] for e in checked(events) if e["type"] == "call_finished"] == [
        "cancelled"]
    assert events[-1]["type"] == "run_ended" and events[-1]["status"] == "cancelled"


def test_a_run_that_raises_still_ends() -> None:
    events: list[dict[str, Any]] = []

    def stop(*_: Any) -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        obelisk.run_sync([{"_tool": "k", "_outputPath": "†x"}], [], activities={"k": stop},
                         on_event=events.append)
    assert events[-1]["type"] == "run_ended" and events[-1]["status"] == "cancelled"
    assert events[-1]["error"] == "KeyboardInterrupt"


def test_nobody_watching_makes_no_emitter() -> None:
    assert emitter_for(None) is None


TOOL = {"type": "object", "properties": {"_tool": {"type": "string", "const": "add"},
                                         "a": {"type": "integer"}}}


def agent_llm() -> ScriptedLLM:
    return ScriptedLLM([{"calls": [{"_tool": "add", "a": 1, "_outputPath": "†sum"}],
                         "output": None}, {"calls": [], "output": "†sum"}])


def test_an_agent_run_tells_ticks_requests_answers_and_calls() -> None:
    events: list[dict[str, Any]] = []
    result = obelisk.run_agent_sync([{"type": "task", "text": "add"}], agent_llm(),
                                    tools=[TOOL], activities={"add": lambda *_: 3},
                                    on_event=events.append)
    assert result.status == "completed"
    assert [e["type"] for e in checked(events)] == [
        "run_started", "tick_started", "llm_request", "llm_answer", "plan", "call_ready",
        "call_started", "call_finished", "tick_ended", "tick_started", "llm_request",
        "llm_answer", "tick_ended", "run_ended"]
    answer = events[3]
    assert answer["input_tokens"] == result.ticks[0].usage.input_tokens > 0
    assert all(e["tick"] == 1 for e in events[4:8])
    assert events[-1]["input_tokens"] == sum(t.usage.input_tokens for t in result.ticks)
    assert "content" not in events[2]


def test_a_streamed_tick_tells_its_calls_while_the_answer_streams() -> None:
    step = {"type": "object", "properties": {"_tool": {"const": "step"}, "x": {}}}
    calls = [{"_tool": "step", "x": n, "_outputPath": f"†state.v{n}"} for n in range(3)]
    calls.append({"_tool": "step", "x": "†state.nothing", "_outputPath": "†state.w || †state.e"})
    llm = ScriptedLLM([{"calls": calls, "output": "†state.v2"}], delays=0.01)
    events: list[dict[str, Any]] = []
    result = obelisk.run_agent_sync([{"type": "state", "state": {"seed": 1}}], llm,
                                    tools=[step], activities={"step": lambda c, *_: c["x"]},
                                    stream=True, on_event=events.append)
    assert result.status == "completed"
    checked(events)
    types = [e["type"] for e in events]
    assert types.count("call_admitted") == 4
    # the first call ran before the answer had ended
    assert types.index("call_finished") < types.index("llm_answer")
    answer = events[types.index("llm_answer")]
    assert answer["first_call"] >= 0 and answer["output_tokens"] > 0
    # each call's end is what the tick's outcomes say (call 3 reads what nothing writes)
    ended = {e["call"]: ("skipped" if e["type"] == "call_skipped" else e["outcome"])
             for e in events if e["type"] in ("call_finished", "call_skipped")}
    outcomes = {o.call: o.outcome for o in result.ticks[0].outcomes}
    assert ended == {c: "failed" if o == "denied" else o for c, o in outcomes.items()}
    assert ended[3] != "executed" and all(e["tick"] == 1 for e in events
                                          if e["type"].startswith("call_"))
    assert types[-2:] == ["tick_ended", "run_ended"]


def test_a_delegates_events_are_relayed_marked_with_its_chain() -> None:
    summarise = {"type": "object", "properties": {
        "_tool": {"const": "summarise"}, "text": {"type": "string"},
        "_delegate": {"const": "anonymous"}, "_output": {"type": "string"}}}
    llm = ScriptedLLM([
        {"calls": [{"_tool": "summarise", "text": "long", "_outputPath": "†state.s"}],
         "output": None},
        {"calls": [], "output": "short"},
        {"calls": [], "output": "†state.s"}])
    events: list[dict[str, Any]] = []
    result = obelisk.run_agent_sync([{"type": "task", "text": "go"}], llm, tools=[summarise],
                                    on_event=events.append)
    assert result.output == "short"
    relayed = [e for e in checked(events) if "delegate" in e]
    assert [e["type"] for e in relayed] == ["run_started", "tick_started", "llm_request",
                                            "llm_answer", "tick_ended", "run_ended"]
    assert all(e["delegate"] == ["anonymous"] for e in relayed)
    own = [e for e in events if "delegate" not in e]
    assert own[0]["type"] == "run_started" and own[-1]["type"] == "run_ended"
    started = next(e for e in own if e["type"] == "call_started")
    finished = next(e for e in own if e["type"] == "call_finished")
    assert started["seq"] < relayed[0]["seq"] < relayed[-1]["seq"] < finished["seq"]


def test_an_agent_run_records_the_request_only_when_opted_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONTENT_VARIABLE, "SPAN_AND_EVENT")
    events: list[dict[str, Any]] = []
    obelisk.run_agent_sync([{"type": "task", "text": "add"}], agent_llm(), tools=[TOOL],
                           activities={"add": lambda *_: 3}, on_event=events.append)
    request = next(e for e in checked(events) if e["type"] == "llm_request")
    assert isinstance(request["content"], list) and request["content"]
    answer = next(e for e in events if e["type"] == "llm_answer")
    assert answer["content"]["calls"][0]["_tool"] == "add"


def test_a_durable_run_and_its_resume_tell_the_run_id(tmp_path: pathlib.Path) -> None:
    events: list[dict[str, Any]] = []
    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        obelisk.run_durable(ROUTED, [], journal=journal, run_id="R1", activities=ACTS,
                            on_event=events.append)
        assert events[0]["run"] == "R1" and "resumed" not in events[0]
        assert kinds(checked(events))[1:-1] == [
            ("plan", None), ("call_ready", 0), ("call_started", 0), ("call_finished", 0), ("call_skipped", 1),
            ("call_ready", 2), ("call_started", 2), ("call_finished", 2)]
        again: list[dict[str, Any]] = []
        obelisk.resume(journal, "R1", activities=ACTS, on_event=again.append)
        # What the journal recorded is told again, marked replayed, as the run told it.
        assert kinds(checked(again)) == kinds(events)
        assert again[0]["resumed"] is True and again[-1]["status"] == "completed"
        assert all(e.get("replayed") is True for e in again if e["type"] in CALL_EVENTS)
        assert call_events(again) == call_events(events)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def read_lines(path: pathlib.Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_run_and_resume_write_events_as_json_lines(tmp_path: pathlib.Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    target = tmp_path / "events.jsonl"
    code, _, _ = cli("run", str(EXAMPLES / "payment.json"), "--activities",
                     "sample_activities:ACTIVITIES", "--events", str(target))
    events = checked(read_lines(target))
    assert code == 0 and events[0]["type"] == "run_started" and events[-1]["type"] == "run_ended"
    assert any(e["type"] == "call_skipped" for e in events)
    db = tmp_path / "run.db"
    cli("run", str(EXAMPLES / "payment.json"), "--activities", "sample_activities:ACTIVITIES",
        "--journal", str(db), "--run", "P1")
    code, _, _ = cli("resume", str(db), "--events", str(target))
    resumed = checked(read_lines(target))
    assert code == 0 and resumed[0]["run"] == "P1" and resumed[0]["resumed"] is True


def test_a_dry_run_tells_its_first_run(tmp_path: pathlib.Path) -> None:
    events: list[dict[str, Any]] = []
    obelisk.dry_run(ROUTED, [], mocks={"a": {"raise": {"type": "Declined"}},
                                       "b": {"return": 1}, "c": {"return": 2}},
                    explore=True, on_event=events.append)
    assert events[0]["dry"] is True
    assert kinds(checked(events))[2:-1] == [
        ("call_ready", 0), ("call_started", 0), ("call_finished", 0), ("call_skipped", 1),
        ("call_ready", 2), ("call_started", 2), ("call_finished", 2)]
    target = tmp_path / "e.jsonl"
    code, _, _ = cli("dry-run", str(EXAMPLES / "payment.json"), "--events", str(target))
    assert code == 0 and checked(read_lines(target))[0]["dry"] is True


def test_the_agent_command_writes_events(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"solutions": [{"calls": [], "output": "done"}]}))
    spec = tmp_path / "agent.json"
    spec.write_text(json.dumps({"context": [{"type": "task", "text": "go"}]}))
    target = tmp_path / "events.jsonl"
    code, _, err = cli("agent", str(spec), "--llm", f"script:{script}", "--events", str(target))
    events = checked(read_lines(target))
    assert code == 0, err
    assert [e["type"] for e in events] == ["run_started", "tick_started", "llm_request",
                                           "llm_answer", "tick_ended", "run_ended"]
    assert events[3]["output_tokens"] > 0


def test_an_unwritable_events_file_is_bad_input(tmp_path: pathlib.Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    code, _, err = cli("run", str(EXAMPLES / "payment.json"), "--activities",
                       "sample_activities:ACTIVITIES", "--events",
                       str(tmp_path / "missing" / "e.jsonl"))
    assert code == 2 and "cannot write" in err and "e.jsonl" in err


def test_the_schema_ships_in_the_package() -> None:
    schema = obelisk.event_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["$defs"]) == {
        "run_started", "plan", "tick_started", "llm_request", "llm_answer", "plan_reviewed",
        "call_admitted", "call_ready", "call_approved", "call_started", "call_finished",
        "call_skipped", "tick_ended", "run_ended"}
