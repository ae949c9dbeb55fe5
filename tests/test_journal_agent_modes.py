"""Durable agent runs of every kind in one process: lazy mode with ``on_plan`` verdicts, dry
runs on mocks, delegates; each run journaled is the run, its token usage is recorded, and
resuming it from every prefix of its journal (as a crash after any row would leave it)
gives the uninterrupted result without asking anything recorded again."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import obelisk
from obelisk import Journal, RecordKind, ScriptedLLM
from obelisk.journal import RunHeader

TESTS = pathlib.Path(__file__).parent
sys.path.insert(0, str(TESTS))
import durable_agent as agent  # noqa: E402
from durable_activities import untimed  # noqa: E402

MODES = ["lazy", "dry", "delegate", "stream"]


def messages(context: Any) -> list[str]:
    return sorted(json.dumps(m, sort_keys=True, ensure_ascii=False) for m in context.to_json())


def results(context: Any) -> list[str]:
    """The context's messages but its plan messages (what the calls wrote and failed)."""
    return [m for m in messages(context) if '"type": "plan"' not in m]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    before = os.environ.get("OBELISK_TEST_AGENT_MODE")
    os.environ["OBELISK_TEST_AGENT_MODE"] = request.param
    yield str(request.param)
    if before is None:
        del os.environ["OBELISK_TEST_AGENT_MODE"]
    else:
        os.environ["OBELISK_TEST_AGENT_MODE"] = before


class Asked:
    """An LLM and an on_plan that note what they are asked."""

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.reviews: list[int] = []

    def llm(self) -> ScriptedLLM:
        def solve(request: Any) -> Any:  # (not slowed down: nothing here is killed)
            text = request.render()
            delegate = agent.is_delegates(text)
            self.answers.append(agent._delegate_solution(text)[0] if delegate
                                else str(agent.tick_of(request)))
            return agent.solution(request)
        return ScriptedLLM(solve)

    def review(self, plan: Any) -> Any:
        verdict = agent.review(plan)
        self.reviews.append(max(t for t in range(1, agent.TICKS + 1)
                                if f"t{t}c" in json.dumps([dict(c) for c in plan.calls])))
        return verdict


def resume(journal: Journal, asked: Asked) -> Any:
    more = {"on_plan": asked.review} if agent.mode() == "lazy" else {}
    return asyncio.run(obelisk.resume_agent(journal, llm=asked.llm(), clock=agent.clock,
                                            activities=agent.options().get("activities"),
                                            **more))


@pytest.mark.slow
def test_each_kind_of_run_journaled_is_the_run(mode: str, journal_at: Any) -> None:
    plain = agent.run()
    with Journal.open(journal_at("run.db")) as journal:
        recorded = agent.run(journal)
        records = list(journal.records("R"))
        history = obelisk.journal_history(journal)
        runs = journal.runs()
        again = resume(journal, Asked())  # an ended run replays to its result
    assert recorded.status == plain.status == again.status
    assert messages(recorded.context) == messages(plain.context) == messages(again.context)
    assert recorded.usage == plain.usage == again.usage != obelisk.Usage()
    assert [t.usage for t in again.ticks] == [t.usage for t in plain.ticks]
    kinds = {r.kind for r in records}
    assert RecordKind.USAGE in kinds
    assert history["run"] == "R"  # the newest run that is not a delegate's
    if mode == "lazy":
        reviews = [json.loads(r.data or "") for r in records if r.kind is RecordKind.REVIEW]
        assert [v["verdict"] for v in reviews] == ["approve", "edit", "approve"]
        assert recorded.ticks[1].edited and plain.ticks[1].edited
        assert any(e["event"] == "review" and e["verdict"]["verdict"] == "edit"
                   for e in history["events"])
    if mode == "delegate":
        assert [h.run_id for h in runs] == ["R", "R//2/20/"]
        assert any(e["event"] == "delegate" for e in history["events"])
        with Journal.open(journal_at("run.db")) as journal:
            nested = list(journal.records("R//2/20/"))
        keys = [r.data for r in nested if r.kind is RecordKind.INVOKE]
        assert keys[0] == "R/anonymous%402.20/1/0/"  # the outer run, the chain, tick, call
    if mode == "dry":
        assert all(r.kind is not RecordKind.INVOKE or r.data for r in records)


def _cut(records: list[Any], cut: int) -> list[Any]:
    return [r for r in records[:cut] if r.kind is not RecordKind.END]


