"""``obelisk run`` at a terminal: status words that agree with the exit code, the approval
prompt (index, tool, description, where the result goes, parameters; ``$EDITOR``), the
exceptions routed to an error branch and ``--traceback``, and, through a pseudo-terminal,
the live display with its colour (and ``NO_COLOR``)."""

from __future__ import annotations

import io
import json
import os
import pathlib
import re
import sys

import pexpect
import pytest
from clirun import cli as run
from clirun import terminal as spawn

from obelisk.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
PAYMENT = str(ROOT / "examples/payment.json")
ACTIVITIES = "sample_activities:ACTIVITIES"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7]m|\x1b\[[0-9;]*38;")  # a foreground colour

SLOW = """
import time

def slow(call, tool, context):
    time.sleep(0.3)
    return {"ok": True}

def boom(call, tool, context):
    raise ValueError("no luck")

ACTS = {"slow": slow, "boom": boom}
"""


def test_the_status_words_agree_with_the_exit_code(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"plan": [{"_tool": "a"}, {"_tool": "b"}], "mocks": {
        "a": {"raise": {"type": "E", "message": "m"}},
        "b": {"raise": {"type": "E", "message": "m"}}}}), encoding="utf-8")
    code, out, _ = run("dry-run", str(path))
    assert code == 1 and out.rstrip().endswith("status: completed with 2 errors")
    code, out, _ = run("dry-run", PAYMENT)
    assert code == 0 and out.rstrip().endswith("status: completed")


def test_approval_shows_index_description_target_and_parameters(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\na\n"))
    code, _, err = run("run", PAYMENT, "--activities", ACTIVITIES, "--approve")
    assert code == 0
    assert "call 0: about to run 'processPayment' with:" in err
    assert "Charge the customer's card." in err
    assert "result to  †state.receipt || †state.error" in err
    assert '"amount": 50.0' in err


def test_routed_exceptions_are_listed_and_tracebacks_shown_on_request(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "acts_routed.py").write_text(SLOW, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"_tool": "boom", "_outputPath": "†state.ok || †state.err"},
                                {"_tool": "boom"}]), encoding="utf-8")
    code, out, _ = run("run", str(path), "--activities", "acts_routed:ACTS")
    assert code == 1
    assert "\nrouted to an error branch:\n  call 0 (boom): ValueError: no luck\n" in out
    assert "Traceback" not in out
    code, out, _ = run("run", str(path), "--activities", "acts_routed:ACTS", "--traceback")
    assert "\ntracebacks:\n  Traceback (most recent call last):" in out
    assert out.count("ValueError: no luck") >= 4  # listed, error table, two tracebacks


def test_every_decision_is_recorded_in_the_context(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: pathlib.Path) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('e\n{"amount": 5}\nd\nlater\n'))
    out_file = tmp_path / "out.json"
    run("run", PAYMENT, "--activities", ACTIVITIES, "--approve", "--out", str(out_file))
    approvals = [m for m in json.loads(out_file.read_text(encoding="utf-8"))
                 if m.get("type") == "approval"]
    assert [a["data"]["decision"] for a in approvals] == ["replace", "deny"]
    assert approvals[0]["data"]["replacement"]["amount"] == 5
    assert approvals[1]["data"]["reason"] == "later"


# -- through a pseudo-terminal ------------------------------------------------------------------


