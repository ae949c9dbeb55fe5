"""Fault tests of durable agent runs with real processes: the agent loop (scripted LLM,
three ticks of twenty calls) killed with SIGKILL at points chosen by a seed, in an
activity (before or after its work) or right after the LLM answered a tick, then run
again with the same journal and run id until it ends.

At every kill, against the journal as the killed process left it: no call with a recorded
outcome is invoked again, and the LLM is never asked again for a tick whose solution is
recorded (the scripted LLM counts its answers in a file). At the end: the run completed
with the uninterrupted run's final context (as a multiset: asyncio orders messages as
calls finish) and output.
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

SEED = 20261123
KILLS = 12
CALLS = agent.TICKS * agent.CHAINS * agent.LENGTH


def messages(context: list[Any]) -> list[str]:
    """The context as a sorted list of JSON texts (order aside)."""
    return sorted(json.dumps(m, sort_keys=True, ensure_ascii=False) for m in context)


@pytest.fixture(scope="module")
def reference() -> Any:
    result = agent.run()
    assert result.status == "completed"
    return result


def state(db: pathlib.Path) -> tuple[set[str], set[int]]:
    """The idempotency keys with a recorded outcome, and the ticks with a solution."""
    if not db.exists():
        return set(), set()
    with Journal.open(db) as journal:
        if not journal.runs():
            return set(), set()
        records = list(journal.records("R"))
    finished: set[str] = set()
    keys: dict[int, str] = {}
    solved: set[int] = set()
    for record in records:
        if record.kind is RecordKind.SOLUTION and record.node is not None:
            solved.add(record.node)
            keys = {}
        elif record.kind is RecordKind.INVOKE and record.node is not None:
            keys[record.node] = record.data or ""
        elif record.kind is RecordKind.FINISH and record.node in keys:
            finished.add(keys[record.node])
    return finished, solved


def lines(path: pathlib.Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [SEED + k for k in range(4)])
def test_killed_agent_runs_resume_to_the_uninterrupted_result(
        tmp_path: pathlib.Path, seed: int, reference: Any) -> None:
    rng = random.Random(seed)
    db, counts, answers = tmp_path / "run.db", tmp_path / "counts.txt", tmp_path / "answers"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
        "PYTHONPATH", "")]), "OBELISK_TEST_COUNTS": str(counts),
        "OBELISK_TEST_ANSWERS": str(answers)}
    kills = 0
    for attempt in range(KILLS + 1):
        finished, solved = state(db)
        calls_before, answers_before = len(lines(counts)), len(lines(answers))
        run_env = dict(env)
        if attempt < KILLS:
            if rng.random() < 0.25:
                run_env["OBELISK_TEST_KILL_ANSWER"] = str(rng.randint(1, 2))
            else:
                run_env["OBELISK_TEST_KILL_AT"] = (
                    f"{rng.randint(1, CALLS // 3)}:{rng.choice(['before', 'after'])}")
        proc = subprocess.run([sys.executable, str(TESTS / "durable_agent.py"), str(db)],
                              env=run_env, capture_output=True, text=True, timeout=300)
        again = set(lines(counts)[calls_before:]) & finished
        assert not again, f"recorded calls invoked again: {sorted(again)}"
        asked = {int(t) for t in lines(answers)[answers_before:]} & solved
        assert not asked, f"the LLM was asked again for recorded ticks {sorted(asked)}"
        if proc.returncode == 0:
            break
        assert proc.returncode == -9, proc.stderr
        kills += 1
    else:
        pytest.fail("the run did not end")
    print(f"seed {seed}: {kills} kills")
    assert kills >= 5  # most seeded points fall inside the run
    final = json.loads(proc.stdout)
    assert final["status"] == "completed"
    assert messages(final["context"]) == messages(reference.context.to_json())
    # Each answer is asked at most twice: once, and again only when killed before the
    # solution reached the journal.
    assert sorted(set(lines(answers))) == ["1", "2", "3", "4"]
