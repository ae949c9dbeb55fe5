"""The terminal tells the truth (issue 28, items 1, 2 and 5): the failures routed to an
error branch are matched by call, each once, before the status line; the live display's
numbers are the machine's (one call running under the sync interpreter, a routed failure
no failure, a resumed run counted whole), and its final line agrees with the report for
generated runs; ``obelisk run --json`` prints the report."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import pathlib
import re
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import obelisk
from obelisk import ActivityError, compile_plan, report, run_async, run_sync
from obelisk.cli import main
from obelisk.cli.live import Progress

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal(io.StringIO):
    """A stream that says it is a terminal, so the live display draws into it."""

    def isatty(self) -> bool:
        return True


def run(*argv: str, err: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


ACTS = """
from obelisk import ActivityError

def declined(call, tool, context):
    raise ActivityError("Declined", "no money")

def bad(call, tool, context):
    raise ValueError("bad")

ACTS = {"declined": declined, "bad": bad, "ok": lambda call, tool, context: 1}
"""

#: Two failures routed to an error branch (calls 0 and 2) and two that are not (1 and 3).
ROUTED = [{"_tool": "declined", "_outputPath": "†state.ok || †state.err"},
          {"_tool": "declined"},
          {"_tool": "bad", "_outputPath": "†state.a || †state.b"},
          {"_tool": "bad"}]


@pytest.fixture
def acts(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    (tmp_path / "acts_live.py").write_text(ACTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "routed.json"
    path.write_text(json.dumps(ROUTED), encoding="utf-8")
    return path


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_routed_failures_are_matched_by_call_each_once_before_the_status(
        acts: pathlib.Path, interpreter: str) -> None:
    code, out, _ = run("run", str(acts), "--activities", "acts_live:ACTS",
                       "--interpreter", interpreter)
    assert code == 1
    # Failed before: call 1's ActivityError (in errors:, not routed) was listed as routed,
    # call 0 twice, and the whole section came after the status line.
    assert out.split("\nrouted to an error branch:\n")[1] == (
        "  call 0 (declined): Declined: no money\n"
        "  call 2 (bad): ValueError: bad\n"
        "\nstatus: completed with 2 errors\n")
    assert out.index("\nerrors:\n") < out.index("\nrouted to an error branch:\n")


def test_run_json_prints_the_report(acts: pathlib.Path, tmp_path: pathlib.Path) -> None:
    context = tmp_path / "out.json"
    code, out, _ = run("run", str(acts), "--activities", "acts_live:ACTS", "--json",
                       "--out", str(context))
    assert code == 1
    data = json.loads(out)  # nothing but the report on standard output
    assert data["status"] == "completed" and len(data["errors"]) == 2
    assert [c["outcome"] for c in data["calls"]] == ["executed", "failed", "executed", "failed"]
    assert data == {**report(run_sync(compile_plan(ROUTED), activities=_activities())),
                    "trace": data["trace"]}
    assert json.loads(context.read_text(encoding="utf-8"))  # --out still written


def test_run_json_with_tracebacks_keeps_them_off_standard_output(acts: pathlib.Path) -> None:
    code, out, err = run("run", str(acts), "--activities", "acts_live:ACTS", "--json",
                         "--traceback")
    assert code == 1 and json.loads(out)["status"] == "completed"
    assert "tracebacks:" in err and "Traceback (most recent call last)" in err


def _activities() -> dict[str, Any]:
    def declined(*_: Any) -> Any:
        raise ActivityError("Declined", "no money")

    def bad(*_: Any) -> Any:
        raise ValueError("bad")

    return {"declined": declined, "bad": bad, "ok": lambda *_: 1}


# -- the live display -------------------------------------------------------------------


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_one_call_at_a_time_runs_and_the_rest_wait(interpreter: str) -> None:
    # Three calls ready at once: the machine starts all three, the sync loop (and asyncio
    # with max_concurrency=1) runs one at a time. Failed before: the display showed
    # "3 running", each with a ticking timer.
    plan = compile_plan([{"_tool": "t", "_outputPath": f"†state.c{i}"} for i in range(3)])
    progress = Progress(plan, Terminal(), enabled=True, slots=1)
    seen = []

    def look(*_: Any) -> int:
        progress._next_fold = 0.0  # fold now, as a refresh after the events would
        assert progress._live is not None
        with progress._live._lock:  # as rich renders: never beside its refresh thread
            table = progress._render()
        counts = progress.counts()
        assert counts is not None
        seen.append((counts.running, counts.waiting, table.row_count))
        return 1

    if interpreter == "sync":
        run_sync(plan, activities={"t": look}, observer=progress.observe)
    else:
        asyncio.run(run_async(plan, activities={"t": look}, observer=progress.observe,
                              max_concurrency=1))
    progress.close()
    assert seen == [(1, 2, 2), (1, 1, 2), (1, 0, 2)]  # one "running" row, and the counts


def test_a_routed_failure_is_not_counted_as_a_failure() -> None:
    # Failed before: two failures and one routed ended "3/3 done, 3 failed, 0 skipped".
    plan = compile_plan([{"_tool": "bad"}, {"_tool": "bad"},
                         {"_tool": "bad", "_outputPath": "†state.a || †state.b"}])
    stream = Terminal()
    progress = Progress(plan, stream, enabled=True)
    run_sync(plan, activities=_activities(), observer=progress.observe)
    progress.close()
    assert _last_line(stream) == "3/3 done, 2 failed, 0 skipped"


def test_each_event_is_folded_once() -> None:
    import obelisk.cli.live as live

    plan = compile_plan([{"_tool": "bad", "_outputPath": "†state.ok || †state.err"},
                         {"_tool": "ok", "p": "†state.ok"}, {"_tool": "ok", "p": "†state.err"}])
    events: list[Any] = []
    run_sync(plan, activities=_activities(), observer=events.append)
    folded: list[int] = []
    real_open, real_more = live.replay_open, live.replay_more
    progress = Progress(plan, Terminal(), enabled=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(live, "replay_open", lambda p, c, seen, **kw: (
            folded.append(len(seen)), real_open(p, c, seen, **kw))[1])
        patch.setattr(live, "replay_more", lambda before, seen, **kw: (
            folded.append(len(seen)), real_more(before, seen, **kw))[1])
        for event in events:
            progress.observe(event)
        progress.close()
    assert sum(folded) == len(events)


def test_a_resumed_run_is_counted_whole(tmp_path: pathlib.Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # Two calls finish, then the process stops; the resume runs the other two. Failed
    # before: the display ended "1/4 done" (what it saw itself) above a table of 4 calls.
    (tmp_path / "acts_resumed.py").write_text(
        "ACTS = {'t': lambda call, tool, context: 1}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = [{"_tool": "t", "_outputPath": f"†state.c{i}"} for i in range(2)] + [
        {"_tool": "t", "p": "†state.c0", "_outputPath": "†state.d"},
        {"_tool": "t", "p": "†state.d", "_outputPath": "†state.e"}]
    db = str(tmp_path / "run.db")

    def stop_at_the_third(call: dict[str, Any], *_: Any) -> int:
        if call["_outputPath"] == "†state.d":
            raise KeyboardInterrupt  # the process stops
        return 1

    with obelisk.Journal.open(db) as journal, pytest.raises(KeyboardInterrupt):
        obelisk.run_durable(calls, journal=journal, run_id="R",
                            activities={"t": stop_at_the_third})
    err = Terminal()
    code, out, _ = run("resume", db, "--activities", "acts_resumed:ACTS", err=err)
    assert code == 0 and out.count(" executed") == 4
    assert _last_line(err) == "4/4 done, 0 failed, 0 skipped"


def _last_line(stream: io.StringIO) -> str:
    return ANSI.sub("", stream.getvalue()).strip().splitlines()[-1]


# -- the final line agrees with the report, for generated runs --------------------------

_CALL = st.fixed_dictionaries({
    "tool": st.sampled_from(["ok", "bad", "declined"]),
    "routed": st.booleans(),
    "reads": st.none() | st.integers(0, 5),  # an earlier call's value (or its error)
    "error": st.booleans(),
})


def _plan(shapes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = []
    for i, shape in enumerate(shapes):
        call: dict[str, Any] = {"_tool": shape["tool"], "_outputPath": (
            f"†state.v{i} || †state.e{i}" if shape["routed"] else f"†state.v{i}")}
        read = shape["reads"]
        if read is not None and read < i:  # an error is there to read when it is routed
            error = shape["error"] and shapes[read]["routed"]
            call["p"] = f"†state.{'e' if error else 'v'}{read}"
        calls.append(call)
    return calls


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(_CALL, min_size=1, max_size=6),
       interpreter=st.sampled_from(["sync", "asyncio", "asyncio-1"]))
def test_the_final_line_agrees_with_the_report(shapes: list[dict[str, Any]],
                                               interpreter: str) -> None:
    plan = compile_plan(_plan(shapes))
    stream = Terminal()
    progress = Progress(plan, stream, enabled=True,
                        slots={"sync": 1, "asyncio": None, "asyncio-1": 1}[interpreter])
    if interpreter == "sync":
        result = run_sync(plan, activities=_activities(), observer=progress.observe)
    else:
        result = asyncio.run(run_async(
            plan, activities=_activities(), observer=progress.observe,
            max_concurrency=1 if interpreter == "asyncio-1" else None))
    progress.close()
    outcomes = [c["outcome"] for c in report(result)["calls"]]
    assert _last_line(stream) == (f"{len(outcomes)}/{len(outcomes)} done, "
                                  f"{outcomes.count('failed')} failed, "
                                  f"{outcomes.count('skipped')} skipped")


def test_what_is_not_a_run_event_is_left_out() -> None:
    # An observer may be told more than the run events (a run waiting for its activities
    # as it is cancelled): the display folds the run events only, and keeps counting.
    plan = compile_plan([{"_tool": "ok", "_outputPath": "†state.a"}])
    stream = Terminal()
    progress = Progress(plan, stream, enabled=True)

    def observe(event: Any) -> None:
        progress.observe(object())
        progress.observe(event)

    run_sync(plan, activities=_activities(), observer=observe)
    progress.close()
    assert _last_line(stream) == "1/1 done, 0 failed, 0 skipped"


class _Stop(BaseException):
    """Stands for the process stopping mid-run."""


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(_CALL, min_size=1, max_size=6), stop_at=st.integers(0, 5))
def test_a_resumed_runs_final_line_agrees_with_the_report(shapes: list[dict[str, Any]],
                                                         stop_at: int) -> None:
    from obelisk.journal import recorded_events

    calls = _plan(shapes)
    invoked = []

    def stopping(name: str) -> Any:
        def activity(*a: Any) -> Any:
            invoked.append(name)
            if len(invoked) > stop_at:
                raise _Stop
            return _activities()[name](*a)
        return activity

    with tempfile.TemporaryDirectory() as folder, \
            obelisk.Journal.open(f"{folder}/run.db") as journal:
        with contextlib.suppress(_Stop):
            obelisk.run_durable(calls, journal=journal, run_id="R", activities={
                name: stopping(name) for name in ("ok", "bad", "declined")})
        plan = obelisk.recorded(journal, "R").plan
        stream = Terminal()
        progress = Progress(plan, stream, enabled=True, recorded=recorded_events(journal, "R"))
        result = obelisk.resume(journal, "R", activities=_activities(),
                                observer=progress.observe)
        progress.close()
    outcomes = [c["outcome"] for c in report(result)["calls"]]
    assert _last_line(stream) == (f"{len(outcomes)}/{len(outcomes)} done, "
                                  f"{outcomes.count('failed')} failed, "
                                  f"{outcomes.count('skipped')} skipped")
