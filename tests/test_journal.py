"""Durable runs through the API: recording, resuming, idempotency keys, at-most-once
tools, approvals across a restart, and journals that cannot be used (table tests)."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sqlite3
import sys
import time
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import obelisk
from obelisk import (
    Journal,
    JournalUnreadable,
    JournalWriteError,
    RecordKind,
    resume,
    run_durable,
    run_durable_async,
)
from obelisk.journal import Record, RunHeader, RunRecorder, SqliteStore, idempotency_key
from obelisk.journal.recorder import BATCH_EVENTS

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import durable_activities as acts  # noqa: E402

TOOLS = [acts.WORK, acts.CHARGE]


class Crash(BaseException):
    """Stands for the process dying: not an outcome, it stops the run."""


def clock() -> str:
    return "2026-01-01T00:00:00Z"


class Counting:
    """Activities that count invocations by idempotency key and crash on demand."""

    def __init__(self, crash_at: int | None = None) -> None:
        self.keys: list[str] = []
        self.crash_at = crash_at

    def __call__(self, call: dict[str, Any], tool: Any, context: Any) -> Any:
        self.keys.append(call.get("_idempotencyKey", "-"))
        if self.crash_at is not None and len(self.keys) == self.crash_at:
            raise Crash()
        prev = call.get("prev", {"n": 0})
        if call["i"] % 13 == 5:
            raise obelisk.ActivityError("Flaky", "failed")
        return {"n": prev["n"] + call["i"]}

    @property
    def activities(self) -> dict[str, Any]:
        return {"work": self, "charge": self}


def reference(calls: Sequence[Any], approve: Any = None) -> obelisk.RunResult:
    return obelisk.run_sync(calls, activities=Counting().activities, tools=TOOLS, clock=clock,
                            approve=approve)


def same_data(a: obelisk.Context, b: obelisk.Context) -> bool:
    """The same messages, in any order."""
    def key(m: Any) -> str:
        return json.dumps(m, sort_keys=True)
    return sorted(map(key, a.to_json())) == sorted(map(key, b.to_json()))


@pytest.fixture
def db(journal_target: str) -> str:
    """The test's journal, on each backend."""
    return journal_target


@pytest.fixture
def sqlite_db(tmp_path: pathlib.Path) -> pathlib.Path:
    """An SQLite journal's file, for the tests of what happens to the file itself."""
    return tmp_path / "run.db"


def test_a_recorded_run_replays_to_the_same_result_and_runs_nothing(db: pathlib.Path) -> None:
    calls = acts.plan(4, 5)
    with Journal.open(db) as journal:
        first = run_durable(calls, journal=journal, run_id="R", tools=TOOLS,
                            activities=Counting().activities, clock=clock)
    assert first.context == reference(calls).context
    again = Counting()
    with Journal.open(db) as journal:
        replayed = resume(journal, "R", activities=again.activities, clock=clock)
    assert again.keys == []
    assert replayed.context == first.context and replayed.status == first.status


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_the_trace_is_kept_as_asked_not_for_the_journal_itself(db: pathlib.Path,
                                                               interpreter: str) -> None:
    """The journal's recorder does not make a run record its trace: as for run_sync, the
    trace is kept when asked or when the caller's observer follows the run, and a resumed
    run gives what an uninterrupted one gives."""
    calls = acts.plan(3, 4)
    if interpreter == "sync":
        traced_alone = obelisk.run_sync(calls, activities=Counting().activities, tools=TOOLS,
                                        clock=clock, trace=True).trace
    else:
        traced_alone = asyncio.run(obelisk.run_async(
            calls, activities=Counting().activities, tools=TOOLS, clock=clock,
            max_concurrency=1, trace=True)).trace
    assert traced_alone

    def durable(journal: Journal, run_id: str, **options: Any) -> obelisk.RunResult:
        if interpreter == "sync":
            return run_durable(calls, journal=journal, run_id=run_id, tools=TOOLS,
                               clock=clock, **options)
        return asyncio.run(run_durable_async(calls, journal=journal, run_id=run_id,
                                             tools=TOOLS, clock=clock, max_concurrency=1,
                                             **options))

    seen: list[Any] = []
    with Journal.open(db) as journal:
        assert durable(journal, "plain", activities=Counting().activities).trace == ()
        assert durable(journal, "asked", activities=Counting().activities,
                       trace=True).trace == traced_alone
        assert durable(journal, "watched", activities=Counting().activities,
                       observer=seen.append).trace == traced_alone
        with pytest.raises(Crash):
            durable(journal, "crashed", activities=Counting(crash_at=5).activities)
    with Journal.open(db) as journal:
        assert resume(journal, "crashed", activities=Counting().activities,
                      clock=clock).trace == ()
    with Journal.open(db) as journal, pytest.raises(Crash):
        durable(journal, "crashed again", activities=Counting(crash_at=5).activities)
    with Journal.open(db) as journal:
        resumed = resume(journal, "crashed again", activities=Counting().activities,
                         clock=clock, observer=seen.append, max_concurrency=1)
    # The whole run's trace, the replayed part and the rest (the asyncio loop may order
    # a resumed run's events differently from an uninterrupted one).
    assert sorted(map(json.dumps, resumed.trace)) == sorted(map(json.dumps, traced_alone))


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
@pytest.mark.parametrize("crash_at", [1, 7, 12])
def test_a_crashed_run_resumes_the_call_in_flight_with_its_key(
        db: pathlib.Path, interpreter: str, crash_at: int) -> None:
    calls = acts.plan(4, 5)
    crashing = Counting(crash_at)
    with Journal.open(db) as journal, pytest.raises(Crash):
        if interpreter == "sync":
            run_durable(calls, journal=journal, run_id="R", tools=TOOLS,
                        activities=crashing.activities, clock=clock)
        else:
            asyncio.run(run_durable_async(calls, journal=journal, run_id="R", tools=TOOLS,
                                          activities=crashing.activities, clock=clock,
                                          max_concurrency=1))
    in_flight = crashing.keys[-1]
    rest = Counting()
    with Journal.open(db) as journal:
        result = resume(journal, "R", activities=rest.activities, clock=clock)
    if interpreter == "sync":
        assert result.context == reference(calls).context
        assert rest.keys[0] == in_flight  # run again first, with the same key
    else:  # the same data; messages in the order calls finished
        assert same_data(result.context, reference(calls).context)
        assert in_flight in rest.keys  # run again, with the same key
    assert not set(rest.keys) & set(crashing.keys[:-1])  # nothing recorded runs again
    assert len(set(rest.keys)) == len(rest.keys)


