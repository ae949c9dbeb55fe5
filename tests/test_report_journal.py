"""``obelisk report`` of a journal: a plan's calls with the times the journal records
(queued, started, finished), an agent run's ticks replayed from it, the run picked with
``--run``; journals written before times were recorded still read (docs/observability.md)."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

import pytest

import obelisk
from obelisk import Journal, RecordKind
from obelisk.journal import Record
from obelisk.journal.events import recorded_events
from obelisk.runreport.model import fold

TESTS = pathlib.Path(__file__).parent
sys.path.insert(0, str(TESTS))
from clirun import cli  # noqa: E402
from durable_activities import untimed  # noqa: E402
from test_events_resume import ACTIVITIES, TICKS, TOOLS, cut_run, whole_run  # noqa: E402


def plan_run(target: str, run_id: str = "P") -> None:
    with Journal.open(target) as journal:
        obelisk.run_durable(TICKS[0]["calls"], [], journal=journal, run_id=run_id,
                            tools=obelisk.ToolRegistry.of(TOOLS), activities=ACTIVITIES)


def test_a_plans_journal_records_when_each_call_was_queued_started_and_finished(
        journal_at: Any) -> None:
    target = journal_at("run.db")
    plan_run(target)
    with Journal.open(target, create=False) as journal:
        rows = list(journal.records("P"))
        events = recorded_events(journal, "P")
    starts = [r for r in rows if r.kind is RecordKind.START]
    finishes = [r for r in rows if r.kind is RecordKind.FINISH]
    assert starts and all('"t":' in (r.data or "") for r in starts)
    assert finishes and all('"started":' in (r.data or "") for r in finishes)
    view = fold(events)
    ran = [c for c in view.calls.values() if c.outcome == "executed"]
    assert len(ran) == 3
    for call in ran:
        assert call.ready is not None and call.started is not None and call.finished is not None
        assert call.ready <= call.started <= call.finished


def test_a_journal_written_without_times_still_reads(tmp_path: pathlib.Path) -> None:
    plan_run(str(tmp_path / "new.db"))
    with Journal.open(tmp_path / "new.db") as new, Journal.open(tmp_path / "old.db") as old:
        # The rows as an obelisk that recorded no times wrote them.
        rows = [Record(r.seq, r.kind, r.node, None if r.kind is RecordKind.START else
                       (r.data if not (r.data or "").startswith("{") else
                        obelisk.journal.codec.dumps(untimed(r.data))))
                for r in new.records("P")]
        old.store.create_run(new.run_header("P"))
        tenure = old.claim("P")
        old.store.append("P", rows, tenure.epoch)
        old.leases.release(tenure)
        events = recorded_events(old, "P")
        assert obelisk.journal_history(old, "P")["status"] == "completed"
        result = obelisk.resume(old, "P", activities=ACTIVITIES)
    assert result.status == "completed"
    finished = [e for e in events if e["type"] == "call_finished"]
    assert len(finished) == 3 and all(e["replayed"] for e in finished)


def test_an_agent_runs_journal_is_reported_tick_by_tick(tmp_path: pathlib.Path) -> None:
    whole = whole_run(tmp_path)
    db, page = tmp_path / "whole.db", tmp_path / "run.html"
    with Journal.open(db, create=False) as journal:
        events = recorded_events(journal)
    calls = [e for e in events if e["type"].startswith("call_")]
    live = [e for e in whole if e["type"].startswith("call_")]
    assert [(e["type"], e["tick"], e["call"]) for e in calls] == [
        (e["type"], e["tick"], e["call"]) for e in live]
    view = fold(events)
    assert view.kind == "agent" and view.status == "completed"
    assert sorted(view.ticks) == [1, 2, 3]
    for tick in view.ticks.values():  # the LLM request bar of each tick
        assert tick.asked is not None and tick.answered is not None
        assert tick.asked <= tick.answered and tick.input_tokens > 0
    assert view.ticks[1].solution is not None  # a journal holds the solution
    code, _, err = cli("report", str(db), "-o", str(page))
    text = page.read_text(encoding="utf-8")
    assert code == 0 and "run A, the newest" in err
    assert text.count('class="row call"') == 5 and "dead branch" in text


def test_the_run_is_picked_with_run_and_an_unknown_one_is_named(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "run.db"
    plan_run(str(db), "P1")
    plan_run(str(db), "P2")
    code, _, err = cli("report", str(db), "-o", str(tmp_path / "a.html"))
    assert code == 0 and "run P2, the newest" in err
    code, _, err = cli("report", str(db), "--run", "P1", "-o", str(tmp_path / "b.html"))
    assert code == 0 and "newest" not in err
    code, _, err = cli("report", str(db), "--run", "P9", "-o", str(tmp_path / "c.html"))
    assert code == 2 and "no run 'P9'" in err and "P1" in err and "P2" in err


def test_an_agent_run_cut_midway_is_reported_as_far_as_its_journal_goes(
        tmp_path: pathlib.Path) -> None:
    whole_run(tmp_path)
    with Journal.open(tmp_path / "whole.db") as whole, \
            Journal.open(tmp_path / "cut.db") as cut:
        rows = list(whole.records("A"))
        keep = next(i for i, r in enumerate(rows) if r.kind is RecordKind.FINISH) + 1
        cut_run(whole, cut, "A", keep)
        before = list(cut.records("A"))
        events = recorded_events(cut, "A")
        assert list(cut.records("A")) == before  # nothing written to the journal read
    finished = [e for e in events if e["type"] == "call_finished"]
    assert [(e["tick"], e["call"]) for e in finished] == [(1, 0)]
    assert events[-1]["type"] == "run_ended" and events[-1]["status"] == "unfinished"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


@pytest.mark.parametrize("kind", ["plan", "agent"])
def test_a_journal_that_does_not_read_is_bad_input(tmp_path: pathlib.Path, kind: str) -> None:
    import sqlite3

    if kind == "plan":
        db = tmp_path / "run.db"
        plan_run(str(db))
    else:
        whole_run(tmp_path)
        db = tmp_path / "whole.db"
    with sqlite3.connect(db) as conn:  # a damaged outcome
        conn.execute("UPDATE events SET data = '{not json' WHERE seq = (SELECT MIN(seq) "
                     "FROM events WHERE kind = 'finish')")
    code, _, err = cli("report", str(db), "-o", str(tmp_path / "r.html"))
    assert code == 2 and "does not" in err and "Traceback" not in err


def test_a_journal_tells_the_approvals_and_denials_it_recorded(tmp_path: pathlib.Path) -> None:
    with Journal.open(tmp_path / "run.db") as journal:
        obelisk.run_durable(TICKS[0]["calls"], [], journal=journal, run_id="P",
                            tools=obelisk.ToolRegistry.of(TOOLS), activities=ACTIVITIES,
                            approve=lambda call: call["_tool"] != "fail")
        events = recorded_events(journal, "P")
        decided = [r for r in journal.records("P") if r.kind is RecordKind.DECIDE]
    verdicts = {e["call"]: e["verdict"] for e in events if e["type"] == "call_approved"}
    assert verdicts == {0: "approve", 1: "deny", 3: "approve"}
    view = fold(events)
    assert view.calls["0:1"].verdict == "deny"
    # When each verdict came is recorded, so the report draws the wait for it (failed
    # before: a decide row held no time, and the wait was drawn as queueing)
    assert decided and all('"t":' in (r.data or "") for r in decided)
    approved = view.calls["0:0"]
    assert approved.ready is not None and approved.approved is not None
    assert approved.started is not None
    assert approved.ready <= approved.approved <= approved.started


def test_an_agent_journal_written_without_times_reads_with_recorded_times_only(
        tmp_path: pathlib.Path) -> None:
    import time

    whole_run(tmp_path)
    with Journal.open(tmp_path / "whole.db") as new, Journal.open(tmp_path / "old.db") as old:
        rows = [Record(r.seq, r.kind, r.node, None if r.kind is RecordKind.START else
                       (obelisk.journal.codec.dumps(untimed(r.data))
                        if (r.data or "").startswith("{") and r.kind in
                        (RecordKind.FINISH, RecordKind.USAGE) else r.data))
                for r in new.records("A")]
        assert not any('"asked"' in (r.data or "") or '"t":' in (r.data or "") for r in rows)
        old.store.create_run(new.run_header("A"))
        tenure = old.claim("A")
        old.store.append("A", rows, tenure.epoch)
        old.leases.release(tenure)
        began = time.time()
        events = recorded_events(old, "A")
    times = [e["time"] for e in events]
    assert times == sorted(times) and max(times) < began  # no time from the reading itself
    assert [e["tick"] for e in events if e["type"] == "llm_answer"] == [1, 2, 3]