@pytest.mark.slow
def test_resume_from_every_prefix(mode: str, journal_at: Any) -> None:
    plain = agent.run()
    db = journal_at("run.db")
    with Journal.open(db) as journal:
        agent.run(journal)
        headers = journal.runs()
        rows = {h.run_id: list(journal.records(h.run_id)) for h in headers}
    main = rows["R"]
    step = 11 if mode != "delegate" else 13  # cuts fall on every kind of row
    for cut in range(0, len(main) + 1, step):
        kept = _cut(main, cut)
        solved = {str(r.node) for r in kept if r.kind is RecordKind.SOLUTION}
        reviewed = {r.node for r in kept if r.kind is RecordKind.REVIEW}
        path = journal_at(f"cut{cut}.db")
        with Journal.open(path) as journal:
            for header in headers:
                journal.store.create_run(RunHeader(*(getattr(header, f) for f in (
                    "run_id", "version", "digest", "header", "created"))))
            journal.store.append("R", kept, journal.claim("R").epoch)
            for run_id, nested in rows.items():
                if run_id != "R" and any(r.kind is RecordKind.DELEGATE for r in kept):
                    # The delegate's run is whole once the call's outcome is recorded (its
                    # end was on disk before); before that, any prefix of it.
                    node = next(r.node for r in main if r.data == run_id)  # its invoke
                    start = next(r.seq for r in main if r.data == run_id)
                    done = any(r.kind is RecordKind.FINISH and r.node == node and r.seq > start
                               for r in kept)
                    nested_cut = nested if done else _cut(
                        nested, cut * len(nested) // max(len(main), 1))
                    if nested_cut:
                        journal.store.append(run_id, nested_cut, journal.claim(run_id).epoch)
                        solved |= {f"d{r.node}" for r in nested_cut
                                   if r.kind is RecordKind.SOLUTION}
            asked = Asked()
            again = resume(journal, asked)
        assert not set(asked.reviews) & reviewed, cut
        recorded_ticks = {r.node for r in kept
                          if r.kind in (RecordKind.SOLUTION, RecordKind.ADMIT)}
        if mode == "delegate":  # the delegate's ticks are asked too
            assert not set(asked.answers) & solved, cut
        else:  # the LLM is asked for the ticks not recorded, and only for them
            assert len(asked.answers) == len(again.ticks) - len(recorded_ticks), cut
        cut_stream = recorded_ticks - {r.node for r in kept if r.kind is RecordKind.SOLUTION}
        assert again.status == plain.status and again.output == plain.output, cut
        if cut_stream:
            # A tick whose stream was cut goes on with the calls that had arrived and a
            # null output; the LLM plans the rest again: the same results, more ticks.
            assert results(again.context) == results(plain.context), cut
            continue
        assert messages(again.context) == messages(plain.context), cut
        # A solution and its usage row are committed together: a crash never leaves one
        # without the other, so only such prefixes must give the same usage.
        paid = {r.node for r in kept if r.kind is RecordKind.USAGE}
        if all(r.node in paid for r in kept if r.kind is RecordKind.SOLUTION):
            assert again.usage == plain.usage, cut


def test_a_resumed_dry_run_gives_a_call_invoked_again_its_own_mock_turn(
        journal_at: Any) -> None:
    def dry(journal: Journal | None, answers: list[Any]) -> Any:
        return obelisk.run_agent_sync(
            [], ScriptedLLM(answers), tools=agent.TOOLS, mocks=agent.sequence_mocks(),
            clock=agent.clock, max_ticks=2, **({"journal": journal, "run_id": "R"}
                                               if journal else {}))

    first = {"calls": agent.tick_calls(1), "output": None}
    done = {"calls": [], "output": "done"}
    with Journal.open(journal_at("run.db")) as journal:
        dry(journal, [first, done])
        header = journal.run_header("R")
        records = list(journal.records("R"))
    finished = {r.node: untimed(r.data) for r in records
                if r.kind is RecordKind.FINISH}
    # Cut after the first call's outcome: the other three calls of its batch were invoked
    # (each invocation of a dry run is on disk before it runs) and have no outcome yet.
    cut = next(i for i, r in enumerate(records) if r.kind is RecordKind.FINISH) + 1
    in_flight = {r.node for r in records[:cut] if r.kind is RecordKind.INVOKE} - {
        r.node for r in records[:cut] if r.kind is RecordKind.FINISH}
    assert len(in_flight) == 3
    with Journal.open(journal_at("cut.db")) as journal:
        journal.store.create_run(header)
        journal.store.append("R", records[:cut], journal.claim("R").epoch)
        asyncio.run(obelisk.resume_agent(journal, llm=ScriptedLLM([done]), clock=agent.clock))
        again = {r.node: untimed(r.data) for r in journal.records("R")
                 if r.kind is RecordKind.FINISH and r.seq > cut}
    for node in in_flight:
        assert again[node] == finished[node]
