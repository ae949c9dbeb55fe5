"""Hostile journals and two processes on one journal (issue 26, item 16).

- a row whose data is valid JSON of the wrong shape is refused like any damage: exit 2
  with the journal, the run and the event named, never an internal error (``resume`` and
  ``history``, every kind of row, agent runs included);
- a read-only journal is said to be read-only (``resume`` exits 2 naming it), and
  ``history`` still reads it;
- two processes resuming one run: exactly one drives it; the other is refused with the
  owner and its lease (exit 1), and an owner whose run was taken over writes nothing more.

Every test here failed on the code before its fix.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest
from clirun import cli

import obelisk
from obelisk import Journal
from obelisk.journal import Record, RunOwned, RunRecorder, RunTakenOver, submit

TESTS = pathlib.Path(__file__).parent.parent
sys.path.insert(0, str(TESTS))
import durable_activities as acts  # noqa: E402
import durable_agent as agent  # noqa: E402

ACTS = "durable_activities:ACTIVITIES"

#: Valid JSON, each of a shape no row of any kind has.
WRONG_SHAPES = ["[]", "1", '"text"', "null", "{}", '{"date": 1, "returned": 2}',
                '{"status": [1]}', '{"in": "x", "out": null}', '{"verdict": 5}',
                '{"run": 3}', '{"raised": 1, "message": 2}', '{"date": "d", "chose": 1}']


@pytest.fixture(autouse=True)
def importable_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.delenv("OBELISK_TEST_COUNTS", raising=False)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """An SQLite journal holding a plan's run ``P`` (one call routed to an error branch)
    and an agent run ``A``."""
    db = tmp_path_factory.mktemp("hostile") / "run.db"
    with Journal.open(db) as journal:
        obelisk.run_durable(acts.plan(2, 3), journal=journal, run_id="P",
                            tools=[acts.WORK], activities=acts.ACTIVITIES,
                            approve=lambda call: True)
        obelisk.run_agent_sync([], obelisk.ScriptedLLM(agent.solution), tools=agent.TOOLS,
                               activities=acts.ACTIVITIES, journal=journal, run_id="A",
                               max_ticks=agent.TICKS + 2)
    return {"db": db}


def _kinds(db: pathlib.Path, run: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return sorted({k for (k,) in conn.execute(
            "SELECT DISTINCT kind FROM events WHERE run_id = ?", (run,))})


@pytest.mark.slow
@pytest.mark.parametrize("run", ["P", "A"])
def test_rows_of_the_wrong_shape_exit_2_naming_the_journal(
        recorded: dict[str, pathlib.Path], tmp_path: pathlib.Path, run: str) -> None:
    script = tmp_path / "script.json"
    script.write_text("[]")
    for kind in _kinds(recorded["db"], run):
        for shape in WRONG_SHAPES:
            db = tmp_path / f"{run}-{kind}.db"
            shutil.copy(recorded["db"], db)
            with sqlite3.connect(db) as conn:
                conn.execute("UPDATE events SET data = ? WHERE run_id = ? AND kind = ?",
                             (shape, run, kind))
            for argv in (["history", str(db), "--run", run],
                         ["history", str(db), "--run", run, "--json"],
                         ["resume", str(db), "--run", run, "--activities", ACTS,
                          *(["--llm", f"script:{script}"] if run == "A" else ["--approve"])]):
                code, _, err = cli(*argv)
                assert "internal error" not in err, (kind, shape, argv, err)
                assert code in (0, 1, 2), (kind, shape, argv, err)
                if code == 2:
                    assert "\nerror: " in "\n" + err and str(db) in err, (kind, shape, err)
            db.unlink()


@pytest.mark.slow
def test_a_read_only_journal_is_said_to_be_read_only(tmp_path: pathlib.Path) -> None:
    """As a user who cannot write the file or its folder (root can write anything, so
    the commands run as ``nobody`` when the tests run as root)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "run.db"
    with Journal.open(db) as journal:
        obelisk.run_durable(acts.plan(1, 2), journal=journal, run_id="R",
                            tools=[acts.WORK], activities=acts.ACTIVITIES)
    as_user: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop to another user")
        as_user = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        for parent in [tmp_path, *tmp_path.parents]:
            os.chmod(parent, os.stat(parent).st_mode | 0o005)
    os.chmod(db, 0o444)
    os.chmod(folder, 0o555)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    try:
        def run(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*as_user, sys.executable, "-m", "obelisk", *argv],
                                  capture_output=True, text=True, env=env, timeout=120,
                                  cwd="/")
        resumed = run("resume", str(db), "--activities", ACTS)
        assert resumed.returncode == 2, resumed.stderr
        assert "read-only" in resumed.stderr and "corrupted" not in resumed.stderr
        history = run("history", str(db), "--json")
        assert history.returncode == 0, history.stderr
        assert json.loads(history.stdout)["status"] == "completed"
    finally:
        os.chmod(folder, 0o755)
        os.chmod(db, 0o644)


