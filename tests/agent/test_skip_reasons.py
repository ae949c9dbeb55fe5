"""Skips say why (SEMANTICS §9 "Skip reasons", §8.2 step 5): every skipped outcome of a
plan message carries the machine's ``reason`` (the reference that had no value, who wrote
it or what its writer did instead), the LLM's next request shows it (golden), the
terminal prints it, and a plan that waits on a void tool with ``||`` runs."""

from __future__ import annotations

import io
import json
import pathlib
from typing import Any

from test_agent_request import golden

from obelisk.agent import run_agent_sync
from obelisk.cli import main
from obelisk.core.plain import thaw
from obelisk.llm import ScriptedLLM

TOUCH = {"type": "object", "description": "Create an empty file.",
         "properties": {"_tool": {"const": "touch"}, "path": {"type": "string"}}}
WRITE = {"type": "object", "description": "Write text to a file.",
         "properties": {"_tool": {"const": "write"}, "path": {"type": "string"},
                        "text": {"type": "string"}, "after": {}}}
PAY = {"type": "object", "description": "Charge a card.",
       "properties": {"_tool": {"const": "pay"}, "amount": {"type": "number"}}}
TOOLS = [TOUCH, WRITE, PAY]
DATE = "2026-11-23T00:00:00Z"

#: Tick 1: a void tool, a call that reads its null result, a payment routed to its error
#: branch and a call reading the receipt it did not write.
TICK_1 = {"calls": [
    {"_tool": "touch", "path": "a.txt", "_outputPath": "†state.touched"},
    {"_tool": "write", "path": "a.txt", "text": "hi", "after": "†state.touched"},
    {"_tool": "pay", "amount": 5, "_outputPath": "†state.receipt || †state.payError"},
    {"_tool": "write", "path": "r.txt", "text": "†state.receipt.id"},
], "output": None}
#: Tick 2: the same wait written so that it runs: "†state.touched || 'done'".
TICK_2 = {"calls": [
    {"_tool": "touch", "path": "b.txt", "_outputPath": "†state.touched2"},
    {"_tool": "write", "path": "b.txt", "text": "hi", "after": "†state.touched2 || 'done'"},
], "output": None}
DONE = {"calls": [], "output": "done"}
MOCKS = {"touch": {"return": None}, "write": {"return": "ok"},
         "pay": {"raise": {"type": "CardDeclined", "message": "declined"}}}
REASONS = {
    1: "†state.touched is null (written by call 0 (touch))",
    3: "dead branch: †state.receipt.id was not written (call 2 (pay) took †state.payError "
       "instead)",
}


def run(llm: ScriptedLLM) -> Any:
    return run_agent_sync([], llm, tools=TOOLS, mocks=MOCKS, clock=lambda: DATE)


def test_every_skipped_outcome_carries_its_reason() -> None:
    result = run(ScriptedLLM([TICK_1, DONE]))
    plan = next(thaw(m) for m in result.context.messages if m.get("type") == "plan")
    skipped = {o["call"]: o["reason"] for o in plan["outcomes"] if o["outcome"] == "skipped"}
    assert skipped == REASONS
    assert all("reason" not in o for o in plan["outcomes"] if o["outcome"] != "skipped")
    # The tick's outcomes say the same (what --json prints).
    assert {o.call: o.reason for o in result.ticks[0].outcomes
            if o.outcome == "skipped"} == REASONS
    # A skip is silent in the context's errors (§7): no error message for either call.
    assert not [m for m in result.context.messages if m.get("type") == "error"]


def test_the_llm_is_shown_why_each_call_was_skipped() -> None:
    llm = ScriptedLLM([TICK_1, DONE])
    run(llm)
    text = llm.requests[1].render()
    for reason in REASONS.values():
        assert json.dumps(reason, ensure_ascii=False) in text
    # The turns only: the solution schema is pinned by the request's own golden tests.
    golden("after-a-skip", "\n\n".join(turn.content for turn in llm.requests[1].messages))


def test_waiting_on_a_void_tool_with_a_default_runs_the_call() -> None:
    result = run(ScriptedLLM([TICK_2, DONE]))
    plan = next(thaw(m) for m in result.context.messages if m.get("type") == "plan")
    assert [o["outcome"] for o in plan["outcomes"]] == ["executed", "executed"]
    assert result.status.value == "completed"


def test_the_terminal_prints_each_skip_reason(tmp_path: pathlib.Path) -> None:
    agent_file = tmp_path / "agent.json"
    agent_file.write_text(json.dumps({"tools": TOOLS, "mocks": MOCKS}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([TICK_1, DONE]))
    out, err = io.StringIO(), io.StringIO()
    code = main(["agent", str(agent_file), "--llm", f"script:{script}"], out, err)
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert f"  call 1 write: skipped: {REASONS[1]}" in lines
    assert f"  call 3 write: skipped: {REASONS[3]}" in lines
