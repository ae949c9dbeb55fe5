"""``obelisk agent``'s live view (issue 28, item 4): a spinner with the elapsed time while
the LLM answers or an activity runs, each call's outcome with a short form of what it
wrote and its ``_reasoningForCall``, the tokens so far."""

from __future__ import annotations

import io
import json
import os
import pathlib
import re
import sys
from typing import Any

import pexpect
import pytest
from rich.console import Console

from obelisk import Context, ScriptedLLM, run_agent_sync
from obelisk.cli import main
from obelisk.cli.agentview import AgentView, short

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "agent"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def refund(observer: Any, activities: dict[str, Any] | None = None) -> Any:
    spec = json.loads((EXAMPLES / "refund.json").read_text(encoding="utf-8"))
    solutions = json.loads((EXAMPLES / "refund.solutions.json").read_text(encoding="utf-8"))
    solutions[0]["calls"][0]["_reasoningForCall"] = "The refund is the order's total."
    return run_agent_sync(Context.of(spec["context"]), ScriptedLLM(solutions),
                          tools=spec["tools"], output_schema=spec.get("output_schema"),
                          activities=activities,
                          mocks=None if activities else spec.get("mocks"), observer=observer)


def test_each_call_its_outcome_what_it_wrote_and_why() -> None:
    stream = Terminal()
    view = AgentView(stream)
    result = refund(view.observe)
    view.close()
    text = ANSI.sub("", stream.getvalue())
    assert result.status == "completed"
    assert ('call 0 lookupOrder: executed  †state.order = {"status": "delivered", '
            '"total": 49.9}') in text
    assert "why: The refund is the order's total." in text
    assert 'call 0 issueRefund: executed  †state.refund = {"id": "rf-311"}' in text
    usage = result.usage
    assert f"tokens so far: {usage.input_tokens:,} in, {usage.output_tokens:,} out" in text
    assert "tick 2: asking the LLM" in text


def test_the_spinner_names_what_the_run_waits_for() -> None:
    stream = Terminal()
    view = AgentView(stream)
    seen: list[str] = []

    def render() -> str:
        shown = io.StringIO()
        Console(file=shown, width=120, no_color=True).print(view._render())
        return shown.getvalue()

    def lookup(call: dict[str, Any], tool: Any, context: Any) -> Any:
        seen.append(render())
        return {"status": "delivered", "total": 49.9}

    def issue(call: dict[str, Any], tool: Any, context: Any) -> Any:
        return {"id": "rf-1"}

    result = refund(view.observe, {"lookupOrder": view.wrap("lookupOrder", lookup),
                                   "issueRefund": view.wrap("issueRefund", issue)})
    seen.append(render())
    view.close()
    assert result.status == "completed"
    assert re.search(r"tick 1: running lookupOrder +\d+\.\ds", seen[0]), seen[0]
    assert "tokens so far: 0 in, 0 out" in seen[0]
    assert "running" not in seen[1] and "asking" not in seen[1]  # the run has ended


def test_short_keeps_one_line() -> None:
    assert short("a\nb   c") == "a b c"
    assert short({"k": "x" * 100}, 20) == '{"k": "xxxxxxxxxxxx…'
    assert len(short(list(range(100)))) == 72


# -- the command ---------------------------------------------------------------------------

COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7]m")
REFUND = [str(EXAMPLES / "refund.json"), "--llm", f"script:{EXAMPLES / 'refund.solutions.json'}"]


def agent(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["agent", *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_out_writes_the_final_context_and_json_carries_it(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "context.json"
    code, out, _ = agent(*REFUND, "--out", str(path))
    assert code == 0 and out.startswith("tick 1: asking the LLM")  # not a terminal: plain
    written = json.loads(path.read_text(encoding="utf-8"))
    assert {"type": "input", "input": {"customerId": "c-7", "orderId": "A-1009",
                                       "request": "My parcel arrived broken, please refund it."}
            } in written
    code, out, _ = agent(*REFUND, "--json")
    result = json.loads(out)
    assert code == 0 and result["context"] == written  # the same run, the same context
    assert result["output"] == {"refundId": "rf-311", "amount": 49.9}


def through_a_terminal(*argv: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    environ.update(TERM="xterm-256color", **env)
    child = pexpect.spawn(sys.executable, ["-m", "obelisk", "agent", *argv], cwd=str(ROOT),
                          env=environ, encoding="utf-8", timeout=60, dimensions=(40, 160))
    child.expect(pexpect.EOF)
    text: str = child.before
    child.close()
    return text


@pytest.mark.slow
def test_obelisk_agent_on_a_terminal_shows_the_live_view_in_colour() -> None:
    text = through_a_terminal(*REFUND)
    plain = ANSI.sub("", text)
    assert "tokens so far:" in plain and "asking the LLM" in plain
    assert 'call 0 lookupOrder: executed  †state.order = {"status": "delivered"' in plain
    assert "completed: output given at tick 2" in plain and COLOUR.search(text)
    bare = through_a_terminal(*REFUND, NO_COLOR="1")
    assert "tokens so far:" in ANSI.sub("", bare) and not COLOUR.search(bare)