def test_an_at_most_once_call_in_flight_is_interrupted_not_run_again(db: pathlib.Path) -> None:
    calls = acts.plan(2, 3, tool="charge")
    crashing = Counting(crash_at=2)
    with Journal.open(db) as journal, pytest.raises(Crash):
        run_durable(calls, journal=journal, run_id="R", tools=TOOLS,
                    activities=crashing.activities, clock=clock)
    rest = Counting()
    with Journal.open(db) as journal:
        result = resume(journal, "R", activities=rest.activities, clock=clock)
    assert crashing.keys[-1] not in rest.keys
    branches = [m for m in result.context.to_json()
                if m.get("_outputPath", "").startswith("†e.")]
    assert len(branches) == 1, "the interrupted call's error goes to its error branch"
    (error,) = branches[0]["data"].values()
    assert error["type"] == "Interrupted"
    assert error["data"] == {"idempotencyKey": crashing.keys[-1]}


def test_the_idempotency_key_names_run_chain_tick_call_and_instance() -> None:
    assert idempotency_key("R", 3) == "R//0/3/"
    assert idempotency_key("R", 3, "a/b", tick=2, chain=("x", "y")) == "R/x.y/2/3/a%2Fb"
    assert idempotency_key("a/b", 0) != idempotency_key("a", 0, "b")


def test_verdicts_are_replayed_and_a_pending_approval_is_asked_again(db: pathlib.Path) -> None:
    calls = acts.plan(2, 2)  # batches: [0, 2], then [1] (2 is denied, so 3 is skipped)

    def policy(call: dict[str, Any]) -> Any:
        return "no" if call["i"] == 2 else {"i": 7} if call["i"] == 0 else True

    def crash_at_1(call: dict[str, Any]) -> Any:
        if call["i"] == 1:
            raise Crash()
        return policy(call)

    with Journal.open(db) as journal, pytest.raises(Crash):
        run_durable(calls, journal=journal, run_id="R", tools=TOOLS, clock=clock,
                    activities=Counting().activities, approve=crash_at_1)
    asked: list[int] = []
    with Journal.open(db) as journal:
        result = resume(journal, "R", activities=Counting().activities, clock=clock,
                        approve=lambda call: asked.append(call["i"]) or policy(call))
    assert asked == [1]  # deny and replace were replayed, not asked again
    expected = obelisk.run_sync(calls, activities=Counting().activities, tools=TOOLS,
                                clock=clock, approve=policy)
    assert result.context == expected.context
    assert [m for m in result.context.to_json() if m["type"] == "error"]  # the denial


