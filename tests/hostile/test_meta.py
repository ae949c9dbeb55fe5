"""What a call may set of its meta-properties (issue 26, item 1).

An LLM sent ``{"_tool": "charge", "amount": 5, "_delegate": "anonymous"}``: the call went
to an anonymous delegate (the same LLM), which invented ``{"charged": 5}``, and the
``charge`` activity never ran. A call may set ``_delegate`` only when its tool leaves the
choice to it with an ``enum`` (SEMANTICS §8.5); ``_activity`` never chooses the activity;
``_scopes``, ``_outputPath`` and ``_outputMethod`` cannot override a tool's ``const``;
``_idempotencyKey`` is the engine's. Each was tested before its fix.
"""

from __future__ import annotations

import io
import json
import pathlib
from typing import Any

import pytest

from obelisk import PlanRefused, compile_plan, run_sync
from obelisk.agent import AgentStatus, run_agent_sync
from obelisk.cli import main
from obelisk.core.plain import thaw
from obelisk.llm import ScriptedLLM

DATE = "2026-11-27T00:00:00Z"


def charge(**meta: Any) -> dict[str, Any]:
    """The tool ``charge`` with meta-properties declared as given."""
    return {"type": "object", "properties": {
        "_tool": {"const": "charge"}, "amount": {"type": "number"},
        "_output": {"type": "object"}, **meta}}


def diagnostics(call: dict[str, Any], tool: dict[str, Any]) -> list[tuple[str, str]]:
    """The error diagnostics of a plan of one call of ``tool``: (code, pointer)."""
    compiled = compile_plan([call], tools=[tool])
    return [(str(d.code), d.pointer) for d in compiled.diagnostics if d.is_error]


# -- _delegate --------------------------------------------------------------------------------

# (the tool's _delegate schema, or None: undeclared; the call's _delegate; refused?)
DELEGATES: list[tuple[Any, str, bool]] = [
    (None, "anonymous", True),  # the case: the tool says nothing of delegates
    ({"type": "string"}, "anonymous", True),  # declared, but not left to a choice
    ({"default": "helper.json"}, "anonymous", True),  # a default binds, a call keeps out
    ({"enum": ["anonymous", "helper.json"]}, "helper.json", False),  # a choice it leaves
    ({"enum": ["helper.json"]}, "anonymous", True),  # not one of its choices
    ({"const": "anonymous"}, "anonymous", False),  # what the tool prescribes anyway
    ({"const": "helper.json"}, "anonymous", True),  # what its const forbids
]


@pytest.mark.parametrize(("spec", "value", "refused"), DELEGATES)
def test_a_call_sets_delegate_only_to_a_choice_its_tool_leaves_it(
        spec: Any, value: str, refused: bool) -> None:
    tool = charge() if spec is None else charge(_delegate=spec)
    found = diagnostics({"_tool": "charge", "amount": 5, "_delegate": value}, tool)
    assert found == ([("param-schema", "/_delegate")] if refused else [])


def test_the_llm_cannot_skip_an_activity_through_delegate() -> None:
    ran: list[dict[str, Any]] = []

    def activity(call: dict[str, Any], tool: Any, context: Any) -> dict[str, Any]:
        ran.append(call)
        return {"charged": call["amount"], "by": "the activity"}

    llm = ScriptedLLM([
        {"calls": [{"_tool": "charge", "amount": 5, "_delegate": "anonymous",
                    "_outputPath": "†state.receipt"}], "output": None},
        # What the anonymous delegate (the same LLM) would have invented: now the answer
        # to tick 2, the LLM's own, after it was told its call was invalid.
        {"calls": [], "output": {"charged": 5}},
    ])
    result = run_agent_sync([], llm, tools=[charge()], activities={"charge": activity},
                            clock=lambda: DATE, max_ticks=2)
    messages = [thaw(m) for m in result.context.messages]
    (error,) = [m["data"] for m in messages if m["type"] == "error" and "call" in m["data"]]
    assert error["error"]["type"] == "Invalid"
    assert error["error"]["data"]["diagnostics"][0]["pointer"] == "/_delegate"
    assert not ran  # refused: neither the activity nor a delegate answered for it
    assert not any(m.get("kind") == "state" and "receipt" in json.dumps(m) for m in messages)
    assert len(llm.requests) == 2  # ticks 1 and 2: no request was made for a delegate
    assert '"outcome": "invalid"' in llm.requests[1].render()  # the LLM sees it refused
    assert result.status is AgentStatus.COMPLETED


