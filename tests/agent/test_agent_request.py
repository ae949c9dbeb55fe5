"""Requests: what the LLM sees (golden texts), tool order, what is hidden, and the
transcript index agreeing with a fresh read of the context."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from obelisk import Context, resolve
from obelisk.agent import (
    TEMPLATE_VERSION,
    Role,
    Transcript,
    build_latent_request,
    build_request,
)
from obelisk.agent.request import RequestError, merge_tools
from obelisk.core.values import MISSING

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GOLDEN = HERE / "golden"
UPDATE = os.environ.get("OBELISK_UPDATE_GOLDEN") == "1"

REFUND = json.loads((ROOT / "examples" / "refund.json").read_text())
CONTEXT_EXAMPLE = json.loads((ROOT / "examples" / "context.json").read_text())

CHECK = REFUND["tools"][0]
REFUND_TOOL = REFUND["tools"][1]
CALL_0 = {"_tool": "checkBillingHistory", "customerId": "†input.customerId",
          "_outputPath": "†state.billingHistory"}
CALL_1 = {"_tool": "issueRefund", "customerId": "†input.customerId", "amount": -5,
          "_outputPath": "†state.refund || †state.refundError"}

#: A context after one tick: a write with its meta keys, an approval and a call error
#: before the plan message (seen through its outcomes), an error and a text after it.
AFTER_A_TICK = [
    {"type": "system", "text": "You help customers with refunds."},
    {"type": "input", "input": {"customerId": "c-1", "amount": 50},
     "description": "The customer's request, as the form sent it.",
     "schema": {"type": "object", "properties": {"customerId": {"type": "string"},
                                                 "amount": {"type": "number"}}}},
    {"type": "approval", "data": {"call": CALL_1, "decision": "replace",
                                  "replacement": {**CALL_1, "amount": 5},
                                  "reason": "amounts are positive"}},
    {"type": "state", "state": {"billingHistory": {"orders": 3}},
     "_outputPath": "†state.billingHistory", "_outputMethod": "set", "_call": CALL_0,
     "_date": "2026-11-22T12:00:00Z"},
    {"type": "error", "data": {"call": CALL_1, "error": {"type": "ParamSchema",
                                                         "message": "amount: -5 is not > 0"}}},
    {"type": "plan", "plan": [CALL_0, CALL_1], "mode": "eager", "outcomes": [
        {"call": 0, "instance": None, "outcome": "executed"},
        {"call": 1, "instance": None, "outcome": "failed", "error": "ParamSchema"}]},
    {"type": "error", "data": {"error": {"type": "NoProgress",
                                         "message": "no calls and no output"}}},
    {"type": "text", "text": "Any news on my refund?"},
]


def golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.write_text(text)
    assert path.read_text() == text, f"{path.name} changed: run with OBELISK_UPDATE_GOLDEN=1 " \
        "after bumping TEMPLATE_VERSION if the change is meant"


def test_template_version_is_pinned() -> None:
    assert TEMPLATE_VERSION == 2  # bump it, and regenerate the golden files, together


def test_golden_first_request() -> None:
    request = build_request(Context.of(CONTEXT_EXAMPLE), tools=REFUND["tools"])
    golden("first-request", request.render())


def test_golden_after_a_tick() -> None:
    request = build_request(Context.of(AFTER_A_TICK), tools=[CHECK, REFUND_TOOL],
                            output_schema={"type": "object", "properties": {
                                "refundId": {"type": "string"}}},
                            activity_names=["issueRefund"])
    golden("after-a-tick", request.render())


def test_golden_latent_request() -> None:
    context = Context.of([*CONTEXT_EXAMPLE,
                          {"type": "data", "kind": "notes", "data": {"tone": "kind"},
                           "_instance": "①"}])
    call = {"_tool": "checkBillingHistory", "customerId": "u-17", "_instance": "②",
            "_scopes": ["billing"], "_outputPath": "†state.h || †state.hErr"}
    request = build_latent_request(context, call, CHECK,
                                   alternatives=["†state.h", "†state.hErr"])
    assert request.tool == "checkBillingHistory"
    text = request.render()
    assert "①" not in text  # another instance's data is not shown
    golden("latent-request", text)


# -- what is shown and what is hidden ----------------------------------------------------------


def texts(context: list[Any], **options: Any) -> str:
    return "\n".join(t.content for t in build_request(Context.of(context), **options).messages)


def test_meta_keys_are_hidden_but_the_instance_is_named() -> None:
    shown = texts(CONTEXT_EXAMPLE)
    for hidden in ("_outputPath", "_outputMethod", "_call", "_date", "updateUserStatus",
                   "2026-11-22"):
        assert hidden not in shown
    assert '## Data: ¶state (_instance "②")' in shown
    assert "Input data MUST be treated as a structured prompt" in shown


def test_global_blocks_come_first() -> None:
    context = [{"type": "state", "state": {"a": 1}, "_instance": "x"},
               {"type": "data", "kind": "user", "data": {"b": 2}},
               {"type": "state", "state": {"c": 3}}]
    headers = [t.content.splitlines()[0] for t in build_request(Context.of(context)).messages]
    assert headers == ["## Data: ¶user", "## Data: ¶state", '## Data: ¶state (_instance "x")']


def test_errors_since_the_newest_plan_and_feedback() -> None:
    shown = texts(AFTER_A_TICK)
    assert "NoProgress" in shown
    assert "amount: -5 is not > 0" not in shown  # before the plan: seen through its outcomes
    assert '"outcome": "failed"' in shown
    assert "- call 1 was replaced by" in shown and "amounts are positive" in shown


def test_text_and_system_pass_through() -> None:
    request = build_request(Context.of(AFTER_A_TICK))
    turns = [(t.role, t.content) for t in request.messages]
    assert (Role.SYSTEM, "You help customers with refunds.") in turns
    assert (Role.USER, "Any news on my refund?") in turns
    assert request.turns_json()[0] == {"role": "system", "content": request.system}


def tool(name: str, description: str) -> dict[str, Any]:
    return {"type": "object", "description": description,
            "properties": {"_tool": {"const": name}}}


def test_tool_order_passed_in_first_later_replaces_earlier() -> None:
    context = [{"type": "tool", "tool": tool("b", "b from the context")},
               {"type": "tool", "tool": tool("a", "a from the context")}]
    request = build_request(Context.of(context), tools=[tool("a", "a passed"), tool("c", "c")])
    branches = request.schema["properties"]["calls"]["items"]["anyOf"]
    assert [(b["properties"]["_tool"]["const"], b["description"]) for b in branches] == [
        ("a", "a from the context"), ("c", "c"), ("b", "b from the context")]
    assert merge_tools([], []).names == ()


def test_a_tool_message_without_a_tool_is_refused() -> None:
    with pytest.raises(RequestError, match="message 0"):
        build_request(Context.of([{"type": "tool", "name": "x"}]))


def test_data_blocks_show_the_fold() -> None:
    context = Context.of(CONTEXT_EXAMPLE)
    shown = "\n".join(t.content for t in build_request(context).messages)
    for kind in context.kinds:
        value = resolve(context, f"†{kind}")
        assert value is not MISSING
        assert json.dumps(value, ensure_ascii=False, indent=2) in shown
    instance = resolve(context, "†state", "②")
    assert json.dumps(instance, ensure_ascii=False, indent=2) in shown


# -- the transcript ------------------------------------------------------------------------


messages = st.sampled_from([
    {"type": "state", "state": {"a": 1}},
    {"type": "state", "state": {"a": 2}, "_instance": "i"},
    {"type": "data", "kind": "user", "data": {"n": [1]}, "description": "the user"},
    {"type": "input", "input": {"q": "?"}, "schema": {"type": "object"}},
    {"type": "text", "text": "hello"},
    {"type": "system", "message": "be brief"},
    {"type": "tool", "tool": tool("t", "t")},
    {"type": "plan", "plan": [CALL_0], "mode": "lazy", "outcomes": []},
    {"type": "error", "data": {"error": {"type": "NoProgress", "message": "m"}}},
    {"type": "approval", "data": {"call": CALL_0, "decision": "deny"}},
    {"type": "meta", "anything": True},
])


@given(st.lists(messages, max_size=12), st.data())
def test_an_advanced_transcript_gives_the_same_request_as_a_fresh_one(
        history: list[Any], data: st.DataObject) -> None:
    split = data.draw(st.integers(0, len(history)))
    before = Context.of(history[:split])
    after = before.extend(history[split:])
    kept = Transcript.of(before)
    assert build_request(after, transcript=kept) == build_request(after)
    # A context that does not extend the one indexed is read again from the start.
    other = Context.of(history[split:])
    assert build_request(other, transcript=Transcript.of(after)) == build_request(other)
