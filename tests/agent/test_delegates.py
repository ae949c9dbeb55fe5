"""Delegates (obelisk/agent/delegate.py): anonymous and saved requests, nesting, the
depth limit, the root's confinement, precedence over activities, the errors' branch, and
a property that a delegate never sees a message its caller did not scope."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk import Context, compile_plan
from obelisk.agent import AgentResult, AgentStatus, run_agent_sync
from obelisk.agent.delegate import (
    DelegateError,
    DelegateRunner,
    Delegation,
    locate_saved_request,
    missing_delegates,
)
from obelisk.agent.hooks import Delegated
from obelisk.core.plain import thaw
from obelisk.interpreters.machine import advance, begin
from obelisk.interpreters.outcomes import Raised, Returned
from obelisk.llm import ScriptedLLM, Usage
from obelisk.llm.scripted import count_tokens

DATE = "2026-11-23T00:00:00Z"


def tool(name: str, delegate: Any, output: Any = None) -> dict[str, Any]:
    props: dict[str, Any] = {"_tool": {"const": name}, "text": {"type": "string"},
                             "_delegate": delegate}
    if output is not None:
        props["_output"] = output
    return {"type": "object", "properties": props}


SUMMARISE = tool("summarise", {"const": "anonymous"}, {"type": "string"})
COMPOSE = tool("compose", {"const": "composer.json"}, {"type": "string"})
CHOOSE = tool("choose", {"enum": ["anonymous", "composer.json"]}, {"type": "string"})
CONTEXT = [{"type": "input", "input": {"text": "a long text"}},
           {"type": "state", "state": {"secret": "s-1", "topic": "cats"}}]
DONE = {"calls": [], "output": "†state.summary"}


def call(name: str, **extra: Any) -> dict[str, Any]:
    return {"_tool": name, "text": "†input.text", "_outputPath": "†state.summary", **extra}


def agent(solutions: Any, tools: list[Any], **kw: Any) -> tuple[AgentResult, ScriptedLLM]:
    llm = ScriptedLLM(solutions)
    result = run_agent_sync(CONTEXT, llm, tools=tools, clock=lambda: DATE, **kw)
    return result, llm


def errors(result: AgentResult) -> list[dict[str, Any]]:
    return [thaw(m)["data"]["error"] for m in result.context.messages
            if m.get("type") == "error"]


@pytest.fixture
def root(tmp_path: pathlib.Path) -> pathlib.Path:
    saved = {"context": [{"type": "system", "text": "You compose short poems."}],
             "schema": {"type": "string"}}
    (tmp_path / "composer.json").write_text(json.dumps(saved))
    return tmp_path


def test_an_anonymous_delegate_runs_a_loop_and_its_output_is_the_result() -> None:
    result, llm = agent([{"calls": [call("summarise")], "output": None},
                         {"calls": [], "output": "short"}, DONE], [SUMMARISE])
    assert result.status is AgentStatus.COMPLETED and result.output == "short"
    delegate_request = llm.requests[1].render()
    assert "a long text" in delegate_request and "s-1" not in delegate_request


def test_a_saved_request_gives_the_delegate_its_context_and_schema(root: pathlib.Path) -> None:
    result, llm = agent([{"calls": [call("compose")], "output": None},
                         {"calls": [], "output": "a poem"}, DONE], [COMPOSE],
                        delegate_root=root)
    assert result.output == "a poem"
    assert "You compose short poems." in llm.requests[1].render()


def test_a_delegate_sees_the_scoped_kinds_as_the_caller_does() -> None:
    result, llm = agent([{"calls": [call("summarise", _scopes=["state"])], "output": None},
                         {"calls": [], "output": "short"}, DONE], [SUMMARISE])
    assert result.status is AgentStatus.COMPLETED
    assert "s-1" in llm.requests[1].render()


def test_the_call_may_choose_its_delegate_from_the_enum(root: pathlib.Path) -> None:
    result, _ = agent([{"calls": [call("choose", _delegate="composer.json")], "output": None},
                       {"calls": [], "output": "a poem"}, DONE], [CHOOSE], delegate_root=root)
    assert result.output == "a poem"


def test_a_delegate_outside_the_enum_is_a_compile_error() -> None:
    plan = compile_plan([call("choose", _delegate="elsewhere.json")], tools=[CHOOSE],
                        context=Context.of(CONTEXT))
    assert [d.code for d in plan.diagnostics if d.severity == "error"] == ["param-schema"]


def test_delegates_nest_and_the_observer_sees_the_chain() -> None:
    seen: list[Any] = []
    result, _ = agent([{"calls": [call("summarise")], "output": None},
                       {"calls": [{"_tool": "summarise", "text": "†input.text",
                                   "_outputPath": "†state.summary"}], "output": None},
                       {"calls": [], "output": "inner"},
                       {"calls": [], "output": "†state.summary"}, DONE],
                      [SUMMARISE], observer=seen.append)
    assert result.output == "inner"
    chains = [e.chain for e in seen if isinstance(e, Delegated)]
    assert chains == [("anonymous", "anonymous"), ("anonymous",)]


def test_nesting_deeper_than_the_limit_is_delegate_depth() -> None:
    result, _ = agent([{"calls": [call("summarise", _outputPath="†state.summary || †state.err")],
                        "output": None},
                       {"calls": [], "output": "†state.err.type"}], [SUMMARISE],
                      max_delegate_depth=0)
    assert result.output == "DelegateDepth"  # a runtime error: the last alternative


def test_a_delegate_that_does_not_complete_is_delegate_failed() -> None:
    stall = {"calls": [], "output": None}
    result, _ = agent([{"calls": [call("summarise")], "output": None}, stall, stall,
                       {"calls": [], "output": None}, DONE], [SUMMARISE], max_stalls=2)
    failed = [e for e in errors(result) if e["type"] == "DelegateFailed"]
    assert failed and failed[0]["data"]["status"] == "stalled"


def test_a_missing_saved_request_is_delegate_not_found(root: pathlib.Path) -> None:
    missing = tool("compose", {"const": "nowhere.json"}, {"type": "string"})
    result, _ = agent([{"calls": [call("compose")], "output": None}, DONE], [missing],
                      delegate_root=root, max_ticks=2)
    assert [e["type"] for e in errors(result)][:1] == ["DelegateNotFound"]
    assert missing_delegates([missing], root) and not missing_delegates([COMPOSE], root)


def test_delegate_goes_before_an_activity_of_the_tool_name() -> None:
    def summarise(*_: Any) -> str:
        raise AssertionError("the activity must not run")

    result, _ = agent([{"calls": [call("summarise")], "output": None},
                       {"calls": [], "output": "short"}, DONE], [SUMMARISE],
                      activities={"summarise": summarise})
    assert result.output == "short"


@pytest.mark.parametrize("name", ["/etc/passwd", "../outside.json", "a/../../outside.json",
                                  "C:\\outside.json"])
def test_absolute_paths_and_dot_dot_are_outside_the_root(root: pathlib.Path, name: str) -> None:
    with pytest.raises(DelegateError) as caught:
        locate_saved_request(root, name)
    assert caught.value.type == "DelegateOutsideRoot"


def test_a_symbolic_link_leaving_the_root_is_outside_the_root(tmp_path: pathlib.Path) -> None:
    inside, outside = tmp_path / "root", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    (outside / "x.json").write_text('{"context": [], "schema": {}}')
    os.symlink(outside / "x.json", inside / "x.json")
    os.symlink(outside, inside / "dir")
    (inside / "ok.json").write_text('{"context": [], "schema": {}}')
    os.symlink(inside / "ok.json", inside / "alias.json")
    for name in ("x.json", "dir/x.json"):
        with pytest.raises(DelegateError) as caught:
            locate_saved_request(inside, name)
        assert caught.value.type == "DelegateOutsideRoot"
    assert locate_saved_request(inside, "alias.json") == (inside / "ok.json").resolve()


def test_a_saved_request_without_a_root_is_not_found() -> None:
    with pytest.raises(DelegateError) as caught:
        locate_saved_request(None, "composer.json")
    assert caught.value.type == "DelegateNotFound"


# -- the property: a delegate sees only what its caller scoped ---------------------------

KINDS = ["alpha", "beta", "gamma", "state"]
MARK = st.integers(0, 10**6).map(lambda n: f"m{n}")


@st.composite
def contexts(draw: st.DrawFn) -> tuple[list[Any], list[str], str | None]:
    messages: list[Any] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(KINDS))
        instance = draw(st.sampled_from([None, "i1", "i2"]))
        message: dict[str, Any] = {"type": "data", "kind": kind,
                                   "data": {draw(st.sampled_from("abc")): draw(MARK)}}
        if instance is not None:
            message["_instance"] = instance
        messages.append(message)
    scopes = draw(st.lists(st.sampled_from(KINDS), unique=True, max_size=3))
    return messages, scopes, draw(st.sampled_from([None, "i1"]))


@settings(max_examples=60, deadline=None)
@given(contexts())
def test_a_delegate_never_sees_a_message_the_caller_did_not_scope(
        drawn: tuple[list[Any], list[str], str | None]) -> None:
    messages, scopes, instance = drawn
    context = Context.of(messages)
    plan_call: dict[str, Any] = {"_tool": "summarise", "text": "literal", "_scopes": scopes,
                                 "_outputPath": "†out.x"}
    if instance is not None:
        plan_call["_instance"] = instance
    plan = compile_plan([plan_call], tools=[SUMMARISE], context=context)
    state, ready = advance(begin(plan, context, isolate_invalid=True))
    if not ready:
        return
    seen: list[Any] = []

    async def run(ctx: list[Any], *_: Any) -> Any:
        seen.extend(ctx)
        return AgentResult(Context.of(()), AgentStatus.COMPLETED, "ok", (), "done")  # type: ignore[arg-type]

    outcome = asyncio.run(DelegateRunner(Delegation(), (), run)("anonymous", ready[0]))
    assert outcome == Returned("ok")
    allowed = {json.dumps(v, sort_keys=True) for m in messages
               if m["kind"] in scopes and m.get("_instance") in (None, instance)
               for v in m["data"].values()}
    visible = json.dumps(seen)
    for m in messages:
        for value in m["data"].values():
            if json.dumps(value, sort_keys=True) not in allowed:
                # As a whole JSON value: "m4" must not match inside "m40000".
                assert json.dumps(value) not in visible
    delegate = Context.of(seen)
    for kind in scopes:
        assert delegate.value(kind) == context.value(kind, (), instance)
    assert seen[-1] == {"type": "input", "input": {"text": "literal"}}
    assert not isinstance(outcome, Raised)


def test_the_delegates_tokens_count_in_the_callers_tick() -> None:
    solutions = [{"calls": [call("summarise")], "output": None},
                 {"calls": [], "output": "short"}, DONE]
    result, llm = agent(solutions, [SUMMARISE])
    asked = [count_tokens(r.render()) for r in llm.requests]
    answered = [count_tokens(json.dumps(s, ensure_ascii=False)) for s in solutions]
    assert result.ticks[0].usage == Usage(asked[0] + asked[1], answered[0] + answered[1])
