"""An observer never breaks a run (interpreters/stream.py's Emitter, obelisk/cli/events.py):
an ``on_event`` callback, the ``--events`` writer, the span maker or the OpenTelemetry SDK
raising leaves the run's result, context and journal those of an unobserved run; the
first failure is reported once (a warning of ``obelisk.observe``, a line of the command
line); a KeyboardInterrupt or SystemExit from a callback stops the run as Ctrl-C does."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from durable_activities import untimed
from opentelemetry import propagate
from test_spans import Telemetry, otel  # noqa: F401 - the fixture

import obelisk
from obelisk.cli import main
from obelisk.cli.events import EventsWriter
from obelisk.interpreters.spans import SpanMaker
from obelisk.interpreters.stream import trace_carrier
from obelisk.llm.scripted import ScriptedLLM

TESTS = pathlib.Path(__file__).parent
EXAMPLES = TESTS.parent / "examples"
Sink = Callable[[dict[str, Any]], None]


def clock() -> str:
    return "2026-11-27T00:00:00Z"


def boom(*_: Any) -> Any:
    raise ValueError("no")


#: a raises (routed to †err), so b is skipped and c runs; d runs alone.
ROUTED = [{"_tool": "a", "x": 1, "_outputPath": "†r || †err"},
          {"_tool": "b", "y": "†r", "_outputPath": "†s"},
          {"_tool": "c", "z": "†err", "_outputPath": "†t"},
          {"_tool": "d", "w": "†t", "_outputPath": "†u"}]
ACTS = {"a": boom, "b": lambda *_: 2, "c": lambda *_: 3, "d": lambda c, *_: c["w"] + 1}
MOCKS = {"a": {"raise": {"type": "Declined"}}, "b": {"return": 1}, "c": {"return": 2},
         "d": {"return": 4}}
TOOL = {"type": "object", "properties": {"_tool": {"const": "add"}, "a": {"type": "integer"}}}


def agent(on_event: Sink | None, stream: bool) -> Any:
    llm = ScriptedLLM([{"calls": [{"_tool": "add", "a": 1, "_outputPath": "†sum"},
                                  {"_tool": "add", "a": "†sum", "_outputPath": "†more"}],
                        "output": None}, {"calls": [], "output": "†more"}],
                      delays=0.001 if stream else None)
    return obelisk.run_agent_sync([{"type": "task", "text": "add"}], llm, tools=[TOOL],
                                  activities={"add": lambda c, *_: c["a"] + 1}, clock=clock,
                                  stream=stream, on_event=on_event).to_json()


#: Each way of running, given its on_event: what it returns (to compare with an unobserved
#: run's).
RUNS: dict[str, Callable[[Sink | None], Any]] = {
    "sync": lambda sink: obelisk.run_sync(ROUTED, [], activities=ACTS, clock=clock,
                                          on_event=sink),
    "asyncio": lambda sink: asyncio.run(obelisk.run_async(
        ROUTED, [], activities=ACTS, clock=clock, on_event=sink)),
    "dry-run": lambda sink: obelisk.dry_run(ROUTED, [], mocks=MOCKS, explore=True,
                                            on_event=sink),
    "dry-run asyncio": lambda sink: obelisk.dry_run(ROUTED, [], mocks=MOCKS,
                                                    interpreter="asyncio", on_event=sink),
    "agent": lambda sink: agent(sink, stream=False),
    "agent streamed": lambda sink: agent(sink, stream=True),
}


class RaisingAt:
    """An ``on_event`` callback raising ``exc`` at its ``at``-th event (counting how often
    it was called)."""

    def __init__(self, at: int, exc: BaseException | None = None) -> None:
        self.at, self.exc, self.calls = at, exc or RuntimeError("observer down"), 0

    def __call__(self, event: dict[str, Any]) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise self.exc


def events_of(run: Callable[[Sink | None], Any]) -> int:
    told: list[dict[str, Any]] = []
    run(told.append)
    return len(told)


def failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "obelisk.observe"]


@pytest.mark.parametrize("way", RUNS)
def test_a_callback_raising_at_any_event_changes_nothing_in_the_run(
        way: str, caplog: pytest.LogCaptureFixture) -> None:
    run = RUNS[way]
    unobserved = run(None)
    count = events_of(run)
    for at in sorted({1, 2, count // 2, count - 1, count}):
        caplog.clear()
        callback = RaisingAt(at)
        assert run(callback) == unobserved, f"raised at event {at} of {count}"
        assert callback.calls == at, "told nothing after it raised"
        [warning] = failures(caplog)  # reported once, with the traceback
        assert warning.levelno == logging.WARNING and warning.exc_info is not None
        assert "RaisingAt" in warning.getMessage() and f"event {at}" in warning.getMessage()


def journal_rows(path: pathlib.Path, run_id: str) -> list[Any]:
    """The run's rows without the times they record (a resume row's data is the time it
    resumed at: left out; the others' ``t``, ``started``...: durable_activities.untimed)."""
    with obelisk.Journal.open(path) as journal:
        return [(r.seq, r.kind, r.node, None if r.kind == "resume" else untimed(r.data))
                for r in journal.records(run_id)]


