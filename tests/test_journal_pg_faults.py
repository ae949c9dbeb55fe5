"""Fault tests of the PostgreSQL journal with real processes and a real server:

- the owner SIGKILLed at several points, then a worker on "another machine" (a process
  with its own environment and owner name) takes the run over once the lease expired and
  finishes it: nothing lost, no call whose outcome was recorded run again;
- a stale owner paused (SIGSTOP) past its lease while another process takes the run over:
  when it wakes (SIGCONT) it writes nothing and stops with a clear error;
- the connection dropped mid-run (``pg_terminate_backend``) and the server restarted
  mid-run: the run reconnects and completes, no recorded outcome lost;
- a worker told to stop (SIGTERM) finishes its running call, releases the run, and
  another worker finishes it.

Activities count their invocations in a file (tests/durable_activities.py). Leases are
short (1 s) so each case takes a few seconds.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Any

import durable_activities as acts
import psycopg
import pytest

import obelisk
from obelisk import Journal, RecordKind

pytestmark = pytest.mark.slow

TESTS = pathlib.Path(__file__).parent
ACTS = "durable_activities:ACTIVITIES"
CHAINS, LENGTH = 3, 6


def without_dates(context: list[Any]) -> list[Any]:
    return [{k: v for k, v in m.items() if k != "_date"} for m in context]


@pytest.fixture(scope="module")
def reference() -> list[Any]:
    result = obelisk.run_sync(acts.plan(CHAINS, LENGTH), activities=acts.ACTIVITIES,
                              tools=[acts.WORK, acts.CHARGE])
    return without_dates(result.context.to_json())


def env_of(tmp: pathlib.Path, **more: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
        "PYTHONPATH", "")]), "OBELISK_TEST_COUNTS": str(tmp / "counts.txt"), **more}


def obelisk_cmd(*argv: str) -> list[str]:
    return [sys.executable, "-m", "obelisk", *argv]


def lines(path: pathlib.Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def finished_keys(url: str, run: str = "R") -> set[str]:
    with Journal.open(url, read_only=True) as journal:
        records = list(journal.records(run))
    keys = {r.node: r.data for r in records if r.kind is RecordKind.INVOKE}
    return {str(keys[r.node]) for r in records if r.kind is RecordKind.FINISH and r.node in keys}


def plan_file(tmp: pathlib.Path) -> str:
    path = tmp / "plan.json"
    path.write_text(json.dumps(acts.plan_file(CHAINS, LENGTH)))
    return str(path)


def final_context(url: str, reference: list[Any]) -> None:
    with Journal.open(url) as journal:
        result = obelisk.resume(journal, "R", activities={})
    assert result.status == "completed"
    assert without_dates(result.context.to_json()) == reference


@pytest.mark.parametrize("kill_at", ["1:after", "3:before", "5:after", "8:before"])
def test_a_killed_owner_is_taken_over_by_a_worker_elsewhere(
        pg_url: str, tmp_path: pathlib.Path, reference: list[Any], kill_at: str) -> None:
    plan, counts = plan_file(tmp_path), tmp_path / "counts.txt"
    killed = subprocess.run(obelisk_cmd("run", plan, "--activities", ACTS, "--journal", pg_url,
                                        "--run", "R", "--lease", "1"),
                            env=env_of(tmp_path, OBELISK_TEST_KILL_AT=kill_at),
                            capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    before, finished = len(lines(counts)), finished_keys(pg_url)
    # Another machine: its own environment, its own owner name; it waits out the lease.
    other = {k: v for k, v in env_of(tmp_path).items() if not k.startswith("OBELISK_TEST_K")}
    worker = subprocess.run(obelisk_cmd("worker", "--journal", pg_url, "--activities", ACTS,
                                        "--until-idle", "--lease", "1", "--owner", "machine-b"),
                            env={**other, "HOSTNAME": "machine-b"}, capture_output=True,
                            timeout=120)
    if b"0 runs ended" in worker.stderr:  # the lease was still live: wait it out, once
        time.sleep(1.2)
        worker = subprocess.run(worker.args, env={**other, "HOSTNAME": "machine-b"},
                                capture_output=True, timeout=120)
    assert worker.returncode == 0 and b"run R ended completed" in worker.stderr, worker.stderr
    later = lines(counts)[before:]
    assert not set(later) & finished, "a call whose outcome was recorded ran again"
    final_context(pg_url, reference)


def test_a_stale_owner_woken_after_a_take_over_writes_nothing(
        pg_url: str, tmp_path: pathlib.Path, reference: list[Any]) -> None:
    plan, counts = plan_file(tmp_path), tmp_path / "counts.txt"
    with subprocess.Popen(obelisk_cmd("run", plan, "--activities", ACTS, "--journal", pg_url,
                                      "--run", "R", "--lease", "1"),
                          env=env_of(tmp_path, OBELISK_TEST_DELAY="0.05"),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as stale:
        while len(lines(counts)) < 4:
            time.sleep(0.005)
        stale.send_signal(signal.SIGSTOP)
        time.sleep(1.3)  # past the lease
        taker = subprocess.run(obelisk_cmd("resume", pg_url, "--run", "R", "--activities",
                                           ACTS), env=env_of(tmp_path), capture_output=True,
                               timeout=120)
        assert taker.returncode == 0, taker.stderr.decode()
        with Journal.open(pg_url, read_only=True) as journal:
            rows = len(list(journal.records("R")))
        stale.send_signal(signal.SIGCONT)
        _, err = stale.communicate(timeout=60)
    assert stale.returncode == 1 and b"was taken over by" in err, err
    with Journal.open(pg_url, read_only=True) as journal:
        assert len(list(journal.records("R"))) == rows  # the stale owner wrote nothing
    final_context(pg_url, reference)


def _backends(url: str) -> list[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [row[0] for row in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'obelisk' "
            "AND pid <> pg_backend_pid()").fetchall()]


@pytest.mark.parametrize("fault", ["terminate", "restart"])
def test_a_dropped_connection_or_a_restarted_server_loses_nothing(
        pg_cluster: Any, pg_url: str, tmp_path: pathlib.Path, reference: list[Any],
        fault: str) -> None:
    plan, counts = plan_file(tmp_path), tmp_path / "counts.txt"
    with subprocess.Popen(obelisk_cmd("run", plan, "--activities", ACTS, "--journal", pg_url,
                                      "--run", "R"),
                          env=env_of(tmp_path, OBELISK_TEST_DELAY="0.03"),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as run:
        while len(lines(counts)) < 5:
            time.sleep(0.005)
        if fault == "terminate":
            with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
                for pid in _backends(pg_cluster.url()):
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        else:
            pg_cluster.restart()
        _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err.decode()
    invocations = lines(counts)
    assert len(invocations) - len(set(invocations)) <= 1  # at most the call in flight
    final_context(pg_url, reference)


def test_a_worker_told_to_stop_releases_its_run_to_another(
        pg_url: str, tmp_path: pathlib.Path, reference: list[Any]) -> None:
    with Journal.open(pg_url) as journal:
        obelisk.journal.submit(journal, acts.plan(CHAINS, LENGTH),
                               tools=[acts.WORK, acts.CHARGE], run_id="R")
    counts = tmp_path / "counts.txt"
    argv = obelisk_cmd("worker", "--journal", pg_url, "--activities", ACTS, "--until-idle")
    with subprocess.Popen(argv, env=env_of(tmp_path, OBELISK_TEST_DELAY="0.05"),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as first:
        while len(lines(counts)) < 3:
            time.sleep(0.005)
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=60)
    assert first.returncode == 0 and b"run R stopped" in err, err
    ran = lines(counts)
    assert finished_keys(pg_url) == set(ran)  # the running call finished and was recorded
    second = subprocess.run(argv, env=env_of(tmp_path), capture_output=True, timeout=120)
    assert second.returncode == 0 and b"run R ended completed" in second.stderr
    later = lines(counts)[len(ran):]
    assert not set(later) & set(ran)
    final_context(pg_url, reference)
