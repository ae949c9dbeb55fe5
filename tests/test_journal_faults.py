"""Fault tests of durable runs with real processes: ``obelisk run --journal`` killed with
SIGKILL at points chosen by a seed, then ``obelisk resume`` until the run ends.

Each chain kills one run ten times (five chains: 50 kill points) and checks, at every kill,
against the journal as the killed process left it on disk:
- no call whose outcome was recorded is invoked again;
- only calls that were in flight at a kill (invoked, no outcome recorded) are invoked
  again; with the sync interpreter at ``sync`` durability, that is one call at most;
and at the end: the final context is the uninterrupted run's (dates aside), nothing lost.
Activities count their invocations in a separate file (tests/durable_activities.py).
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

import obelisk
from obelisk import Journal, RecordKind

TESTS = pathlib.Path(__file__).parent
sys.path.insert(0, str(TESTS))
import durable_activities as acts  # noqa: E402

SEED = 20261123
KILLS = 10
CHAINS, LENGTH = 25, 10


def without_dates(context: list[Any]) -> list[Any]:
    """The messages without their ``_date`` (the clock differs between runs)."""
    return [{k: v for k, v in m.items() if k != "_date"} for m in context]


@pytest.fixture(scope="module")
def reference() -> list[Any]:
    result = obelisk.run_sync(acts.plan(CHAINS, LENGTH), activities=acts.ACTIVITIES,
                              tools=[acts.WORK, acts.CHARGE])
    assert result.status == "completed" and not result.errors
    return without_dates(result.context.to_json())


def journal_state(db: pathlib.Path) -> tuple[set[str], set[str]]:
    """The idempotency keys with an ``invoke`` row, and those with a ``finish`` row."""
    with Journal.open(db) as journal:
        records = list(journal.records("R"))
    keys = {r.node: r.data for r in records if r.kind is RecordKind.INVOKE}
    invoked = set(keys.values())
    finished = {keys[r.node] for r in records if r.kind is RecordKind.FINISH and r.node in keys}
    return invoked, finished


def lines(path: pathlib.Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def chain(tmp: pathlib.Path, interpreter: str, mode: str, durability: str,
          rng: random.Random, reference: list[Any]) -> None:
    plan = tmp / "plan.json"
    plan.write_text(json.dumps(acts.plan_file(CHAINS, LENGTH)))
    db, counts, out = tmp / "run.db", tmp / "counts.txt", tmp / "out.json"
    common = ["--activities", "durable_activities:ACTIVITIES", "--out", str(out),
              "--durability", durability]
    first = ["run", str(plan), "--journal", str(db), "--run", "R", "--interpreter",
             interpreter, *common]
    if interpreter == "asyncio":
        first += ["--max-concurrency", "8"]
    again = ["resume", str(db), "--run", "R", *common]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
        "PYTHONPATH", "")]), "OBELISK_TEST_COUNTS": str(counts)}
    kills: list[tuple[int, set[str], set[str]]] = []  # (lines before, invoked, finished)
    argv = first
    while True:
        run_env = dict(env)
        if len(kills) < KILLS and mode == "self":
            phase = rng.choice(["before", "after"])
            run_env["OBELISK_TEST_KILL_AT"] = f"{rng.randint(1, 8)}:{phase}"
        proc = subprocess.Popen([sys.executable, "-m", "obelisk", *argv], env=run_env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if len(kills) < KILLS and mode == "external":
            target = len(lines(counts)) + rng.randint(1, 8)
            while proc.poll() is None and len(lines(counts)) < target:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.003))
            proc.send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=120)
        if proc.returncode == -signal.SIGKILL:
            kills.append((len(lines(counts)), *journal_state(db)))
            argv = again
            continue
        assert proc.returncode == 0, stderr.decode()
        break
    assert len(kills) == KILLS, f"the run ended after {len(kills)} kills"
    invocations = lines(counts)
    for before, _, finished in kills:
        earlier, later = invocations[:before], set(invocations[before:])
        # What runs again was invoked before the kill and has no recorded outcome: it was
        # in flight at this kill (or at an earlier one, and not yet run again).
        assert not later & finished, "a call whose outcome was recorded ran again"
        if durability == "sync" and interpreter == "sync":
            # One call at a time, and the resume runs it first: one call in flight.
            assert len(set(earlier) - finished) <= 1, "an outcome was lost"
    final = without_dates(json.loads(out.read_text()))
    if interpreter == "sync":
        assert final == reference
    else:  # the same messages, appended in the order calls finished
        assert sorted(map(json.dumps, final)) == sorted(map(json.dumps, reference))
    _, finished = journal_state(db)
    assert finished >= set(invocations)  # every call that ran has its outcome recorded
    history = obelisk.journal_history(Journal.open(db), "R")
    assert history["status"] == "completed"


CASES = [
    ("sync", "self", "sync"),
    ("asyncio", "self", "sync"),
    ("sync", "external", "sync"),
    ("asyncio", "external", "sync"),
    ("sync", "external", "batch"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("interpreter", "mode", "durability"), CASES)
def test_killed_runs_resume_to_the_uninterrupted_result(
        tmp_path: pathlib.Path, reference: list[Any], interpreter: str, mode: str,
        durability: str) -> None:
    rng = random.Random(f"{SEED}-{interpreter}-{mode}-{durability}")
    chain(tmp_path, interpreter, mode, durability, rng, reference)


@pytest.mark.slow
def test_an_at_most_once_call_killed_in_flight_is_interrupted(tmp_path: pathlib.Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(acts.plan_file(2, 3, tool="charge")))
    db, counts, out = tmp_path / "run.db", tmp_path / "counts.txt", tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
        "PYTHONPATH", "")]), "OBELISK_TEST_COUNTS": str(counts)}
    killed = subprocess.run(
        [sys.executable, "-m", "obelisk", "run", str(plan), "--activities",
         "durable_activities:ACTIVITIES", "--journal", str(db), "--run", "R"],
        env={**env, "OBELISK_TEST_KILL_AT": "2:after"}, capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    (victim,) = [key for key in lines(counts)[1:]]
    resumed = subprocess.run(
        [sys.executable, "-m", "obelisk", "resume", str(db), "--activities",
         "durable_activities:ACTIVITIES", "--out", str(out)],
        env=env, capture_output=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert lines(counts).count(victim) == 1  # never invoked again
    errors = [m for m in json.loads(out.read_text()) if m.get("kind") == "e"]
    (error,) = errors[0]["data"].values()
    assert error["type"] == "Interrupted" and error["data"] == {"idempotencyKey": victim}