class Interrupting:
    """Activities whose ``d`` is interrupted (Ctrl-C) the first time it runs."""

    def __init__(self) -> None:
        self.interrupted = False
        self.activities = {**ACTS, "d": self.d}

    def d(self, call: dict[str, Any], *_: Any) -> Any:
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return call["w"] + 1


def durable_agent(path: pathlib.Path, sink: Sink | None) -> Any:
    """A durable agent run and its journal's rows."""
    llm = ScriptedLLM([{"calls": [{"_tool": "add", "a": 1, "_outputPath": "†sum"}],
                        "output": None}, {"calls": [], "output": "†sum"}])
    with obelisk.Journal.open(path) as journal:
        result = obelisk.run_agent_sync(
            [{"type": "task", "text": "add"}], llm, tools=[TOOL], clock=clock,
            activities={"add": lambda c, *_: c["a"] + 1}, journal=journal, run_id="R",
            on_event=sink)
    return result.to_json(), journal_rows(path, "R")


def durable(path: pathlib.Path, sink: Sink | None, *, resume: bool | None) -> Any:
    """A durable run interrupted at its last call (``resume``: then resumed, ``sink``
    watching the resume; None: an agent's) and its journal's rows."""
    if resume is None:
        return durable_agent(path, sink)
    with obelisk.Journal.open(path) as journal:
        if not resume:
            result = obelisk.run_durable(ROUTED, [], journal=journal, run_id="R",
                                         activities=ACTS, clock=clock, on_event=sink)
            return result, journal_rows(path, "R")
        with pytest.raises(KeyboardInterrupt):
            obelisk.run_durable(ROUTED, [], journal=journal, run_id="R",
                                activities=Interrupting().activities, clock=clock)
        result = obelisk.resume(journal, "R", activities=ACTS, clock=clock, on_event=sink)
    return result, journal_rows(path, "R")


