"""Workers and ownership through the API and the command line, on both backends:
``submit`` then ``worker`` runs the runs; a stopped worker finishes its running calls and
releases its runs; a run whose owner's lease expired is taken; a journal of schema 1 is
upgraded; a URL's password is never printed."""

from __future__ import annotations

import json
import pathlib
import sqlite3
import threading
import time
from typing import Any

import durable_activities as acts
import pytest
from clirun import cli

import obelisk
from obelisk import Journal, RecordKind
from obelisk.journal import RunStopped, Worker, submit
from obelisk.journal.sqlite import APPLICATION_ID
from obelisk.urls import hide_from_title, shown

ACTS = "durable_activities:ACTIVITIES"


@pytest.fixture(autouse=True)
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OBELISK_TEST_COUNTS", raising=False)


def test_submitted_runs_are_run_by_a_worker(journal_target: str) -> None:
    with Journal.open(journal_target) as journal:
        ids = [submit(journal, acts.plan(2, 3), tools=[acts.WORK], run_id=f"S{n}")
               for n in range(3)]
        with pytest.raises(obelisk.JournalUnreadable, match="holds a run 'S0' already"):
            submit(journal, acts.plan(1, 1), tools=[acts.WORK], run_id="S0")
    lines: list[str] = []
    report = Worker(journal_target, acts.ACTIVITIES, slots=2, tell=lines.append).run(
        until_idle=True)
    assert sorted(report.ended) == ids and not report.failed and not report.stopped
    reference = obelisk.run_sync(acts.plan(2, 3), tools=[acts.WORK], activities=acts.ACTIVITIES)
    with Journal.open(journal_target) as journal:
        for run_id in ids:
            result = obelisk.resume(journal, run_id, activities={})
            assert result.status == "completed"
            assert [m.get("data") for m in result.context.to_json()] == \
                [m.get("data") for m in reference.context.to_json()]
            assert journal.store.ownership(run_id).status == "completed"


def test_a_stopped_worker_finishes_its_calls_and_releases_its_run(journal_target: str) -> None:
    with Journal.open(journal_target) as journal:
        submit(journal, acts.plan(1, 40), tools=[acts.WORK], run_id="R")
    ran: list[str] = []
    worker: Worker

    def work(call: dict[str, Any], tool: Any, context: Any) -> Any:
        ran.append(call["_idempotencyKey"])
        if len(ran) == 3:
            worker.stop()  # SIGTERM arrives while this call runs: it still finishes
        return acts.work(call, tool, context)

    worker = Worker(journal_target, {"work": work})
    report = worker.run()
    assert report.stopped == ["R"] and not report.ended
    with Journal.open(journal_target) as journal:
        finished = [r for r in journal.records("R") if r.kind is RecordKind.FINISH]
        assert len(finished) == len(ran) == 3  # the running call was recorded
        held = journal.store.ownership("R")
        assert held.left <= 0 and held.status == "open"  # released: free at once
    rest: list[str] = []
    again = Worker(journal_target, {"work": lambda c, t, x: rest.append(
        c["_idempotencyKey"]) or acts.work(c, t, x)}).run(until_idle=True)
    # Step 5 fails and skips the rest of the chain: 6 calls in all, none run twice.
    assert again.ended == ["R"] and not set(rest) & set(ran) and len(rest) == 3


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_run_stopped_is_raised_before_the_next_call(journal_target: str,
                                                    interpreter: str) -> None:
    with Journal.open(journal_target) as journal:
        journal.stop = threading.Event()
        count: list[int] = []

        def work(call: dict[str, Any], tool: Any, context: Any) -> Any:
            count.append(1)
            if len(count) == 2:
                journal.stop.set()  # type: ignore[union-attr]
            return acts.work(call, tool, context)

        submit(journal, acts.plan(1, 5), tools=[acts.WORK], run_id="R",
               interpreter=interpreter)
        with pytest.raises(RunStopped, match="stopped when asked to"):
            obelisk.resume(journal, "R", activities={"work": work})
        assert len(count) == 2
        assert sum(r.kind is RecordKind.FINISH for r in journal.records("R")) == 2


