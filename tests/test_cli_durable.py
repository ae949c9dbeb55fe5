"""The command line of durable runs: ``run --journal``, ``resume``, ``history``."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import pytest
from clirun import cli as run

import obelisk

TESTS = pathlib.Path(__file__).parent
sys.path.insert(0, str(TESTS))
import durable_activities as acts  # noqa: E402

ACTS = "durable_activities:ACTIVITIES"


@pytest.fixture(autouse=True)
def importable_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.delenv("OBELISK_TEST_COUNTS", raising=False)


@pytest.fixture
def plan(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(acts.plan_file(2, 3)))
    return str(path)


def test_run_with_a_journal_then_history_and_resume(tmp_path: pathlib.Path, plan: str,
                                                    journal_target: str) -> None:
    db = journal_target
    code, out, err = run("run", plan, "--activities", ACTS, "--journal", db, "--run", "R1")
    assert code == 0 and "journal: run R1 in" in err
    code, table, _ = run("history", db)
    assert code == 0
    assert table.splitlines()[0].startswith("run R1 (completed)")
    assert "key R1//0/0/" in table and "returned {\"n\": 0}" in table
    code, text, _ = run("history", db, "--run", "R1", "--json")
    data = json.loads(text)
    assert code == 0 and data["status"] == "completed" and data["events"][-1]["event"] == "end"
    out_file = tmp_path / "final.json"
    code, again, err = run("resume", db, "--out", str(out_file))  # ended: nothing runs
    # The same report, the failures routed to an error branch included: they are read
    # from the journal's events, though nothing is raised again when the run has ended.
    assert "\nrouted to an error branch:\n  call 5 (work): Flaky: step 5 failed\n" in out
    assert code == 0 and again == out and "resuming run R1" in err
    assert len(json.loads(out_file.read_text())) == 6


class Crash(BaseException):
    """Stands for the process dying."""


def test_resume_continues_an_unfinished_run(tmp_path: pathlib.Path,
                                            journal_target: str) -> None:
    db = journal_target
    seen = []

    def crash_on_third(call: dict[str, Any], tool: Any, context: Any) -> Any:
        seen.append(call["i"])
        if len(seen) == 3:
            raise Crash()
        return acts.work(call, tool, context)

    with obelisk.Journal.open(db) as journal, pytest.raises(Crash):
        obelisk.run_durable(acts.plan(2, 3), journal=journal, run_id="R",
                            tools=[acts.WORK], activities={"work": crash_on_third})
    code, _, err = run("resume", str(db))
    assert code == 2 and "has not ended: give --activities" in err
    out_file = tmp_path / "final.json"
    code, out, _ = run("resume", str(db), "--activities", ACTS, "--out", str(out_file))
    assert code == 0 and "status: completed" in out
    assert len(json.loads(out_file.read_text())) == 6
    code, table, _ = run("history", str(db))
    assert "resume" in table and "(completed)" in table


def test_resume_with_another_interpreter(plan: str, journal_target: str) -> None:
    db = journal_target
    assert run("run", plan, "--activities", ACTS, "--journal", db, "--interpreter",
               "asyncio", "--durability", "batch")[0] == 0
    code, out, _ = run("resume", db, "--interpreter", "sync")
    assert code == 0 and "status: completed" in out


def _garbage(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "bad.db"
    path.write_bytes(b"not a database at all" * 50)
    return str(path)


@pytest.mark.parametrize("command", ["history", "resume"])
def test_an_unusable_journal_exits_2(tmp_path: pathlib.Path, command: str) -> None:
    code, out, err = run(command, _garbage(tmp_path))
    assert code == 2 and out == "" and err.startswith("error: ") and "corrupted" in err
    assert "Traceback" not in err


def test_a_journal_that_cannot_be_created_exits_2(tmp_path: pathlib.Path, plan: str) -> None:
    code, _, err = run("run", plan, "--activities", ACTS, "--journal",
                       str(tmp_path / "missing" / "run.db"))
    assert code == 2 and "cannot open the journal" in err


def test_an_unknown_run_and_another_plan_exit_2(tmp_path: pathlib.Path, plan: str,
                                                journal_target: str) -> None:
    db = journal_target
    assert run("run", plan, "--activities", ACTS, "--journal", db, "--run", "R")[0] == 0
    code, _, err = run("history", db, "--run", "nope")
    assert code == 2 and "no run 'nope' (runs: R)" in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps(acts.plan_file(3, 3)))
    code, _, err = run("run", str(other), "--activities", ACTS, "--journal", db, "--run", "R")
    assert code == 2 and "recorded for another plan" in err


def test_an_empty_journal_has_no_run(tmp_path: pathlib.Path) -> None:
    obelisk.Journal.open(tmp_path / "new.db").close()
    code, _, err = run("history", str(tmp_path / "new.db"))
    assert code == 2 and "holds no run" in err


@pytest.mark.parametrize("command", ["history", "resume"])
def test_a_missing_journal_exits_2_and_is_not_created(tmp_path: pathlib.Path,
                                                      command: str) -> None:
    code, _, err = run(command, str(tmp_path / "none.db"))
    assert code == 2 and "no such journal" in err
    assert not (tmp_path / "none.db").exists()