def test_a_live_lease_refuses_a_second_resumer(journal_target: str) -> None:
    with Journal.open(journal_target) as first:
        submit(first, acts.plan(1, 2), tools=[acts.WORK], run_id="R")
        held = first.claim("R")
        with Journal.open(journal_target) as second:
            with pytest.raises(RunOwned, match=r"run 'R' is owned by .*lease is live"):
                obelisk.resume(second, "R", activities=acts.ACTIVITIES)
            code, _, err = cli("resume", journal_target, "--run", "R", "--activities", ACTS)
            assert code == 1 and "is owned by" in err and first.owner in err
            # Taken over: the first owner's next write is refused, and nothing is written.
            result = obelisk.resume(second, "R", activities=acts.ACTIVITIES, take_over=True)
            assert result.status == "completed"
        before = len(list(first.records("R")))
        recorder = RunRecorder(first, "R", obelisk.compile_plan([]),
                                               next_seq=before + 1, tenure=held)
        with pytest.raises(RunTakenOver, match="was taken over by"):
            recorder.ended("completed", 0)
        assert len(list(first.records("R"))) == before


@pytest.mark.slow
def test_two_resumers_at_once_exactly_one_drives(journal_target: str,
                                                 tmp_path: pathlib.Path) -> None:
    """Two processes resume one run at the same moment: one runs it, the other is refused
    naming the owner; no call runs twice."""
    with Journal.open(journal_target) as journal:
        submit(journal, acts.plan(2, 3), tools=[acts.WORK], run_id="R")
    counts = tmp_path / "counts.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]),
           "OBELISK_TEST_COUNTS": str(counts), "OBELISK_TEST_DELAY": "0.05"}
    argv = [sys.executable, "-m", "obelisk", "resume", journal_target, "--run", "R",
            "--activities", ACTS]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    results = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 1], results
    refused = next(err for p, (_, err) in zip(procs, results, strict=True) if p.returncode == 1)
    assert "is owned by" in refused and "lease is live" in refused
    keys = counts.read_text().split()
    assert len(keys) == len(set(keys)) == 6


@pytest.mark.slow
def test_a_stale_owner_that_wakes_up_writes_nothing(journal_target: str) -> None:
    """An owner paused past its lease (SIGSTOP, a long GC pause) is taken over; when it
    wakes its renewal and its writes are refused, and the run it held is not damaged."""
    with Journal.open(journal_target, lease=0.3) as stale:
        submit(stale, acts.plan(1, 2), tools=[acts.WORK], run_id="R")
        tenure = stale.claim("R")
        stale.leases.close()  # stands for the pause: nothing renews the lease
        time.sleep(0.5)
        with Journal.open(journal_target) as other:
            result = obelisk.resume(other, "R", activities=acts.ACTIVITIES)
        assert result.status == "completed"
        with pytest.raises(RunTakenOver):
            stale.store.renew("R", tenure.epoch, 5.0)
        with pytest.raises(RunTakenOver):
            stale.store.append("R", [Record(99, obelisk.RecordKind.CANCEL,
                                                            None, None)], tenure.epoch)
        assert obelisk.journal_history(stale, "R")["status"] == "completed"
