"""Durable agent runs in one process: the journal an agent run leaves, resuming it from
every prefix of that journal (as a crash after any row would leave it), and refusals."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sys
from typing import Any

import pytest

import obelisk
from obelisk import Journal, JournalUnreadable, RecordKind, ScriptedLLM
from obelisk.journal import RunHeader, recorded_agent, run_kind

TESTS = pathlib.Path(__file__).parent
sys.path.insert(0, str(TESTS))
import durable_activities as acts  # noqa: E402
import durable_agent as agent  # noqa: E402


def messages(context: Any) -> list[str]:
    return sorted(json.dumps(m, sort_keys=True, ensure_ascii=False) for m in context.to_json())


class Counting:
    """Activities and an LLM that count what they are asked."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.ticks: list[int] = []

    def activities(self) -> dict[str, Any]:
        def work(call: dict[str, Any], tool: Any, context: Any) -> Any:
            self.keys.append(call.get("_idempotencyKey", "-"))
            return acts.work({k: v for k, v in call.items() if k != "_idempotencyKey"},
                             tool, context)
        return {"work": work, "charge": work}

    def llm(self) -> ScriptedLLM:
        def solve(request: Any) -> Any:
            self.ticks.append(agent.tick_of(request))
            return agent.solution(request)
        return ScriptedLLM(solve)


def run(journal: Journal | None, counting: Counting, **more: Any) -> Any:
    return obelisk.run_agent_sync(
        [], counting.llm(), tools=agent.TOOLS, activities=counting.activities(),
        max_ticks=agent.TICKS + 2, clock=lambda: "2026-01-01T00:00:00Z",
        max_concurrency=1, **({"journal": journal, "run_id": "R"} if journal else {}), **more)


@pytest.fixture
def recorded_run(journal_at: Any) -> tuple[str, Any]:
    db = journal_at("run.db")
    with Journal.open(db) as journal:
        result = run(journal, Counting())
    return db, result


@pytest.mark.slow
def test_a_journaled_agent_run_is_the_run(recorded_run: tuple[str, Any]) -> None:
    db, result = recorded_run
    plain = run(None, Counting())
    assert result.status == plain.status == "completed"
    assert result.output == plain.output
    assert messages(result.context) == messages(plain.context)
    with Journal.open(db) as journal:
        assert run_kind(journal, "R") == "agent"
        assert recorded_agent(journal).options["max_ticks"] == agent.TICKS + 2
        records = list(journal.records("R"))
        history = obelisk.journal_history(journal, "R")
    assert [r.node for r in records if r.kind is RecordKind.SOLUTION] == [1, 2, 3, 4]
    assert history["kind"] == "agent" and history["status"] == "completed"
    keys = [r.data for r in records if r.kind is RecordKind.INVOKE]
    assert keys[0] == "R//1/0/" and "R//3/0/" in keys  # run id, chain, tick, call, instance
    # A solution is on disk before anything of its tick runs.
    first = [r.kind for r in records][:2]
    assert first == [RecordKind.SOLUTION, RecordKind.START]


def test_resuming_an_ended_agent_run_runs_nothing(
        recorded_run: tuple[str, Any]) -> None:
    db, result = recorded_run
    counting = Counting()
    with Journal.open(db) as journal:
        before = len(list(journal.records("R")))
        again = obelisk.resume(journal, "R", llm=counting.llm(),
                               activities=counting.activities())
        assert len(list(journal.records("R"))) == before
    assert counting.keys == [] and counting.ticks == []
    assert again.status == "completed" and messages(again.context) == messages(result.context)


@pytest.mark.slow
def test_resume_from_every_prefix(recorded_run: tuple[str, Any], journal_at: Any) -> None:
    db, result = recorded_run
    with Journal.open(db) as journal:
        header = journal.run_header("R")
        records = list(journal.records("R"))
    for cut in range(0, len(records), 7):
        kept = [r for r in records[:cut] if r.kind is not RecordKind.END]
        solved = {r.node for r in kept if r.kind is RecordKind.SOLUTION}
        finished = set()
        keys: dict[int, str] = {}
        for r in kept:
            if r.kind is RecordKind.SOLUTION:
                keys = {}
            elif r.kind is RecordKind.INVOKE and r.node is not None:
                keys[r.node] = r.data or ""
            elif r.kind is RecordKind.FINISH and r.node in keys:
                finished.add(keys[r.node])
        path = journal_at(f"cut{cut}.db")
        with Journal.open(path) as journal:
            journal.store.create_run(RunHeader(header.run_id, header.version, header.digest,
                                               header.header, header.created))
            journal.store.append("R", kept, journal.claim("R").epoch)
            counting = Counting()
            again = asyncio.run(obelisk.resume_agent(
                journal, llm=counting.llm(), activities=counting.activities(),
                clock=lambda: "2026-01-01T00:00:00Z"))
        assert not set(counting.ticks) & solved, cut
        assert not set(counting.keys) & finished, cut
        assert again.status == "completed", cut
        assert messages(again.context) == messages(result.context), cut