@pytest.mark.slow
def test_a_run_whose_owner_lease_expired_is_taken_by_a_worker(journal_target: str) -> None:
    with Journal.open(journal_target, lease=0.2, owner="elsewhere:1:dead") as gone:
        submit(gone, acts.plan(1, 3), tools=[acts.WORK], run_id="R")
        gone.claim("R")
        gone.leases._wake.set()  # the owner dies: nothing renews its lease any more
        gone.leases._held.clear()
        with Journal.open(journal_target) as other, pytest.raises(obelisk.journal.RunOwned):
            obelisk.resume(other, "R", activities=acts.ACTIVITIES)
        time.sleep(0.3)
        report = Worker(journal_target, acts.ACTIVITIES).run(until_idle=True)
    assert report.ended == ["R"]


def test_agent_runs_are_left_to_a_worker_with_an_llm(journal_target: str) -> None:
    with Journal.open(journal_target) as journal:
        failed = obelisk.run_agent_sync([], obelisk.ScriptedLLM([]), journal=journal,
                                        run_id="A", stream=False)
    assert failed.status == "failed"
    with Journal.open(journal_target) as journal:
        journal.store.append("A", [obelisk.journal.Record(
            len(list(journal.records("A"))) + 1, RecordKind.RESUME, None, '{"at": "x"}')],
            journal.claim("A").epoch)  # open again, as a resume that was cut short leaves it
    report = Worker(journal_target, acts.ACTIVITIES).run(until_idle=True)
    assert report.failed and "no LLM" in report.failed[0][1]


def test_submit_and_worker_on_the_command_line(journal_target: str,
                                               tmp_path: pathlib.Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(acts.plan_file(2, 2)))
    code, out, err = cli("submit", str(plan), "--journal", journal_target, "--run", "C")
    assert code == 0 and out == "C\n" and "submitted" in err
    code, _, err = cli("submit", str(plan), "--journal", journal_target, "--run", "C")
    assert code == 2 and "already" in err
    code, _, err = cli("worker", "--journal", journal_target, "--activities", ACTS,
                       "--until-idle", "--lease", "2")
    assert code == 0 and "run C ended completed" in err and "1 runs ended" in err
    code, _, err = cli("worker", "--journal", journal_target, "--activities", ACTS,
                       "--lease", "0")
    assert code == 2 and "lease" in err


def test_a_password_is_never_printed(pg_cluster: Any, tmp_path: pathlib.Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import pgcluster

    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent))
    url = pg_cluster.url()
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(acts.plan_file(1, 2)))
    outputs = [cli("run", str(plan), "--activities", ACTS, "--journal", url, "--run", "P"),
               cli("history", url, "--run", "P"), cli("history", url, "--run", "none"),
               cli("resume", url, "--run", "P"),
               cli("history", url.replace(pgcluster.PASSWORD, "wrong-" + pgcluster.PASSWORD)),
               cli("history", url.replace("/postgres", "/nodb"))]
    for code, out, err in outputs:
        assert pgcluster.PASSWORD not in out + err, (code, out, err)
    assert outputs[1][0] == 0 and outputs[2][0] == 2 and outputs[4][0] == 2
    assert "***" in outputs[4][2]
    assert shown("postgresql://u:s3cret@h/db?password=x&sslmode=require") == \
        "postgresql://u:***@h/db?password=***&sslmode=require"


def test_the_process_title_hides_a_password() -> None:
    import subprocess
    import sys

    code = ("import sys, setproctitle; from obelisk.urls import hide_from_title; "
            "sys.exit(0 if hide_from_title(sys.argv[1:]) else 3)")
    done = subprocess.run([sys.executable, "-c", code,
                           "--journal=postgresql://u:TOPSECRET@h/db"], timeout=30)
    assert done.returncode == 0
    script = ("import sys, time; from obelisk.urls import hide_from_title; "
              "hide_from_title(sys.argv[1:]); print('ready', flush=True); time.sleep(30)")
    with subprocess.Popen([sys.executable, "-c", script, "history",
                           "postgresql://u:TOPSECRET@h/db"], stdout=subprocess.PIPE) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
            cmdline = pathlib.Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            assert b"TOPSECRET" not in cmdline and b"postgresql://u:***@h/db" in cmdline
        finally:
            proc.kill()
    assert not hide_from_title(["history", "run.db"])