def slow_plan(tmp_path: pathlib.Path) -> str:
    (tmp_path / "acts_slow.py").write_text(SLOW, encoding="utf-8")
    path = tmp_path / "slow.json"
    path.write_text(json.dumps([{"_tool": "slow", "_outputPath": "†state.a"},
                                {"_tool": "boom", "p": "†state.a"},
                                {"_tool": "slow", "p": "†state.nothing || 1",
                                 "_outputPath": "†state.b"}]), encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_live_display_names_running_calls_in_colour(tmp_path: pathlib.Path) -> None:
    child = spawn(["run", slow_plan(tmp_path), "--activities", "acts_slow:ACTS"], tmp_path)
    child.expect(pexpect.EOF)
    text = child.before
    child.close()
    assert child.exitstatus == 1
    assert "call 0 (slow)" in text and "running" in text  # a running call, named
    assert re.search(r"\d+\.\ds", text)  # with its elapsed time
    assert "3/3 done, 1 failed, 0 skipped" in ANSI.sub("", text)
    assert COLOUR.search(text)
    assert "status: completed with 1 error" in ANSI.sub("", text)  # the report painted too


SKIPPING = """
import time

def boom(call, tool, context):
    raise ValueError("no luck")

def slow(call, tool, context):
    time.sleep(1.5)  # long enough for the display to be drawn a few times meanwhile
    return {"ok": True}

ACTS = {"boom": boom, "slow": slow}
"""


@pytest.mark.slow
def test_live_display_counts_skipped_calls_as_they_happen(tmp_path: pathlib.Path) -> None:
    # Call 0 raises, so its error branch is taken: call 1 (on the other branch) is skipped
    # at once, while call 2 (on the error branch) runs for a while.
    (tmp_path / "acts_skipping.py").write_text(SKIPPING, encoding="utf-8")
    path = tmp_path / "skipping.json"
    path.write_text(json.dumps([{"_tool": "boom", "_outputPath": "†state.ok || †state.err"},
                                {"_tool": "slow", "p": "†state.ok"},
                                {"_tool": "slow", "p": "†state.err"}]), encoding="utf-8")
    child = spawn(["run", str(path), "--activities", "acts_skipping:ACTS"], tmp_path,
                  NO_COLOR="1")
    child.expect(pexpect.EOF)
    text = ANSI.sub("", child.before)
    child.close()
    # The routed failure is no failure: call 0 ends executed, on its error branch.
    final = text.index("3/3 done, 0 failed, 1 skipped")  # the summary, after the display
    live = re.search(r"2/3 done +1 running +0 failed +1 skipped", text)
    assert live is not None and live.start() < final, text
    assert "call 2 (slow)" in text[:final]


@pytest.mark.slow
def test_no_color_is_respected(tmp_path: pathlib.Path) -> None:
    child = spawn(["run", slow_plan(tmp_path), "--activities", "acts_slow:ACTS"], tmp_path,
                  NO_COLOR="1")
    child.expect(pexpect.EOF)
    text = child.before
    child.close()
    assert "3/3 done, 1 failed, 0 skipped" in ANSI.sub("", text)
    assert not COLOUR.search(text)


@pytest.mark.slow
def test_approval_at_a_terminal_with_the_editor(tmp_path: pathlib.Path) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\necho \'{"amount": 500}\' > "$1"\n', encoding="utf-8")
    editor.chmod(0o755)
    child = spawn(["run", PAYMENT, "--activities", ACTIVITIES, "--approve"], TESTS,
                  EDITOR=str(editor))
    child.expect("call 0: about to run 'processPayment'")
    child.expect(r"\[a\]pprove, \[e\]dit, \[r\]eject\? ")
    child.sendline("e")  # the editor writes 500: the card is declined
    child.expect("about to run 'reportFailure'")
    child.expect(r"\[a\]pprove")
    child.sendline("a")
    child.expect(pexpect.EOF)
    text = child.before
    child.close()
    assert "routed to an error branch:" in text and "CardDeclined" in text


# -- shell completion (argcomplete) --------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_for_each_shell(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--completion", shell]) == 0
    assert "obelisk" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize(("line", "expected"), [("obelisk val", "validate"),
                                                ("obelisk validate --fa", "--fail-on")])
def test_completion_completes_commands_and_options(tmp_path: pathlib.Path, line: str,
                                                   expected: str) -> None:
    import subprocess

    answer = tmp_path / "answer"
    env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
           "_ARGCOMPLETE_STDOUT_FILENAME": str(answer)}
    subprocess.run([sys.executable, "-m", "obelisk"], env=env, timeout=60, check=False,
                   capture_output=True)
    assert answer.read_text(encoding="utf-8").split() == [expected]


def test_the_approval_prompt_shows_markup_and_escapes_as_written(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = {"type": "object", "description": "[bold red]loud[/] \x1b[2K\rforged",
            "properties": {"_tool": {"const": "[red]t[/red]"}}}
    (tmp_path / "acts_markup.py").write_text(
        "ACTS = {'[red]t[/red]': lambda call, tool, context: 1}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"tools": [tool], "plan": [
        {"_tool": "[red]t[/red]", "_outputPath": "†state.x"}]}), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\n"))
    code, _, err = run("run", str(path), "--activities", "acts_markup:ACTS", "--approve")
    assert code == 0
    assert "about to run '[red]t[/red]'" in err
    assert "[bold red]loud[/] \\x1b[2K\\rforged" in err
    assert "\x1b" not in err and "\r" not in err