def test_an_at_most_once_call_in_flight_is_interrupted(journal_target: str) -> None:
    charge = {"calls": [{"_tool": "charge", "i": 1, "_outputPath": "†s.c || †e.c"}],
              "output": None}
    done = {"calls": [], "output": "†e.c.type"}
    db = journal_target

    def dies(call: dict[str, Any], tool: Any, context: Any) -> Any:
        raise KeyboardInterrupt  # the process dies while the charge runs

    options: dict[str, Any] = {"tools": agent.TOOLS, "journal": None, "run_id": "R"}
    with Journal.open(db) as journal:
        options["journal"] = journal
        with pytest.raises(KeyboardInterrupt):
            obelisk.run_agent_sync([], ScriptedLLM([charge]), activities={"charge": dies},
                                   **options)
        kinds = [r.kind for r in journal.records("R")]
        assert RecordKind.INVOKE in kinds and RecordKind.FINISH not in kinds
        calls: list[Any] = []
        result = obelisk.resume(journal, "R", llm=ScriptedLLM([done]),
                                activities={"charge": lambda *a: calls.append(a)})
    assert calls == []
    assert result.status == "completed" and result.output == "Interrupted"


def test_refusals(recorded_run: tuple[str, Any], journal_at: Any) -> None:
    db, _ = recorded_run
    with Journal.open(db) as journal:
        with pytest.raises(JournalUnreadable, match="agent run: resume it with an LLM"):
            obelisk.resume(journal, "R", activities={})
        with pytest.raises(JournalUnreadable, match="without an approval hook"):
            obelisk.resume(journal, "R", llm=ScriptedLLM([]), approve=lambda call: True)
        with pytest.raises(JournalUnreadable, match="another context, tools or options"):
            obelisk.run_agent_sync([], ScriptedLLM([]), journal=journal, run_id="R")
        # A journaled run streams (it once refused to): here the script has no answer.
        streamed = obelisk.run_agent_sync([], ScriptedLLM([]), journal=journal, stream=True)
        assert streamed.status == "failed"
    plan_db = journal_at("plan.db")
    with Journal.open(plan_db) as journal:
        obelisk.run_durable([{"_tool": "work", "i": 1}], journal=journal, run_id="P",
                            activities=acts.ACTIVITIES)
        with pytest.raises(JournalUnreadable, match="plan's run"):
            recorded_agent(journal, "P")


def test_a_run_the_llm_failed_goes_on_when_resumed(journal_target: str) -> None:
    first = {"calls": [{"_tool": "work", "i": 1, "_outputPath": "†s.a"}], "output": None}
    last = {"calls": [], "output": "†s.a.n"}
    with Journal.open(journal_target) as journal:
        failed = obelisk.run_agent_sync([], ScriptedLLM([first]), tools=agent.TOOLS,
                                        activities=acts.ACTIVITIES, journal=journal,
                                        run_id="R")
        assert failed.status == "failed"  # the script ran out at tick 2
        llm = ScriptedLLM([last])
        result = obelisk.resume(journal, "R", llm=llm, activities={})
        assert result.status == "completed" and result.output == 1
        assert len(llm.requests) == 1  # tick 2 only
        assert obelisk.journal_history(journal, "R")["status"] == "completed"


def test_history_names_each_agent_call_by_tick_call_and_instance(journal_target: str) -> None:
    # Two calls mapped over two instances: four nodes, node 1 is call 0 of instance ②.
    # Failed before: an agent run's call rows carried their tick and node, never the call.
    context = [{"type": "input", "_instance": "①", "i": 1},
               {"type": "input", "_instance": "②", "i": 2}]
    first = {"calls": [{"_tool": "work", "i": "†input.i", "_outputPath": "†s.a"},
                       {"_tool": "work", "i": 3, "prev": "†s.a", "_outputPath": "†s.b"}],
             "output": None}
    with Journal.open(journal_target) as journal:
        obelisk.run_agent_sync(context, ScriptedLLM([first]), tools=agent.TOOLS,
                               activities=acts.ACTIVITIES, journal=journal, run_id="R",
                               instances=True)
        events = obelisk.journal_history(journal, "R")["events"]
    calls = {(e["tick"], e["node"], e["call"], e["instance"]) for e in events
             if e["event"] in ("start", "invoke", "finish")}
    assert calls == {(1, 0, 0, "①"), (1, 1, 0, "②"), (1, 2, 1, "①"), (1, 3, 1, "②")}
