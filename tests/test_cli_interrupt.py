"""Ctrl-C and SIGTERM keep what finished (issue 25 item 1): the real CLI in a subprocess.

``obelisk run`` with a refund (a plain function: a worker thread under asyncio) that is
still running when the signal comes. Once: the run waits for it, saying so, keeps its
outcome (report, context, journal) and exits 130; a resume does not refund again. Twice:
the wait is abandoned, the refund is cancelled (started without an outcome in the
journal) and a resume runs it. Before the fix, asyncio froze silently, reported the
refund ``cancelled``, exited 1, and a resume refunded a second time.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import interrupt_activities as shop  # noqa: E402  (tests/ is on sys.path: conftest)
import pytest

from obelisk import Journal, RecordKind

TESTS = pathlib.Path(__file__).parent
WAITING = "cancelling: waiting for 1 activity still running (refundOrder, "

pytestmark = pytest.mark.slow


def _env(tmp_path: pathlib.Path, delay: float) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(TESTS), SHOP_COUNT=str(tmp_path / "count.txt"),
                SHOP_STARTED=str(tmp_path / "started"), SHOP_REFUND_DELAY=str(delay))


def _interrupted(tmp_path: pathlib.Path, args: list[str], signals: list[signal.Signals],
                 delay: float) -> subprocess.CompletedProcess[str]:
    """Run ``obelisk ARGS``, send ``signals`` once the refund has started, and wait."""
    started = tmp_path / "started"
    process = subprocess.Popen([sys.executable, "-m", "obelisk", *args], cwd=tmp_path,
                               env=_env(tmp_path, delay), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):  # the refund starts once the interpreter has started
            if started.exists() or process.poll() is not None:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        for number in signals:
            process.send_signal(number)
            time.sleep(0.5)  # the first signal's handling has begun
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(args, process.returncode, out, err)


def _counted(tmp_path: pathlib.Path) -> list[str]:
    path = tmp_path / "count.txt"
    return path.read_text().split() if path.exists() else []


def _outcomes(report: str) -> dict[str, str]:
    rows = [line.split() for line in report.splitlines()]
    return {row[1]: row[2] for row in rows if len(row) >= 3 and row[0] in ("0", "1")}


def _plan(tmp_path: pathlib.Path) -> list[str]:
    (tmp_path / "plan.json").write_text(json.dumps(shop.PLAN))
    return ["run", "plan.json", "--activities", "interrupt_activities:ACTIVITIES"]


@pytest.mark.parametrize("journal", [False, True], ids=["plain", "journal"])
@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_ctrl_c_once_waits_for_the_refund_and_keeps_it(
        tmp_path: pathlib.Path, interpreter: str, journal: bool) -> None:
    args = [*_plan(tmp_path), "--interpreter", interpreter]
    if journal:
        args += ["--journal", "run.db", "--run", "r1"]
    done = _interrupted(tmp_path, args, [signal.SIGINT], delay=1.5)
    assert done.returncode == 130, done.stderr
    assert WAITING in done.stderr and "Ctrl-C again to abandon it" in done.stderr
    assert "Traceback" not in done.stderr
    assert _outcomes(done.stdout) == {"refundOrder": "executed", "notify": "pending"}
    assert '"refund": {"refunded": 5}' in done.stdout and "status: cancelled" in done.stdout
    assert _counted(tmp_path) == ["refundOrder"]
    if not journal:
        return
    with Journal.open(tmp_path / "run.db") as opened:
        kinds = [(r.kind, r.node) for r in opened.records("r1")]
    assert kinds.index((RecordKind.FINISH, 0)) < kinds.index((RecordKind.CANCEL, None))
    again = subprocess.run([sys.executable, "-m", "obelisk", "resume", "run.db",
                            "--activities", "interrupt_activities:ACTIVITIES"],
                           cwd=tmp_path, env=_env(tmp_path, 0), capture_output=True,
                           text=True, timeout=60, check=False)
    assert again.returncode == 0, again.stderr
    assert _counted(tmp_path) == ["refundOrder", "notify"]  # the refund was not repeated


@pytest.mark.parametrize("journal", [False, True], ids=["plain", "journal"])
@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_ctrl_c_twice_abandons_the_refund(tmp_path: pathlib.Path, interpreter: str,
                                          journal: bool) -> None:
    args = [*_plan(tmp_path), "--interpreter", interpreter]
    if journal:
        args += ["--journal", "run.db", "--run", "r1"]
    done = _interrupted(tmp_path, args, [signal.SIGINT, signal.SIGINT], delay=30)
    assert done.returncode == 130, done.stderr
    assert WAITING in done.stderr and "Traceback" not in done.stderr
    assert _outcomes(done.stdout) == {"refundOrder": "cancelled", "notify": "pending"}
    assert _counted(tmp_path) == []  # it never finished: the process did not wait 30 s
    if not journal:
        return
    with Journal.open(tmp_path / "run.db") as opened:
        kinds = [(r.kind, r.node) for r in opened.records("r1")]
    assert (RecordKind.FINISH, 0) not in kinds  # started without an outcome (§8.7)
    again = subprocess.run([sys.executable, "-m", "obelisk", "resume", "run.db",
                            "--activities", "interrupt_activities:ACTIVITIES"],
                           cwd=tmp_path, env=_env(tmp_path, 0), capture_output=True,
                           text=True, timeout=60, check=False)
    assert again.returncode == 0, again.stderr
    assert _counted(tmp_path) == ["refundOrder", "notify"]  # run again: it never finished


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_sigterm_stops_the_run_as_ctrl_c_does(tmp_path: pathlib.Path, interpreter: str) -> None:
    done = _interrupted(tmp_path, [*_plan(tmp_path), "--interpreter", interpreter],
                        [signal.SIGTERM], delay=1.5)
    assert done.returncode == 130, done.stderr
    assert WAITING in done.stderr
    assert _outcomes(done.stdout) == {"refundOrder": "executed", "notify": "pending"}
    assert _counted(tmp_path) == ["refundOrder"]


# -- obelisk agent -------------------------------------------------------------------------

TOOLS = [{"type": "object", "properties": {"_tool": {"const": "refundOrder"},
                                           "amount": {"type": "number"}}},
         {"type": "object", "properties": {"_tool": {"const": "notify"}, "about": {}}}]
REFUND_THEN_NOTIFY = {"calls": shop.PLAN, "output": None}
DONE = {"calls": [], "output": "†state.note"}


def _agent(tmp_path: pathlib.Path, *script: object) -> list[str]:
    (tmp_path / "agent.json").write_text(json.dumps({
        "context": [{"type": "text", "text": "refund order 42"}], "tools": TOOLS}))
    (tmp_path / "script.json").write_text(json.dumps(list(script)))
    return ["agent", "agent.json", "--activities", "interrupt_activities:ACTIVITIES"]


def test_agent_ctrl_c_keeps_the_refund_and_a_resume_does_not_repeat_it(
        tmp_path: pathlib.Path) -> None:
    args = [*_agent(tmp_path, REFUND_THEN_NOTIFY, DONE), "--llm", "script:script.json",
            "--journal", "run.db", "--run", "a1"]
    done = _interrupted(tmp_path, args, [signal.SIGINT], delay=1.5)
    assert done.returncode == 130, done.stderr
    assert WAITING in done.stderr and "Traceback" not in done.stderr
    assert "call 0 refundOrder: executed" in done.stdout
    assert "cancelled: cancelled during tick 1" in done.stdout
    assert _counted(tmp_path) == ["refundOrder"]
    (tmp_path / "rest.json").write_text(json.dumps([DONE]))  # tick 1 is not asked again
    again = subprocess.run([sys.executable, "-m", "obelisk", "resume", "run.db", "--llm",
                            "script:rest.json", "--activities",
                            "interrupt_activities:ACTIVITIES"], cwd=tmp_path,
                           env=_env(tmp_path, 0), capture_output=True, text=True, timeout=60,
                           check=False)
    assert again.returncode == 0, again.stderr + again.stdout
    assert 'output: "sent"' in again.stdout
    assert _counted(tmp_path) == ["refundOrder", "notify"]  # the refund was not repeated


def test_agent_ctrl_c_while_the_llm_answers_aborts_it_and_keeps_the_usage(
        tmp_path: pathlib.Path) -> None:
    sys.path.insert(0, str(TESTS / "llm"))
    from servers import Answer, openai_completion, serve

    first = openai_completion(json.dumps({"calls": [], "output": None}),
                              prompt_tokens=100, completion_tokens=20)
    with serve([first, Answer(delay=60)]) as server:  # tick 2's answer never comes
        args = [*_agent(tmp_path), "--llm", "openai:test-model", "--base-url",
                server.base_url]
        process = subprocess.Popen([sys.executable, "-m", "obelisk", *args], cwd=tmp_path,
                                   env=_env(tmp_path, 0), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(600):  # until tick 2's request is being answered
                if len(server.requests) >= 2 or process.poll() is not None:
                    break
                time.sleep(0.05)
            time.sleep(0.2)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)  # well before the 60 s answer
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 130, err
    assert "cancelled: cancelled during tick 2" in out
    assert "tokens: 100 in, 20 out" in out  # tick 1's answer, kept


def test_ctrl_c_stops_an_asyncio_dry_run_with_130(tmp_path: pathlib.Path) -> None:
    # It printed the cancelled report and exited 0 before.
    plan = [{"_tool": "a", "x": 0, "_outputPath": "†state.a0"}]
    plan += [{"_tool": "a", "x": f"†state.a{i - 1}", "_outputPath": f"†state.a{i}"}
             for i in range(1, 60)]
    (tmp_path / "dry.json").write_text(json.dumps(
        {"plan": plan, "mocks": {"a": {"return": 1, "delay_ms": 1000}}}))
    process = subprocess.Popen([sys.executable, "-m", "obelisk", "dry-run", "dry.json",
                                "--interpreter", "asyncio"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(8)  # started, and well within its 60 s
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
