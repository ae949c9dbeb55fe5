"""A person's review at the terminal (issue 25 item 4): ``[a]pprove, [e]dit, [r]eject``
for a lazy plan and for each eager call; an unknown key asks again, reject asks for a
reason, edit opens ``$EDITOR`` (through a pseudo-terminal) or reads a line; every decision
is recorded with who made it and why, in the context, the journal and ``obelisk history``."""

from __future__ import annotations

import io
import json
import pathlib
import sys

import pytest
from clirun import cli as run
from test_cli_terminal import spawn

from obelisk.cli.review import reviewer

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
PAYMENT = str(ROOT / "examples/payment.json")
ACTIVITIES = "sample_activities:ACTIVITIES"
REFUND = {"type": "object", "description": "Refund an order.",
          "properties": {"_tool": {"const": "refund"}, "orderId": {"type": "string"}}}
CALL = {"_tool": "refund", "orderId": "o-1", "_outputPath": "†state.refund"}
QUESTION = "[a]pprove, [e]dit, [r]eject the plan? "


@pytest.fixture
def lazy(tmp_path: pathlib.Path) -> dict[str, str]:
    """A lazy agent (its refund echoes) and a script: a plan, then the output."""
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"tools": [REFUND], "mode": "lazy",
                                 "mocks": {"refund": {"echo": True}}}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"calls": [CALL], "output": None},
                                  {"calls": [], "output": "†state.refund.orderId || 'none'"}]))
    return {"agent": str(agent), "script": str(script), "db": str(tmp_path / "run.db"),
            "dir": str(tmp_path)}


def agent(files: dict[str, str], answers: str, *extra: str,
          monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(answers))
    return run("agent", files["agent"], "--llm", "script:" + files["script"], "--approve",
               *extra)


def test_a_typo_asks_again_and_a_rejection_asks_why(lazy: dict[str, str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = agent(lazy, "x\nr\ntoo costly\n", "--journal", lazy["db"], "--run", "R",
                           monkeypatch=monkeypatch)
    assert err.count(QUESTION) == 2  # the typo did not reject: asked again
    assert "please answer a (approve), e (edit) or r (reject)" in err
    assert "error fed back: Denied: too costly" in out
    assert code == 0 and 'output: "none"' in out  # the refund never ran
    code, out, _ = run("history", lazy["db"], "--run", "R")
    assert f"{reviewer()} rejected the plan: too costly" in out
    data = json.loads(run("history", lazy["db"], "--run", "R", "--json")[1])
    reviews = [e["verdict"] for e in data["events"] if e["event"] == "review"]
    assert reviews[0] == {"verdict": "reject", "reason": "too costly", "by": reviewer()}


def test_the_end_of_input_rejects(lazy: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = agent(lazy, "", "--max-ticks", "1", monkeypatch=monkeypatch)
    assert code == 1 and "error fed back: Denied: no answer (end of input)" in out


def test_an_edit_typed_on_one_line_is_compiled_again(lazy: dict[str, str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    edited = json.dumps([{**CALL, "orderId": "o-2"}])
    code, out, err = agent(lazy, f"e\n{{not json\ne\n{{}}\ne\n{edited}\n", "--json",
                           monkeypatch=monkeypatch)
    assert code == 0, err
    assert "calls as one line of JSON: " in err and "the calls must be a JSON array" in err
    result = json.loads(out)
    assert result["output"] == "o-2" and result["ticks"][0]["edited"] is True


def test_an_eager_call_is_rejected_with_a_reason_and_who(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("?\nr\ntoo risky\n"))
    out_file = tmp_path / "out.json"
    code, out, err = run("run", PAYMENT, "--activities", ACTIVITIES, "--approve",
                         "--out", str(out_file), "--journal", str(tmp_path / "run.db"),
                         "--run", "E")
    assert code == 1 and "processPayment: Denied: too risky" in out
    assert err.count("[a]pprove, [e]dit, [r]eject? ") == 2
    approvals = [m["data"] for m in json.loads(out_file.read_text(encoding="utf-8"))
                 if m["type"] == "approval"]
    assert approvals[0]["decision"] == "deny" and approvals[0]["reason"] == "too risky"
    assert approvals[0]["by"] == reviewer()
    code, out, _ = run("history", str(tmp_path / "run.db"), "--run", "E")
    assert f"{reviewer()} denied the call: too risky" in out


def test_an_approval_says_who(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\na\n"))
    code, _, _ = run("run", PAYMENT, "--activities", ACTIVITIES, "--approve",
                     "--journal", str(tmp_path / "run.db"), "--run", "A")
    assert code == 0
    code, out, _ = run("history", str(tmp_path / "run.db"), "--run", "A")
    assert out.count(f"{reviewer()} approved the call") == 2


def test_the_reviewer_is_named_even_without_a_login_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import getpass

    def no_user() -> str:
        raise OSError("no such user")

    monkeypatch.setattr(getpass, "getuser", no_user)
    assert reviewer() == "the terminal"


# -- through a pseudo-terminal: $EDITOR ----------------------------------------------------


@pytest.mark.slow
def test_a_plan_edited_in_the_editor_runs_instead(lazy: dict[str, str]) -> None:
    editor = pathlib.Path(lazy["dir"]) / "editor.sh"
    edited = json.dumps([{**CALL, "orderId": "o-9"}])
    editor.write_text(f"#!/bin/sh\necho '{edited}' > \"$1\"\n", encoding="utf-8")
    editor.chmod(0o755)
    child = spawn(["agent", lazy["agent"], "--llm", "script:" + lazy["script"], "--approve"],
                  pathlib.Path(lazy["dir"]), EDITOR=str(editor))
    child.expect("the plan:")
    child.expect(r"\[a\]pprove, \[e\]dit, \[r\]eject the plan\? ")
    child.sendline("q")  # an unknown key: asked again
    child.expect("please answer a")
    child.expect(r"\[a\]pprove, \[e\]dit, \[r\]eject the plan\? ")
    child.sendline("e")
    text = child.read()  # to the end: the edited plan runs, the script gives the output
    child.close()
    assert child.exitstatus == 0, text
    assert "completed" in text and '"o-9"' in text