def test_a_journal_of_schema_1_is_upgraded(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # what obelisk wrote before runs had owners
        conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, version INTEGER NOT NULL, "
                     "digest TEXT NOT NULL, header TEXT NOT NULL, created TEXT NOT NULL)")
        conn.execute("CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind "
                     "TEXT NOT NULL, node INTEGER, data TEXT, PRIMARY KEY (run_id, seq)) "
                     "WITHOUT ROWID")
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute("PRAGMA user_version=1")
    new = tmp_path / "new.db"
    with Journal.open(new) as journal:
        obelisk.run_durable(acts.plan(1, 2), journal=journal, run_id="R", tools=[acts.WORK],
                            activities=acts.ACTIVITIES)
        header = journal.store.header("R")
        rows = list(journal.records("R"))
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?)", (
            header.run_id, header.version, header.digest, header.header, header.created))
        conn.executemany("INSERT INTO events VALUES ('R', ?, ?, ?, ?)",
                         [(r.seq, r.kind.value, r.node, r.data) for r in rows])
    code, out, err = cli("history", str(db))  # read-only: read as it is
    assert code == 0 and "(completed)" in out, err
    with Journal.open(db) as journal:
        assert journal.store.ownership("R").status == "completed"
        assert obelisk.resume(journal, "R", activities={}).status == "completed"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2


def test_pgpass_and_take_over_on_the_command_line(pg_cluster: Any, tmp_path: pathlib.Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A URL without a password connects with libpq's .pgpass; ``resume --take-over``
    claims a run whose owner's lease is live (and that owner then writes nothing)."""
    import pgcluster

    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{pg_cluster.port}:*:{pgcluster.USER}:{pgcluster.PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent))
    url = pg_cluster.url(password=False) + "?sslmode=disable"
    with Journal.open(url) as holder:
        submit(holder, acts.plan(1, 2), tools=[acts.WORK], run_id="T" + str(time.time_ns()))
        run_id = holder.runs()[-1].run_id
        tenure = holder.claim(run_id)
        code, _, err = cli("resume", url, "--run", run_id, "--activities", ACTS)
        assert code == 1 and "is owned by" in err
        code, out, err = cli("resume", url, "--run", run_id, "--activities", ACTS,
                             "--take-over")
        assert code == 0 and "status: completed" in out, err
        with pytest.raises(obelisk.journal.RunTakenOver):
            holder.store.renew(run_id, tenure.epoch, 5.0)


def test_an_agent_run_whose_owner_died_is_finished_by_a_worker_with_an_llm(
        journal_target: str) -> None:
    first = {"calls": [{"_tool": "work", "i": 1, "_outputPath": "†s.a"}], "output": None}
    last = {"calls": [], "output": "†s.a.n"}

    def dies(call: dict[str, Any], tool: Any, context: Any) -> Any:
        raise KeyboardInterrupt  # the process dies while the call runs

    with Journal.open(journal_target) as journal, pytest.raises(KeyboardInterrupt):
        obelisk.run_agent_sync([], obelisk.ScriptedLLM([first]), tools=[acts.WORK],
                               activities={"work": dies}, journal=journal, run_id="A")
    llm = obelisk.ScriptedLLM([last])
    report = Worker(journal_target, acts.ACTIVITIES, llm=llm).run(until_idle=True)
    assert report.ended == ["A"] and len(llm.requests) == 1  # tick 1 was not asked again
    with Journal.open(journal_target) as journal:
        assert obelisk.journal_history(journal, "A")["status"] == "completed"
