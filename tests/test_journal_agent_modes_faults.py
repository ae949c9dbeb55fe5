"""Fault tests of durable agent runs of every kind with real processes: lazy mode with
``on_plan`` reviews, dry runs on mocks, delegates, streamed ticks. Each run is killed with
SIGKILL at points chosen by a seed (in an activity, when the clock stamps an outcome, right
after the LLM answered, while ``on_plan`` is deciding), then run again with the same journal
and run id until it ends.

At every kill, against the journal as the killed process left it: no call with a recorded
outcome (in the run or in a delegate's run) is invoked again, the LLM is not asked again for
a tick whose solution is recorded, nor ``on_plan`` for a recorded verdict. At the end: the
uninterrupted run's final context, output and token usage; for streamed runs, whose ticks
cut mid-stream go on with the calls recorded and a null output (so the LLM plans the rest
again), the same results and output.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import sys
from typing import Any

import pytest

from obelisk import Journal, RecordKind

TESTS = pathlib.Path(__file__).parent
sys.path.insert(0, str(TESTS))
import durable_agent as agent  # noqa: E402

SEED = 20261124
KILLS = 9
CALLS = agent.TICKS * agent.CHAINS * agent.LENGTH


def messages(context: list[Any], plans: bool = True) -> list[str]:
    """The context as a sorted list of JSON texts (order aside), without plan messages
    unless ``plans``."""
    return sorted(json.dumps(m, sort_keys=True, ensure_ascii=False) for m in context
                  if plans or m.get("type") != "plan")


def run_in(mode: str, db: pathlib.Path | None, env: dict[str, str]) -> Any:
    """Run the agent in a process (without ``db``: unjournaled, the reference)."""
    code = ("import json, durable_agent as a\n"
            "r = a.run()\n"
            "print(json.dumps({'status': r.status.value, 'context': r.context.to_json(),"
            " 'usage': [r.usage.input_tokens, r.usage.output_tokens]}))")
    command = [sys.executable, str(TESTS / "durable_agent.py"), str(db)] if db else [
        sys.executable, "-c", code]
    return subprocess.run(command, env={**env, "OBELISK_TEST_AGENT_MODE": mode},
                          capture_output=True, text=True, timeout=300, cwd=TESTS)


def state(db: pathlib.Path) -> tuple[set[str], set[str], set[int]]:
    """Across the journal's runs: the idempotency keys with a recorded outcome, the
    answers recorded (the run's ticks by number, a delegate's as ``d<tick>``), and the
    ticks with a recorded review."""
    finished: set[str] = set()
    solved: set[str] = set()
    reviewed: set[int] = set()
    if not db.exists():
        return finished, solved, reviewed
    with Journal.open(db) as journal:
        for header in journal.runs():
            prefix = "" if header.run_id == "R" else "d"
            keys: dict[int, str] = {}
            tick = None
            for record in journal.records(header.run_id):
                if record.kind in (RecordKind.SOLUTION, RecordKind.ADMIT):
                    if record.node != tick:
                        keys, tick = {}, record.node
                    if record.kind is RecordKind.SOLUTION:
                        solved.add(f"{prefix}{record.node}")
                elif record.kind is RecordKind.INVOKE and record.node is not None:
                    keys[record.node] = record.data or ""
                elif record.kind is RecordKind.FINISH and record.node in keys:
                    finished.add(keys[record.node])
                elif record.kind is RecordKind.REVIEW and record.node is not None:
                    reviewed.add(record.node)
    return finished, solved, reviewed


def cut_streams(db: pathlib.Path) -> set[int]:
    """The ticks of run R whose stream was cut: calls admitted, no solution recorded."""
    with Journal.open(db) as journal:
        records = list(journal.records("R"))
    admitted = {r.node for r in records if r.kind is RecordKind.ADMIT}
    return admitted - {r.node for r in records if r.kind is RecordKind.SOLUTION}


def lines(path: pathlib.Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def kill_point(mode: str, rng: random.Random) -> tuple[str, str]:
    """Where the next process dies: an environment variable and its value."""
    roll = rng.random()
    if roll < 0.15:
        return "OBELISK_TEST_KILL_ANSWER", str(rng.randint(1, 2))
    if mode == "lazy" and roll < 0.35:
        return "OBELISK_TEST_KILL_REVIEW", str(rng.randint(1, 2))
    if mode == "dry":  # a dry run is quick: earlier points
        return "OBELISK_TEST_KILL_CLOCK", str(rng.randint(1, CALLS // 6))
    if roll < 0.5:
        return "OBELISK_TEST_KILL_CLOCK", str(rng.randint(1, CALLS // 3))
    return "OBELISK_TEST_KILL_AT", f"{rng.randint(1, CALLS // 3)}:{rng.choice(['before', 'after'])}"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["lazy", "dry", "delegate", "stream"])
def test_killed_runs_of_every_kind_resume_to_the_uninterrupted_result(
        tmp_path: pathlib.Path, mode: str) -> None:
    rng = random.Random(f"{SEED}:{mode}")
    db, counts = tmp_path / "run.db", tmp_path / "counts.txt"
    answers, reviews = tmp_path / "answers", tmp_path / "reviews"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
        "PYTHONPATH", "")]), "OBELISK_TEST_COUNTS": str(counts),
        "OBELISK_TEST_ANSWERS": str(answers), "OBELISK_TEST_REVIEWS": str(reviews)}
    reference = run_in(mode, None, {**env, "OBELISK_TEST_COUNTS": str(tmp_path / "ref"),
                                    "OBELISK_TEST_ANSWERS": str(tmp_path / "refa"),
                                    "OBELISK_TEST_REVIEWS": str(tmp_path / "refr")})
    assert reference.returncode == 0, reference.stderr
    expected = json.loads(reference.stdout)
    assert expected["status"] == "completed"
    kills = 0
    cut: set[int] = set()
    for attempt in range(KILLS + 1):
        finished, solved, reviewed = state(db)
        before = len(lines(counts)), len(lines(answers)), len(lines(reviews))
        run_env = dict(env)
        if attempt < KILLS:
            name, value = kill_point(mode, rng)
            run_env[name] = value
        proc = run_in(mode, db, run_env)
        again = set(lines(counts)[before[0]:]) & finished
        assert not again, f"recorded calls invoked again: {sorted(again)}"
        if mode != "stream":  # a streamed tick cut short is answered as another tick
            asked = set(lines(answers)[before[1]:]) & solved
            assert not asked, f"the LLM was asked again for recorded ticks {sorted(asked)}"
        decided = {int(t) for t in lines(reviews)[before[2]:]} & reviewed
        assert not decided, f"on_plan was asked again for recorded ticks {sorted(decided)}"
        if proc.returncode == 0:
            break
        assert proc.returncode == -9, proc.stderr
        kills += 1
        if mode == "stream" and db.exists():
            cut |= cut_streams(db)
    else:
        pytest.fail("the run did not end")
    print(f"{mode}: {kills} kills")
    assert kills >= 4  # most seeded points fall inside the run
    final = json.loads(proc.stdout)
    assert final["status"] == "completed"
    if mode == "stream":
        assert cut, "no kill fell while a stream was open"
        assert messages(final["context"], plans=False) == messages(expected["context"],
                                                                   plans=False)
    else:
        assert messages(final["context"]) == messages(expected["context"])
        assert final["usage"] == expected["usage"]
