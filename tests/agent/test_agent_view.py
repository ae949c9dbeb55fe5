"""``obelisk agent``'s live view (issue 28, item 4): a spinner with the elapsed time while
the LLM answers or an activity runs, each call's outcome with a short form of what it
wrote and its ``_reasoningForCall``, the tokens so far."""

from __future__ import annotations

import io
import json
import pathlib
import re
from typing import Any

from rich.console import Console

from obelisk import Context, ScriptedLLM, run_agent_sync
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