def test_an_undecided_call_is_asked_about_after_the_restart(db: pathlib.Path) -> None:
    calls = acts.plan(2, 2)  # calls 0 and 2 start together; 1 and 3 follow them

    def crash_on_second(call: dict[str, Any]) -> Any:
        if call["i"] == 2:
            raise Crash()
        return True

    with Journal.open(db) as journal, pytest.raises(Crash):
        run_durable(calls, journal=journal, run_id="R", tools=TOOLS, clock=clock,
                    activities=Counting().activities, approve=crash_on_second)
    asked: list[int] = []
    ran = Counting()
    with Journal.open(db) as journal:
        result = resume(journal, "R", activities=ran.activities, clock=clock,
                        approve=lambda call: asked.append(call["i"]) or True)
    assert asked[0] == 2 and 0 not in asked  # the recorded verdict is not asked again
    # Every call approved: the same context as a run approving all (approval messages too).
    assert result.context == reference(calls, approve=lambda call: True).context
    with Journal.open(db) as journal:
        kinds = [r.kind for r in journal.records("R")]
    assert kinds.count(RecordKind.DECIDE) == 4


def test_resume_needs_the_approval_hook_the_run_had(db: pathlib.Path) -> None:
    with Journal.open(db) as journal:
        run_durable(acts.plan(1, 2), journal=journal, run_id="R", tools=TOOLS,
                    activities=Counting().activities, approve=lambda call: True)
        with pytest.raises(JournalUnreadable, match="approval hook"):
            resume(journal, "R", activities=Counting().activities)


def test_a_run_id_recorded_for_another_plan_is_refused(db: pathlib.Path) -> None:
    with Journal.open(db) as journal:
        run_durable(acts.plan(1, 2), journal=journal, run_id="R", tools=TOOLS,
                    activities=Counting().activities, clock=clock)
        with pytest.raises(JournalUnreadable, match="another plan"):
            run_durable(acts.plan(1, 3), journal=journal, run_id="R", tools=TOOLS,
                        activities=Counting().activities)
        again = Counting()
        same = run_durable(acts.plan(1, 2), journal=journal, run_id="R", tools=TOOLS,
                           activities=again.activities, clock=clock)
    assert again.keys == [] and same.status == "completed"


def test_a_value_that_is_not_json_is_recorded_as_the_machine_took_it(db: pathlib.Path) -> None:
    calls = [{"_tool": "f", "_outputPath": "†s.a"}]
    with Journal.open(db) as journal:
        first = run_durable(calls, journal=journal, run_id="R", clock=clock,
                            activities={"f": lambda call, tool, ctx: {1: object()}})
        replayed = resume(journal, "R", activities={}, clock=clock)
    assert first.errors and replayed.context == first.context


def test_batch_durability_records_the_same_events(journal_at: Any) -> None:
    kinds = []
    for level in ("sync", "batch"):
        with Journal.open(journal_at(f"{level}.db"), level) as journal:
            run_durable(acts.plan(3, 3), journal=journal, run_id="R", tools=TOOLS,
                        activities=Counting().activities, clock=clock)
            kinds.append([(r.kind, r.node, acts.untimed(r.data)) for r in journal.records("R")])
    assert kinds[0] == kinds[1]


def test_batch_commits_every_256_rows_and_the_timer_commits_the_rest(db: str) -> None:
    # A size-triggered commit leaves the timer running: the rows after it must still reach
    # the disk without a further row or an explicit flush (no timing is asserted: the
    # test only waits, generously, for them to appear).
    plan = obelisk.compile_plan(acts.plan(1, 1), tools=TOOLS)
    with Journal.open(db, "batch") as journal, Journal.open(db, read_only=True) as reader:
        journal.store.create_run(RunHeader("R", 1, "d", "{}", "now"))
        recorder = RunRecorder(journal, "R", plan)
        for _ in range(BATCH_EVENTS + 10):
            recorder.record(RecordKind.USAGE, 0, "{}", commit=False)

        def count() -> int:
            return len(list(reader.records("R")))

        assert count() >= BATCH_EVENTS
        deadline = time.monotonic() + 30
        while count() < BATCH_EVENTS + 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert count() == BATCH_EVENTS + 10
        recorder.flush()


def test_history_lists_the_events(db: pathlib.Path) -> None:
    with Journal.open(db) as journal:
        run_durable(acts.plan(1, 6), journal=journal, run_id="R", tools=TOOLS,
                    activities=Counting().activities, clock=clock)
        data = obelisk.journal_history(journal)
    assert data["run"] == "R" and data["status"] == "completed"
    events = data["events"]
    assert [e["event"] for e in events[:3]] == ["start", "invoke", "finish"]
    assert events[1]["key"] == "R//0/0/" and events[2]["outcome"] == {"returned": {"n": 0}}
    assert events[-1] == {"seq": len(events), "event": "end", "status": "completed",
                          "errors": 0}