def test_a_plain_run_refuses_the_call_instead_of_failing_it_at_run_time() -> None:
    with pytest.raises(PlanRefused) as refused:
        run_sync([{"_tool": "charge", "amount": 5, "_delegate": "anonymous"}],
                 tools=[charge()], activities={"charge": lambda c, t, x: {}})
    assert [(str(d.code), d.pointer) for d in refused.value.diagnostics] == [
        ("param-schema", "/_delegate")]
    assert "NotImplemented" not in str(refused.value)


def test_the_command_line_says_which_call_and_how_to_fix_it(tmp_path: pathlib.Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tools": [charge()], "plan": [
        {"_tool": "charge", "amount": 5, "_delegate": "anonymous"}]}))
    out, err = io.StringIO(), io.StringIO()
    assert main(["validate", str(plan)], out=out, err=err) == 1
    text = out.getvalue() + err.getvalue()
    assert "plan.json:" in text and "param-schema" in text and "_delegate" in text
    assert "does not let a call choose a delegate" in text and '"enum"' in text


# -- _activity --------------------------------------------------------------------------------

@pytest.mark.parametrize(("meta", "value", "refused"), [
    ({}, "refund", True),  # another activity: a call cannot pick it
    ({}, "charge", False),  # the one registered under the tool's name (the LLM schema's const)
    ({}, "", False),  # latent (the LLM schema's const when no activity is registered)
    ({"_activity": {"type": "string"}}, "refund", True),
    ({"_activity": {"const": "pay"}}, "pay", False),
    ({"_activity": {"const": "pay"}}, "refund", True),  # the const checks it
])
def test_a_call_cannot_choose_its_activity(meta: dict[str, Any], value: str,
                                           refused: bool) -> None:
    found = diagnostics({"_tool": "charge", "amount": 5, "_activity": value}, charge(**meta))
    assert found == ([("param-schema", "/_activity")] if refused else [])


def test_a_tool_that_names_its_activity_takes_only_that_name() -> None:
    tool = {**charge(), "_activity": "pay"}
    assert diagnostics({"_tool": "charge", "_activity": "pay"}, tool) == []
    for other in ("charge", "", "refund"):
        assert diagnostics({"_tool": "charge", "_activity": other}, tool) == [
            ("param-schema", "/_activity")]


def test_without_tools_a_calls_activity_still_never_runs_another_activity() -> None:
    ran: list[str] = []
    result = run_sync([{"_tool": "charge", "_activity": "refund", "_outputPath": "†state.r"}],
                      activities={"charge": lambda c, t, x: ran.append("charge") or 1,
                                  "refund": lambda c, t, x: ran.append("refund") or 2})
    assert ran == ["charge"] and thaw(result.context.value("state", ("r",))) == 1


# -- _scopes, _outputPath, _outputMethod against a const --------------------------------------

@pytest.mark.parametrize(("name", "const", "value"), [
    ("_scopes", ["input"], ["state"]),  # would show the activity what the tool keeps from it
    ("_scopes", ["input"], ["input", "state"]),
    ("_outputPath", "†state.weather", "†state.admin"),  # would write elsewhere
    ("_outputPath", "†state.weather", "†state.weather || †state.error"),
    ("_outputMethod", "set", "push"),
])
def test_a_call_cannot_override_a_const_its_tool_prescribes(name: str, const: Any,
                                                           value: Any) -> None:
    tool = charge(**{name: {"const": const}})
    assert diagnostics({"_tool": "charge", name: value}, tool) == [("param-schema", f"/{name}")]
    assert diagnostics({"_tool": "charge", name: const}, tool) == []
    assert diagnostics({"_tool": "charge"}, tool) == []  # left out: the const is taken


def test_the_llm_cannot_widen_its_scopes_past_the_tools_const() -> None:
    seen: list[Any] = []

    def activity(call: dict[str, Any], tool: Any, context: Any) -> int:
        seen.append(context.to_json())
        return 1

    llm = ScriptedLLM([{"calls": [{"_tool": "charge", "amount": 5, "_scopes": ["state"]}],
                        "output": None}, {"calls": [], "output": "done"}])
    run_agent_sync([{"type": "state", "state": {"card": "4111"}}], llm,
                   tools=[charge(_scopes={"const": ["input"]})],
                   activities={"charge": activity}, clock=lambda: DATE)
    assert not seen  # the call is Invalid: it never ran with the state in its scope


# -- _idempotencyKey --------------------------------------------------------------------------

@pytest.mark.parametrize("tools", [None, [charge()]])
def test_a_call_cannot_set_the_engines_idempotency_key(tools: Any) -> None:
    compiled = compile_plan([{"_tool": "charge", "_idempotencyKey": "R/1/0/"}],
                            tools=tools or ())
    assert [(str(d.code), d.pointer) for d in compiled.diagnostics if d.is_error] == [
        ("invalid-meta", "/_idempotencyKey")]
