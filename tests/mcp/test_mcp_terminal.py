"""``obelisk run --mcp`` at a terminal (a pseudo-terminal): each call of a destructive
MCP tool is put to the user before it runs, against the real test server over stdio."""

from __future__ import annotations

import json
import os
import pathlib
import sys

import pexpect
import pytest
from mcp_servers import stdio_spec

pytestmark = pytest.mark.slow
PROMPT = r"\[a\]pprove, \[e\]dit, \[r\]eject\? "  # issue 25 item 4


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_a_destructive_call_runs_only_when_approved_at_the_terminal(
        tmp_path: pathlib.Path, interpreter: str) -> None:
    trace = tmp_path / "trace.txt"  # the wipe tool appends each name it wipes
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan": [
        {"_tool": "t.add", "a": 1, "b": 2, "_outputPath": "†state.sum"},  # read-only
        {"_tool": "t.wipe", "name": "approved", "trace": str(trace),
         "_outputPath": "†state.approved"},
        {"_tool": "t.wipe", "name": "refused", "trace": str(trace),
         "_outputPath": "†state.refused"}]}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("EDITOR", "VISUAL")}
    child = pexpect.spawn(sys.executable, ["-m", "obelisk", "run", str(plan), "--mcp",
                                           stdio_spec(), "--interpreter", interpreter],
                          cwd=str(tmp_path), env={**env, "NO_COLOR": "1", "COLUMNS": "100"},
                          encoding="utf-8", timeout=60, dimensions=(40, 100))
    asked = []
    for _ in range(2):  # the two wipes, in whichever order they come
        child.expect(r"call (\d): about to run 't\.wipe' with:")
        asked.append(child.match.group(1))
        child.expect(r'"name": "(approved|refused)"')
        name = child.match.group(1)
        child.expect(PROMPT)
        if name == "approved":
            child.sendline("a")
        else:
            child.sendline("r")
            child.expect("reason: ")
            child.sendline("not today")
    child.expect(pexpect.EOF)
    text = child.before
    child.close()
    assert sorted(asked) == ["1", "2"]  # asked about both wipes, never about add
    assert trace.read_text(encoding="utf-8") == "approved\n"  # and only one ran
    assert child.exitstatus == 1, text
    assert "Denied: not today" in text and "wiped approved" in text