@pytest.mark.parametrize("resume", [False, True, None], ids=["durable", "resume", "agent"])
def test_a_durable_run_and_a_resume_keep_their_journal(
        tmp_path: pathlib.Path, resume: bool | None, caplog: pytest.LogCaptureFixture) -> None:
    unobserved = durable(tmp_path / "plain.db", None, resume=resume)
    told: list[dict[str, Any]] = []
    durable(tmp_path / "count.db", told.append, resume=resume)
    for at in sorted({1, len(told) // 2, len(told)}):
        assert durable(tmp_path / f"at{at}.db", RaisingAt(at), resume=resume) == unobserved
    assert len(failures(caplog)) == len({1, len(told) // 2, len(told)})


def test_a_failing_span_maker_is_dropped_and_the_run_goes_on(
        otel: Telemetry, monkeypatch: pytest.MonkeyPatch,  # noqa: F811 - the fixture
        caplog: pytest.LogCaptureFixture) -> None:
    unobserved = RUNS["sync"](None)

    def broken(self: SpanMaker, event: dict[str, Any]) -> None:
        raise RuntimeError("exporter on fire")

    monkeypatch.setattr(SpanMaker, "_call_started", broken)
    told: list[dict[str, Any]] = []
    assert RUNS["sync"](told.append) == unobserved
    assert told[-1]["type"] == "run_ended", "the other observers are told everything"
    [warning] = failures(caplog)
    assert "SpanMaker" in warning.getMessage()
    # told no more: only the first run's root span ended (the first run was traced too)
    assert len(otel.named("invoke_workflow")) == 1


@pytest.mark.parametrize("where", ["enter", "leave"])
def test_a_tracer_failing_to_enter_or_leave_a_calls_scope_breaks_nothing(
        where: str, otel: Telemetry, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    unobserved = RUNS["asyncio"](None)

    class Scope:
        def __enter__(self) -> None:
            if where == "enter":
                raise RuntimeError("no context")

        def __exit__(self, *_: Any) -> None:
            if where == "leave":
                raise RuntimeError("no context")

    monkeypatch.setattr(SpanMaker, "scope", lambda self, event: Scope())
    assert RUNS["asyncio"](None) == unobserved
    assert len(failures(caplog)) == 1


def test_the_sdk_failing_to_give_a_trace_context_gives_none(
        otel: Telemetry, monkeypatch: pytest.MonkeyPatch,  # noqa: F811 - the fixture
        caplog: pytest.LogCaptureFixture) -> None:
    def inject(*_: Any, **__: Any) -> None:
        raise RuntimeError("bad propagator")

    monkeypatch.setattr(propagate, "inject", inject)
    monkeypatch.setattr("obelisk.interpreters.stream._REPORTED", set())
    assert trace_carrier() == {} and trace_carrier() == {}
    assert len(failures(caplog)) == 1, "reported once"


@pytest.mark.parametrize("way", ["sync", "asyncio"])
def test_a_keyboard_interrupt_from_a_callback_stops_the_run_as_ctrl_c_does(
        way: str, otel: Telemetry) -> None:  # noqa: F811 - the fixture
    ran: list[str] = []

    def recorded(name: str) -> Callable[..., Any]:
        def activity(*args: Any) -> Any:
            ran.append(name)
            return ACTS[name](*args)
        return activity

    activities = {"a": boom, **{name: recorded(name) for name in ("b", "c", "d")}}

    def stop_at_d(event: dict[str, Any]) -> None:
        if event["type"] == "call_started" and event["tool"] == "d":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        if way == "sync":
            obelisk.run_sync(ROUTED, [], activities=activities, on_event=stop_at_d)
        else:
            asyncio.run(obelisk.run_async(ROUTED, [], activities=activities,
                                          on_event=stop_at_d))
    assert ran == ["c"], "d never ran"
    [root] = otel.named("invoke_workflow")  # the other observers were told the run ended
    assert root.attributes is not None and root.attributes["obelisk.status"] == "cancelled"


def test_a_system_exit_from_a_callback_leaves_a_journal_that_resumes(
        tmp_path: pathlib.Path) -> None:
    unobserved, _ = durable(tmp_path / "plain.db", None, resume=False)

    def exit_at_d(event: dict[str, Any]) -> None:
        if event["type"] == "call_started" and event["tool"] == "d":
            raise SystemExit(3)

    with obelisk.Journal.open(tmp_path / "run.db") as journal:
        with pytest.raises(SystemExit):
            obelisk.run_durable(ROUTED, [], journal=journal, run_id="R", activities=ACTS,
                                clock=clock, on_event=exit_at_d)
        assert obelisk.resume(journal, "R", activities=ACTS, clock=clock) == unobserved


class FullDisk(io.StringIO):
    """A file that takes ``room`` lines, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, text: str) -> int:
        if self.room == 0:
            raise OSError(28, "No space left on device")
        self.room -= 1
        return super().write(text)


def test_the_events_writer_says_once_which_events_it_could_not_write() -> None:
    err = io.StringIO()
    writer = EventsWriter("run.jsonl", FullDisk(room=41), err)
    for seq in range(1, 60):
        writer({"seq": seq, "type": "call_ready", "time": 0.0})
    assert err.getvalue() == ("obelisk: --events run.jsonl: [Errno 28] No space left on "
                              "device; events after seq 41 were not written\n")
    writer.close()


def test_a_pipe_whose_reader_went_away_is_said_once() -> None:
    read, write = os.pipe()
    os.close(read)
    err = io.StringIO()
    writer = EventsWriter("/dev/stdout", os.fdopen(write, "w", encoding="utf-8"), err)
    for seq in range(1, 5):
        writer({"seq": seq, "type": "call_ready", "time": 0.0})
    writer.close()
    assert err.getvalue() == ("obelisk: --events /dev/stdout: [Errno 32] Broken pipe; no "
                              "event was written\n")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.skipif(not pathlib.Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["run", "dry-run"])
def test_a_full_disk_under_events_leaves_the_run_and_its_exit_code(
        command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    args = [command, str(EXAMPLES / "payment.json")]
    if command == "run":
        args += ["--activities", "sample_activities:ACTIVITIES"]
    code, out, _ = cli(*args)
    watched, watched_out, err = cli(*args, "--events", "/dev/full")
    assert (watched, watched_out) == (code, out)
    assert err.count("obelisk: --events /dev/full: [Errno 28] No space left on device; "
                     "no event was written") == 1
