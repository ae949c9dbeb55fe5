"""bench/headline.py: every contender reaches every task's known answer (latencies at
zero, so nothing here is timed), the strategies' scripts have the shape they claim, the
simulated model paces and counts what it should, and the report says what it measured."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest
from attrs import evolve
from bench_scripts import load_script

from obelisk.llm import Request, StreamedCall, StreamedOutput

ROOT = pathlib.Path(__file__).resolve().parent.parent
PEERS_PYTHON = ROOT / "bench" / ".peers-venv" / "bin" / "python"


headline = load_script("headline", "bench_headline")
from arena import llm as simulated  # noqa: E402  (bench/ is on the path once headline loads)
from arena.catalog import BRANCH, TASKS  # noqa: E402
from arena.growth import request_growth  # noqa: E402
from arena.measured import Measured, Settings  # noqa: E402
from arena.report import all_right, goals, right, table  # noqa: E402
from arena.schedule import obelisk_solutions, waves, will_run  # noqa: E402
from arena.tasks import Tool  # noqa: E402

ZERO = Settings(simulated.Latency(0.0, 0.0), 0.0)
OBELISK = ("whole", "stream", "react")
LANGGRAPH = ("lg-react", "lg-parallel")


def run(task: Any, contender: str) -> Measured:
    measured: Measured = asyncio.run(headline.run_one(task, contender, ZERO))
    return measured


@pytest.mark.parametrize("contender", OBELISK)
@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_every_obelisk_contender_gives_every_known_answer(task: Any, contender: str) -> None:
    measured = run(task, contender)
    assert measured.answers == tuple(turn.answer for turn in task.turns)
    assert right(measured, task)
    # A plan is one request a user turn; ReAct one a call it makes, and one to answer.
    expected = (len(task.turns) if contender != "react"
                else sum(len(will_run(turn, task.fails)) + 1 for turn in task.turns))
    assert measured.requests == expected
    assert measured.input_tokens > 0 and measured.output_tokens > 0


@pytest.mark.slow
def test_every_langgraph_contender_gives_every_known_answer() -> None:
    if headline.peers.have_langgraph():
        for task in TASKS:
            for contender in LANGGRAPH:
                measured = run(task, contender)
                assert right(measured, task), (task.name, contender, measured.answers)
        return
    if PEERS_PYTHON.exists():  # LangGraph lives in the benchmarks' own environment
        done = subprocess.run([str(PEERS_PYTHON), str(ROOT / "bench" / "headline.py"), "--check"],
                              capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, OBELISK_PEERS_VENV="1"))
        assert done.returncode == 0, done.stdout + done.stderr
        rows = [line for line in done.stdout.splitlines()
                if "(LangGraph)" in line or "LangGraph, parallel" in line]
        assert len(rows) == len(TASKS) * len(LANGGRAPH)
        assert all(row.endswith("right") for row in rows), rows
        return
    if os.environ.get("OBELISK_REQUIRE_LANGGRAPH"):
        pytest.fail("OBELISK_REQUIRE_LANGGRAPH is set, but LangGraph is neither importable "
                    f"nor in {PEERS_PYTHON.parent.parent} (.ci/run makes it)")
    pytest.skip("LangGraph is not installed here (python bench/headline.py --langgraph "
                "installs it in bench/.peers-venv)")


def test_a_plan_takes_the_branch_its_primary_gives() -> None:
    # The branch task with a primary that answers: the plan's fallback is skipped (a dead
    # branch) and never called, and every strategy reads the primary's rate.
    backup_calls: list[str] = []

    def tools() -> tuple[Tool, ...]:
        primary, backup, convert = BRANCH.tools()
        return (evolve(primary, run=lambda pair: {"pair": pair, "rate": 0.9}),
                evolve(backup, run=lambda pair: backup_calls.append(pair) or {"rate": 0.0}),
                convert)

    turn = evolve(BRANCH.turns[0], answer={"eur": 225.0, "rate": 0.9})
    task = evolve(BRANCH, turns=(turn,), tools=tools, fails=frozenset())
    for contender in OBELISK:
        measured = run(task, contender)
        assert measured.answers == ({"eur": 225.0, "rate": 0.9},), contender
    assert backup_calls == []
    assert [len(w) for w in waves(turn, frozenset(), one_at_a_time=False)] == [1, 1]


def test_the_strategies_have_the_shapes_they_claim() -> None:
    parallel, chain, fan_out, branch, session = (t.turns for t in TASKS)
    by_wave = [len(w) for w in waves(parallel[0], frozenset(), one_at_a_time=False)]
    assert by_wave == [5, 1]
    assert [len(w) for w in waves(fan_out[0], frozenset(), one_at_a_time=False)] == [10, 1]
    assert [len(w) for w in waves(chain[0], frozenset(), one_at_a_time=False)] == [1, 1, 1, 1]
    assert [[s.id for s in w] for w in waves(branch[0], BRANCH.fails, one_at_a_time=False)] \
        == [["rate"], ["rateBackup"], ["converted"]]
    assert [len(w) for w in waves(parallel[0], frozenset(), one_at_a_time=True)] == [1] * 6
    assert len(session) == 3
    plan = obelisk_solutions(branch[0], BRANCH.fails, "plan")
    assert len(plan) == 1 and [c["_tool"] for c in plan[0]["calls"]] == \
        ["rate_primary", "rate_backup", "convert"]
    assert plan[0]["calls"][0]["_outputPath"] == "†state.rate || †state.rateFailed"
    assert plan[0]["calls"][1]["pair"] == '†state.rateFailed && "USD/EUR"'
    react = obelisk_solutions(branch[0], BRANCH.fails, "react")
    assert [len(s["calls"]) for s in react] == [1, 1, 1, 0]
    assert react[2]["calls"][0]["rate"] == "†state.rateBackup.rate"  # the one seen to work
    with pytest.raises(ValueError, match="unknown obelisk strategy"):
        obelisk_solutions(branch[0], BRANCH.fails, "parallel")


def test_call_ends_mark_each_call_in_the_answer_text() -> None:
    for task in TASKS:
        for turn in task.turns:
            for solution in obelisk_solutions(turn, task.fails, "plan"):
                text = json.dumps(solution, ensure_ascii=False)
                for call, end in zip(solution["calls"], simulated.call_ends(solution),
                                     strict=True):
                    assert text[:end].endswith(json.dumps(call, ensure_ascii=False))
    with pytest.raises(ValueError, match="must start with its calls"):
        simulated.call_ends({"output": None, "calls": [{"_tool": "x"}]})


def request() -> Request:
    return Request("You plan calls.", (), '{"type": "object"}')


def test_the_model_counts_the_rendered_request_and_its_answer() -> None:
    answer = {"calls": [{"_tool": "get_ticket", "id": "T-17", "_outputPath": "†state.t"}],
              "output": None}
    model = simulated.SimulatedLLM([answer], simulated.Latency(0.0, 0.0))
    reply = asyncio.run(model.solve(request()))
    assert reply.value == answer
    assert reply.usage.input_tokens == simulated.count_tokens(request().render())
    assert reply.usage.output_tokens == simulated.count_tokens(
        json.dumps(answer, ensure_ascii=False))
    assert len(model.requests) == 1


def test_a_streamed_call_comes_when_its_last_token_is_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The deadlines the stream sleeps until, from its start: the first token, then the
    # tokens up to each call's end (characters / 4), then the whole answer's.
    latency = simulated.Latency(0.4, 0.02)
    solution = obelisk_solutions(TASKS[1].turns[0], frozenset(), "plan")[0]
    deadlines: list[float] = []

    async def record(deadline: float) -> None:
        deadlines.append(deadline)

    monkeypatch.setattr(simulated, "sleep_until", record)

    async def items() -> tuple[list[Any], float]:
        start = asyncio.get_running_loop().time()
        got = [item async for item in simulated.SimulatedLLM([solution], latency)
               .stream(request())]
        return got, start

    got, start = asyncio.run(items())
    assert [type(i) for i in got] == [StreamedCall] * 4 + [StreamedOutput]
    assert [i.call for i in got[:-1]] == solution["calls"]
    ends = simulated.call_ends(solution)
    expected = [latency.until(e / 4) for e in ends]
    expected.append(latency.until(got[-1].usage.output_tokens))
    assert [round(d - start, 2) for d in deadlines] == [round(e, 2) for e in expected]
    assert deadlines == sorted(deadlines)


def test_the_request_follows_the_data_not_the_history() -> None:
    growth = asyncio.run(request_growth())
    assert growth.ratio() <= 1.2, growth.lines()
    assert growth.met() and "NOT met" not in growth.lines()[1]


def test_the_report_marks_a_wrong_answer_and_an_absent_langgraph() -> None:
    task = TASKS[1]
    good = run(task, "whole")
    bad = evolve(good, contender="stream", answers=({"to": "someone else"},))
    results = {(task.name, "whole"): good, (task.name, "stream"): bad}
    rows = table(results, [task])
    assert rows[1].endswith("right") and rows[2].endswith("WRONG")
    assert not all_right(results, [task]) and all_right({(task.name, "whole"): good}, [task])
    assert any("chain, against LangGraph parallel: not measured (LangGraph absent)" in line
               for line in goals(results))
    # A task that was not run (--tasks) has no goal line at all.
    assert not any("branch" in line or "parallel," in line for line in goals(results))


def test_the_command_checks_the_answers_and_refuses_an_unknown_task(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["headline.py", "--check", "--tasks", "chain,branch"])
    with pytest.raises(SystemExit) as exit_:
        headline.main()
    out = capsys.readouterr().out
    # --check asks for LangGraph's rows too: without LangGraph it exits 1.
    assert exit_.value.code == (0 if headline.peers.have_langgraph() else 1)
    assert out.count("right") == 6 and "WRONG" not in out
    monkeypatch.setattr(sys, "argv", ["headline.py", "--tasks", "chain,nope"])
    with pytest.raises(SystemExit) as exit_:
        headline.main()
    assert exit_.value.code == 2
    assert "unknown task(s) nope" in capsys.readouterr().err
