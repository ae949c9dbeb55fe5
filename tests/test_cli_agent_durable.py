"""The command line of durable agent runs: ``agent --journal``, ``resume --llm``,
``history`` of an agent run, and what they refuse."""

from __future__ import annotations

import io
import json
import pathlib
import sys

import pytest
from clirun import cli as run

TESTS = pathlib.Path(__file__).parent
sys.path.insert(0, str(TESTS))
import durable_activities as acts  # noqa: E402

ACTS = "durable_activities:ACTIVITIES"
FIRST = {"calls": [{"_tool": "work", "i": 1, "_outputPath": "†s.a"},
                   {"_tool": "work", "i": 2, "_outputPath": "†s.b"}], "output": None}
LAST = {"calls": [], "output": "†s.b.n"}


@pytest.fixture(autouse=True)
def importable_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.delenv("OBELISK_TEST_COUNTS", raising=False)


@pytest.fixture
def files(tmp_path: pathlib.Path, journal_target: str) -> dict[str, str]:
    paths = {"agent": tmp_path / "agent.json", "one": tmp_path / "one.json",
             "two": tmp_path / "two.json"}
    paths["agent"].write_text(json.dumps({"context": [], "tools": [acts.WORK]}))
    paths["one"].write_text(json.dumps([FIRST]))
    paths["two"].write_text(json.dumps([LAST]))
    return {k: str(v) for k, v in paths.items()} | {"db": journal_target}


def test_agent_journal_then_resume_with_llm(files: dict[str, str]) -> None:
    code, out, err = run("agent", files["agent"], "--llm", "script:" + files["one"],
                         "--activities", ACTS, "--journal", files["db"], "--run", "A")
    assert code == 1 and "journal: run A in" in err and "failed" in out  # script ran out
    code, out, err = run("resume", files["db"], "--llm", "script:" + files["two"],
                         "--activities", ACTS, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "completed" and result["output"] == 2
    code, out, _ = run("history", files["db"], "--json")
    history = json.loads(out)
    assert code == 0 and history["kind"] == "agent" and history["status"] == "completed"
    assert [e["tick"] for e in history["events"] if e["event"] == "solution"] == [1, 2]
    # An ended agent run replays to its result: no LLM answer is needed.
    code, out, _ = run("resume", files["db"], "--llm", "script:" + files["one"], "--json")
    assert code == 0 and json.loads(out)["output"] == 2


def test_agent_journal_records_dry_and_streamed_runs(files: dict[str, str]) -> None:
    # These were refused before they were recorded: a dry run on the file's mocks, and a
    # streamed run; each resumes to its result, and the history shows what it recorded.
    dry = pathlib.Path(files["agent"]).with_name("dry.json")
    dry.write_text(json.dumps({"context": [], "tools": [acts.WORK],
                               "mocks": {"work": {"return": {"n": 5}}}}))
    code, out, err = run("agent", str(dry), "--llm", "script:" + files["one"],
                         "--journal", files["db"], "--run", "D", "--json")
    assert code == 1 and "journal: run D in" in err  # the script ran out at tick 2
    code, out, err = run("resume", files["db"], "--run", "D", "--llm",
                         "script:" + files["two"], "--json")
    assert code == 0, err
    assert json.loads(out)["output"] == 5
    code, out, err = run("agent", files["agent"], "--llm", "script:" + files["one"],
                         "--activities", ACTS, "--stream", "--journal", files["db"],
                         "--run", "S")
    assert code == 1 and "journal: run S in" in err
    code, out, _ = run("history", files["db"], "--run", "S")
    assert code == 0 and "admit" in out and "streamed" in out and "tokens" in out
    code, out, err = run("resume", files["db"], "--run", "S", "--llm",
                         "script:" + files["two"], "--activities", ACTS, "--json")
    assert code == 0, err
    assert json.loads(out)["output"] == 2


def test_agent_journal_refusals(files: dict[str, str]) -> None:
    run("agent", files["agent"], "--llm", "script:" + files["one"], "--activities", ACTS,
        "--journal", files["db"], "--run", "A")
    code, _, err = run("resume", files["db"], "--activities", ACTS)
    assert code == 2 and "give --llm" in err
    code, _, err = run("resume", files["db"], "--llm", "script:" + files["two"],
                       "--interpreter", "asyncio")
    assert code == 2 and "resumes with the options it was recorded with" in err


def test_a_lazy_run_reviewed_at_the_terminal_is_not_asked_again(
        files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\n"))
    code, out, err = run("agent", files["agent"], "--llm", "script:" + files["one"],
                         "--activities", ACTS, "--mode", "lazy", "--approve",
                         "--journal", files["db"], "--run", "L")
    assert code == 1 and err.count("[a]pprove, [e]dit, [r]eject the plan?") == 1  # the script ran out
    code, out, _ = run("history", files["db"], "--run", "L")
    assert "approved the plan" in out and "at the terminal" in out  # who decided
    code, _, err = run("resume", files["db"], "--run", "L", "--llm", "script:" + files["two"],
                       "--activities", ACTS)
    assert code == 2 and "plan review hook" in err and "--approve" in err
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # nothing left to answer
    code, out, err = run("resume", files["db"], "--run", "L", "--llm",
                         "script:" + files["two"], "--activities", ACTS, "--approve", "--json")
    assert code == 0, err
    assert "[a]pprove" not in err and json.loads(out)["output"] == 2


def test_history_of_an_agent_run_shows_tick_and_call(files: dict[str, str]) -> None:
    # Failed before: the tick was shown under a column named "call", and never the call.
    run("agent", files["agent"], "--llm", "script:" + files["one"], "--activities", ACTS,
        "--journal", files["db"], "--run", "A")
    code, out, _ = run("history", files["db"])
    lines = out.splitlines()
    assert code == 0 and lines[1].split() == ["seq", "event", "tick", "call", "instance",
                                              "detail"]
    keys = sorted(line.split()[1:5] for line in lines[2:] if " invoke " in line)
    assert keys == [["invoke", "1", "0", "key"], ["invoke", "1", "1", "key"]]
    code, out, _ = run("history", files["db"], "--json")
    assert sorted((e["tick"], e["node"], e["call"]) for e in json.loads(out)["events"]
                  if e["event"] == "finish") == [(1, 0, 0), (1, 1, 1)]


def test_a_resumed_agent_says_which_ticks_it_replayed(files: dict[str, str]) -> None:
    code, out, _ = run("agent", files["agent"], "--llm", "script:" + files["one"],
                       "--activities", ACTS, "--journal", files["db"], "--run", "R")
    assert code == 1 and "tick 1: asking the LLM" in out
    code, out, err = run("resume", files["db"], "--llm", "script:" + files["two"],
                         "--activities", ACTS)
    assert code == 0, err
    assert "replayed tick 1 from the journal" in out and "tick 1: asking" not in out
    assert "tick 2: asking the LLM" in out
