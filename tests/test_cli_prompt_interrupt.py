"""Ctrl-C at an approval prompt stops the run and prints its report (exit 130).

Through a pseudo-terminal, the way a person meets it: ``obelisk run --approve`` under
both interpreters, with a journal and its ``resume --approve``, and ``obelisk agent
--approve`` asking about calls (eager) and about whole plans (lazy). Before the fix, an
asyncio run or an agent ignored the first Ctrl-C at the prompt (the prompt blocks the
event loop, and the handler only cancelled the run's task) and a second one exited 130
with no report.
"""

from __future__ import annotations

import pathlib
import re

import pexpect
import pytest
from clirun import terminal

from obelisk import Journal

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAYMENT = str(ROOT / "examples/payment.json")
ACTIVITIES = "sample_activities:ACTIVITIES"
AGENTS = ROOT / "examples/agent"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
PROMPT = r"\[a\]pprove, \[e\]dit, \[r\]eject"

pytestmark = pytest.mark.slow


def interrupted_at_the_prompt(args: list[str], cwd: pathlib.Path) -> tuple[int, str]:
    """Run ``obelisk ARGS`` in a terminal, press Ctrl-C at its first prompt; the exit code
    and what the terminal showed after the prompt."""
    child = terminal(args, cwd)
    child.expect(PROMPT)
    child.sendintr()
    child.expect(pexpect.EOF, timeout=30)
    text = ANSI.sub("", child.before)
    child.close()
    return child.exitstatus, text


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_ctrl_c_at_the_prompt_cancels_the_run_and_reports_it(
        tmp_path: pathlib.Path, interpreter: str) -> None:
    code, text = interrupted_at_the_prompt(
        ["run", PAYMENT, "--activities", ACTIVITIES, "--approve", "--interpreter", interpreter],
        tmp_path)
    assert code == 130, text
    assert re.search(r"0\s+processPayment\s+cancelled", text), text
    assert "status: cancelled" in text and "interrupted" in text
    assert "Traceback" not in text


def test_ctrl_c_at_the_prompt_of_a_journaled_run_and_of_its_resume(
        tmp_path: pathlib.Path) -> None:
    journal = str(tmp_path / "run.db")
    code, text = interrupted_at_the_prompt(
        ["run", PAYMENT, "--activities", ACTIVITIES, "--approve", "--interpreter", "asyncio",
         "--journal", journal, "--run", "r1"], tmp_path)
    assert (code, "status: cancelled" in text) == (130, True), text
    code, text = interrupted_at_the_prompt(
        ["resume", journal, "--activities", ACTIVITIES, "--approve", "--interpreter",
         "asyncio"], tmp_path)
    assert (code, "status: cancelled" in text) == (130, True), text
    assert "Traceback" not in text
    with Journal.open(journal) as opened:  # the journal holds both ends, and stays resumable
        assert [run.run_id for run in opened.runs()] == ["r1"]


@pytest.mark.parametrize("example", ["refund", "lazy-approve"])
def test_ctrl_c_at_the_agents_prompt_keeps_the_tick_and_its_tokens(
        tmp_path: pathlib.Path, example: str) -> None:
    code, text = interrupted_at_the_prompt(
        ["agent", str(AGENTS / f"{example}.json"), "--llm",
         f"script:{AGENTS / example}.solutions.json", "--approve"], tmp_path)
    assert code == 130, text
    assert "cancelled: cancelled during tick 1" in text
    tokens = re.search(r"tokens: ([\d,]+) in", text)
    assert tokens is not None and tokens.group(1) != "0", text  # the answer was paid for
    assert "Traceback" not in text