# -- journals that cannot be used -----------------------------------------------------------


def _journal_with_a_run(path: pathlib.Path) -> None:
    with Journal.open(path) as journal:
        run_durable(acts.plan(30, 10), journal=journal, run_id="R", tools=TOOLS,
                    activities=Counting().activities, clock=clock)


def _garbage(path: pathlib.Path) -> None:
    path.write_bytes(b"this is not a database\n" * 100)


def _truncated(path: pathlib.Path) -> None:
    _journal_with_a_run(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupted(path: pathlib.Path) -> None:
    _journal_with_a_run(path)
    data = bytearray(path.read_bytes())
    for offset in range(4096 + 100, len(data), 4096):  # every page after the first
        data[offset: offset + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))


def _other_application(path: pathlib.Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")


def _newer_format(path: pathlib.Path) -> None:
    _journal_with_a_run(path)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version=3")


def _edited_header(path: pathlib.Path) -> None:
    _journal_with_a_run(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET header = replace(header, '\"i\":3', '\"i\":4')")


def _unknown_event(path: pathlib.Path) -> None:
    _journal_with_a_run(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE events SET kind = 'teleport' WHERE seq = 3")


def _event_for_a_call_never_started(path: pathlib.Path) -> None:
    _journal_with_a_run(path)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM events WHERE kind = 'start'")
        db.execute("DELETE FROM events WHERE kind = 'end'")


BROKEN = [
    (_garbage, "not a journal, or a corrupted one"),
    (_truncated, "corrupted|not a journal|malformed"),
    (_corrupted, "corrupted|malformed|not a journal"),
    (_other_application, "not an obelisk journal"),
    (_newer_format, "journal format 3"),
    (_edited_header, "does not match its digest"),
    (_unknown_event, "unknown kind 'teleport'"),
    (_event_for_a_call_never_started, "does not replay"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("damage", "message"), BROKEN, ids=[d.__name__ for d, _ in BROKEN])
def test_a_damaged_journal_is_refused_with_a_clear_error(
        sqlite_db: pathlib.Path, damage: Any, message: str) -> None:
    damage(sqlite_db)
    with pytest.raises(JournalUnreadable, match=message), Journal.open(sqlite_db) as journal:
        resume(journal, "R", activities=Counting().activities)


@pytest.mark.parametrize("where", ["missing/dir/run.db", "a-file/run.db"])
def test_a_journal_that_cannot_be_created_is_refused(tmp_path: pathlib.Path, where: str) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.raises(JournalWriteError, match="cannot open the journal"):
        Journal.open(tmp_path / where)


@pytest.mark.slow
def test_a_read_only_journal_stops_the_run_before_anything_runs(sqlite_db: pathlib.Path) -> None:
    _journal_with_a_run(sqlite_db)
    ran = Counting()
    store = SqliteStore(sqlite_db)
    store._db.execute("PRAGMA query_only=1")  # what a read-only file system does to writes
    with Journal(store, name=str(sqlite_db)) as journal, pytest.raises(JournalWriteError,
                                                              match="readonly|read-only"):
        run_durable(acts.plan(1, 2), journal=journal, run_id="S", tools=TOOLS,
                    activities=ran.activities)
    assert ran.keys == []


class FailingStore:
    """A store that fails its ``fail_at``-th append, as a full disk would (everything
    else is the inner store's)."""

    def __init__(self, inner: Any, fail_at: int) -> None:
        self.inner = inner
        self.appends = 0
        self.fail_at = fail_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def append(self, run_id: str, records: Sequence[Record], epoch: int,
               **options: Any) -> None:
        self.appends += 1
        if self.appends == self.fail_at:
            raise JournalWriteError("disk full")
        self.inner.append(run_id, records, epoch, **options)


@pytest.mark.parametrize("fail_at", [1, 2, 5, 9])
@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_a_failing_store_stops_the_run_and_loses_nothing(
        db: pathlib.Path, fail_at: int, interpreter: str) -> None:
    calls = acts.plan(3, 4)
    first = Counting()
    with Journal(FailingStore(Journal.open(db).store, fail_at)) as journal, pytest.raises(
            JournalWriteError, match="disk full"):
        if interpreter == "sync":
            run_durable(calls, journal=journal, run_id="R", tools=TOOLS,
                        activities=first.activities, clock=clock)
        else:
            asyncio.run(run_durable_async(calls, journal=journal, run_id="R", tools=TOOLS,
                                          activities=first.activities, clock=clock))
    rest = Counting()
    with Journal.open(db) as journal:
        result = resume(journal, "R", activities=rest.activities, clock=clock)
        finished = {r.node for r in journal.records("R") if r.kind is RecordKind.FINISH}
    assert same_data(result.context, reference(calls).context)
    # every call either has an outcome recorded once or ran again after the failure
    assert len(finished) == len(set(first.keys) | set(rest.keys))


@pytest.mark.slow
def test_a_full_disk_is_a_clear_error(sqlite_db: pathlib.Path) -> None:
    store = SqliteStore(sqlite_db)
    work = Counting()

    def fill_the_disk(call: dict[str, Any], tool: Any, context: Any) -> Any:
        if len(work.keys) == 20:  # from now on the file cannot grow: SQLITE_FULL
            pages = store._db.execute("PRAGMA page_count").fetchone()[0]
            store._db.execute(f"PRAGMA max_page_count={pages}")
        return work(call, tool, context)

    with Journal(store, name=str(sqlite_db)) as journal, pytest.raises(JournalWriteError,
                                                              match="full"):
        run_durable(acts.plan(30, 10), journal=journal, run_id="R", tools=TOOLS,
                    activities={"work": fill_the_disk}, clock=clock)
    # The full disk kept the run's lease from being released: it is taken over (or else
    # waited for, as a dead owner's would be).
    with Journal.open(sqlite_db) as journal:
        result = resume(journal, "R", activities=Counting().activities, clock=clock,
                        take_over=True)
    assert result.context == reference(acts.plan(30, 10)).context


def test_solutions_are_recorded_by_tick_for_the_agent_loop(db: pathlib.Path) -> None:
    solution = {"plan": [{"_tool": "work", "i": 1}], "output": None}
    with Journal.open(db) as journal:
        run_durable(acts.plan(1, 1), journal=journal, run_id="R", tools=TOOLS,
                    activities=Counting().activities)
        plan = obelisk.compile_plan(acts.plan(1, 1), tools=TOOLS)
        recorder = RunRecorder(journal, "R", plan, next_seq=100)
        recorder.record_solution(1, solution)
        assert recorder.recorded_solution(1) == solution
        assert recorder.recorded_solution(2) is None
        recorder.begin_tick(2, plan)
        assert recorder.key(0) == "R//2/0/"
        fresh = RunRecorder(journal, "R", plan)
        fresh.load_solutions(list(journal.records("R")))
        assert fresh.recorded_solution(1) == solution
        rows = obelisk.journal_history(journal, "R")["events"]
    assert rows[-1] == {"seq": 100, "event": "solution", "tick": 1, "solution": solution}


def test_a_cancelled_run_resumes_its_cancelled_calls(db: pathlib.Path) -> None:
    calls = acts.plan(2, 2)

    async def cancel_midway() -> obelisk.RunResult:
        started = asyncio.Event()

        async def slow(call: dict[str, Any], tool: Any, context: Any) -> Any:
            if call["i"] == 1:
                started.set()
                await asyncio.sleep(30)
            return {"n": call.get("prev", {"n": 0})["n"] + call["i"]}

        with Journal.open(db) as journal:
            task = asyncio.create_task(run_durable_async(
                calls, journal=journal, run_id="R", tools=TOOLS, clock=clock,
                activities={"work": slow}))
            await started.wait()
            task.cancel()
            return await task

    assert asyncio.run(cancel_midway()).status == "cancelled"
    again = Counting()
    with Journal.open(db) as journal:
        resumed = resume(journal, "R", activities=again.activities, clock=clock)
    assert resumed.status == "completed" and "R//0/1/" in again.keys
    assert same_data(resumed.context, reference(calls).context)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), JSON_VALUES, max_size=4))
def test_rows_are_the_json_the_standard_encoder_writes(value: dict[str, Any]) -> None:
    from obelisk.journal.codec import dumps

    assert dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                                      allow_nan=False)


def test_a_row_that_is_not_json_is_refused_as_the_standard_encoder_refuses_it() -> None:
    from obelisk.journal.codec import dumps

    cyclic: dict[str, Any] = {"a": 1}
    cyclic["self"] = cyclic
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(cyclic)
    with pytest.raises(ValueError, match="not JSON compliant"):
        dumps({"x": float("nan")})
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps({"x": object()})
    assert dumps({"ok": [1, "é"]}) == '{"ok":[1,"é"]}'  # and the encoder is fine after
