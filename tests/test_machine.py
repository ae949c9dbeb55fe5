"""interpreters/machine.py: the pure run state machine, driven by hand.

Every interpreter is a loop over these functions; here they are called one step at a
time so each rule of SEMANTICS §7 is seen without any activity, thread or event loop.
"""

from __future__ import annotations

import inspect
from typing import Any

import hypothesis.strategies as st
import pytest
from attrs import evolve
from hypothesis import given, settings
from test_appender import layout

from obelisk import compile_plan, resolve, run_sync
from obelisk.core.context import Context
from obelisk.core.errors import PlanRefused
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING
from obelisk.interpreters.calls import CallCache, Invocation, resolved_call, scoped_context
from obelisk.interpreters.cancel import cancel
from obelisk.interpreters.events import EventKind, Status
from obelisk.interpreters.executors import (
    Known,
    Registry,
    RunActivity,
    ToolChoices,
    choose_executor,
    executor_for,
)
from obelisk.interpreters.machine import (
    advance,
    begin,
    complete,
    complete_all,
    decide,
    finish,
    settle,
)
from obelisk.interpreters.outcomes import (
    Approve,
    Chose,
    Deny,
    Raised,
    Replace,
    Returned,
    as_verdict,
)
from obelisk.interpreters.records import output_message, target_text
from obelisk.interpreters.state import RunState

DATE = "2025-10-26T12:00:00Z"


def start(plan: list[Any], context: list[Any] | None = None, **kw: Any) -> RunState:
    return begin(compile_plan(plan, context=context or [], **kw))


def ready_nodes(state: RunState) -> tuple[RunState, list[int]]:
    state, ready = advance(state)
    return state, [inv.node for inv in ready]


def value(state: RunState, kind: str, *path: Any, instance: str | None = None) -> Any:
    found = state.context.value(kind, tuple(path), instance)
    return MISSING if found is MISSING else thaw(found)


def check_invariants(state: RunState) -> None:
    """The invariants the module docstring states, checked on any state."""
    plan = state.plan
    for node in plan.nodes:
        unfinished = sum(1 for p in plan.predecessors[node.id]
                         if state.status[p] not in (Status.EXECUTED, Status.SKIPPED,
                                                    Status.FAILED, Status.CANCELLED,
                                                    Status.INVALID))
        assert state.waiting[node.id] == unfinished
        in_candidates = node.id in state.candidates
        assert in_candidates == (state.status[node.id] is Status.PENDING and unfinished == 0)
    assert state.running == sum(status is Status.RUNNING for status in state.status)
    assert len(set(state.candidates)) == len(state.candidates)  # each candidate once


# -- begin ------------------------------------------------------------------------------


def test_begin_puts_every_call_pending_and_sources_in_candidates() -> None:
    state = start([
        {"_tool": "a", "_outputPath": "†state.a"},
        {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
        {"_tool": "c", "_outputPath": "†state.c"},
    ])
    assert list(state.status) == [Status.PENDING] * 3
    assert set(state.candidates) == {0, 2}
    assert list(state.waiting) == [0, 1, 0]
    assert not state.done
    check_invariants(state)


def test_begin_refuses_a_plan_with_errors() -> None:
    plan = compile_plan([{"_tool": "a", "x": "†state.nowhere"}])
    with pytest.raises(PlanRefused) as info:
        begin(plan)
    assert info.value.diagnostics[0].code == "dangling-reference"
    assert "cannot run" in str(info.value)


def test_the_order_of_calls_in_the_list_makes_no_edge() -> None:
    # The reader comes first in the list; it still waits for the writer.
    state = start([
        {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
        {"_tool": "a", "_outputPath": "†state.a"},
    ])
    state, ready = ready_nodes(state)
    assert ready == [1]
    assert state.status[0] is Status.PENDING


# -- advance ----------------------------------------------------------------------------


def test_advance_resolves_parameters_and_hands_out_invocations() -> None:
    state = start([{"_tool": "t", "who": "†input.user.name", "n": 3,
                    "deep": {"list": ["†input.user.name", "plain"]}, "_outputPath": "†state.r"}],
                  [{"type": "input", "input": {"user": {"name": "Alex"}}}])
    state, ready = advance(state)
    assert len(ready) == 1
    call = ready[0].call
    assert call == {"_tool": "t", "who": "Alex", "n": 3,
                    "deep": {"list": ["Alex", "plain"]}, "_outputPath": "†state.r"}
    assert state.status[0] is Status.RUNNING and state.running == 1
    check_invariants(state)


def test_missing_value_that_nothing_writes_skips_with_an_error() -> None:
    # input is external: the compiler lets it through, the run finds it MISSING.
    state = start([{"_tool": "t", "x": "†input.amount", "_outputPath": "†state.r"}])
    state, ready = advance(state)
    assert ready == ()
    assert state.status[0] is Status.SKIPPED
    result = finish(state)
    assert [e["data"]["error"]["type"] for e in result.errors] == ["MissingValue"]
    assert result.calls[0].outcome == "skipped" and result.calls[0].error == "MissingValue"


def test_null_counts_as_missing() -> None:
    # The input's schema declares amount: the plan is valid (a null alone does not
    # provide a path), and the run meets the null.
    state = start([{"_tool": "t", "x": "†input.amount", "_outputPath": "†state.r"}],
                  [{"type": "input", "input": {"amount": None},
                    "schema": {"properties": {"amount": {"type": ["number", "null"]}}}}])
    state, ready = advance(state)
    assert ready == () and state.status[0] is Status.SKIPPED
    assert "MissingValue" in state.reasons[0]


def test_dead_branch_skips_silently_and_cascades() -> None:
    state = start([
        {"_tool": "pay", "_outputPath": "†state.receipt || †state.error"},
        {"_tool": "confirm", "r": "†state.receipt", "_outputPath": "†state.confirmed"},
        {"_tool": "mail", "c": "†state.confirmed", "_outputPath": "†state.mailed"},
    ])
    state, ready = advance(state)
    state = complete(state, ready[0].node, Raised("CardDeclined", "declined"), DATE)
    state, ready = advance(state)
    assert ready == ()
    assert [state.status[i] for i in range(3)] == [Status.EXECUTED, Status.SKIPPED, Status.SKIPPED]
    assert state.reasons[1].startswith("dead branch")
    assert finish(state).errors == ()
    assert state.done
    check_invariants(state)


def test_or_waits_for_its_first_operand_even_when_the_second_is_present() -> None:
    state = start([
        {"_tool": "slow", "_outputPath": "†state.a"},
        {"_tool": "use", "x": "†state.a || †input.fallback", "_outputPath": "†state.r"},
    ], [{"type": "input", "input": {"fallback": "f"}}])
    state, ready = ready_nodes(state)
    assert ready == [0]                      # call 1 waits although its fallback is there
    state = complete(state, 0, Returned("A"), DATE)
    state, ready = advance(state)
    assert [inv.call["x"] for inv in ready] == ["A"]


def test_or_falls_back_when_the_writer_took_another_branch() -> None:
    state = start([
        {"_tool": "pick", "_outputPath": "†state.a || †state.b"},
        {"_tool": "use", "x": "†state.a || 'default'", "_outputPath": "†state.r"},
    ])
    state, ready = advance(state)
    state = complete(state, 0, Chose("†state.b", 1), DATE)
    state, ready = advance(state)
    assert [inv.call["x"] for inv in ready] == ["default"]


def test_resolved_parameters_are_checked_against_the_tool_schema() -> None:
    tool = {"type": "object", "properties": {"_tool": {"const": "t"}, "n": {"type": "integer"}},
            "required": ["n"]}
    # The producer has no _output schema, so the compiler cannot know the type.
    producer = {"type": "object", "properties": {"_tool": {"const": "p"}}}
    state = start([{"_tool": "p", "_outputPath": "†state.n"},
                   {"_tool": "t", "n": "†state.n", "_outputPath": "†state.r"}],
                  tools=[producer, tool])
    state, _ = advance(state)
    state = complete(state, 0, Returned("seven"), DATE)
    state, ready = advance(state)
    assert ready == ()
    result = finish(state)
    assert result.calls[1].outcome == "failed" and result.calls[1].error == "ParamSchema"
    assert "/n" in result.errors[0]["data"]["error"]["message"]
    assert value(state, "state", "r") is MISSING


def test_escaped_dagger_is_a_literal() -> None:
    state = start([{"_tool": "t", "s": "\\†state.x", "_outputPath": "†state.r"}])
    _, ready = advance(state)
    assert ready[0].call["s"] == "†state.x"


def test_resolved_call_of_an_instance_copy_carries_its_instance() -> None:
    plan = compile_plan([{"_tool": "t", "x": "†state.x", "_outputPath": "†state.y"}],
                        context=[{"type": "state", "_instance": "①", "x": 1}], instances=True)
    node = plan.nodes[0]
    call = resolved_call(node, {("x",): 1})
    assert call["_instance"] == "①" and call["x"] == 1
    assert "_instance" not in thaw(node.call)  # the call as written is unchanged


# -- scoped context ---------------------------------------------------------------------


def test_scoped_context_keeps_only_the_named_kinds_and_the_own_instance() -> None:
    context = [
        {"type": "state", "g": 1},
        {"type": "input", "input": {"i": 1}},
        {"type": "state", "_instance": "①", "mine": 1},
        {"type": "state", "_instance": "②", "theirs": 1},
        {"type": "text", "text": "hello"},
    ]
    plan = compile_plan([{"_tool": "t", "_scopes": ["state"], "_outputPath": "†state.y"}],
                        context=context, instances=True)
    ctx = Context.of(context)
    first = scoped_context(ctx, plan.nodes[0])
    assert [m.get("_instance") for m in first.to_json()] == [None, "①"]
    assert thaw(first.value("state", (), "①")) == {"g": 1, "mine": 1}
    assert first.value("input") is MISSING


def test_no_scopes_means_an_empty_context() -> None:
    plan = compile_plan([{"_tool": "t", "_outputPath": "†state.y"}],
                        context=[{"type": "state", "g": 1}])
    assert len(scoped_context(plan.context, plan.nodes[0])) == 0


# -- approval ---------------------------------------------------------------------------


@pytest.mark.parametrize(("answer", "expected"), [
    (True, Approve()), (None, Approve()), (Approve(), Approve()),
    (False, Deny()), ("too expensive", Deny("too expensive")), (Deny("no"), Deny("no")),
    ({"x": 1}, Replace({"x": 1})), (Replace({"x": 2}), Replace({"x": 2})),
])
def test_as_verdict(answer: Any, expected: Any) -> None:
    assert as_verdict(answer) == expected


@pytest.mark.parametrize("answer", [1, 0, ["x"], object()])
def test_as_verdict_refuses_anything_else(answer: Any) -> None:
    with pytest.raises(TypeError, match="approval hook"):
        as_verdict(answer)


def _one_ready(plan: list[Any], context: list[Any] | None = None, **kw: Any
               ) -> tuple[RunState, Invocation]:
    state, ready = advance(start(plan, context, **kw))
    assert len(ready) == 1
    return state, ready[0]


def test_deny_fails_the_call_with_denied_and_releases_its_readers() -> None:
    state, inv = _one_ready([
        {"_tool": "t", "_outputPath": "†state.r"},
        {"_tool": "u", "x": "†state.r", "_outputPath": "†state.s"},
    ])
    state, next_step = decide(state, inv, Deny("not today"))
    assert next_step is None
    assert state.status[0] is Status.FAILED and not state.running
    state, ready = advance(state)
    assert ready == () and state.status[1] is Status.SKIPPED  # a dead branch: r was never written
    result = finish(state)
    assert [(e["data"]["error"]["type"], e["data"]["error"]["message"]) for e in result.errors] == [
        ("Denied", "not today")]
    check_invariants(state)


def test_replace_keeps_meta_properties_and_revalidates() -> None:
    tool = {"type": "object", "properties": {"_tool": {"const": "t"}, "n": {"type": "integer"}}}
    state, inv = _one_ready([{"_tool": "t", "n": 1, "_outputPath": "†state.r"}], tools=[tool])
    _, replaced = decide(state, inv, Replace({"n": 2, "_outputPath": "†state.elsewhere",
                                             "_tool": "other"}))
    assert replaced is not None
    assert replaced.call == {"_tool": "t", "n": 2, "_outputPath": "†state.r"}
    state2, refused = decide(state, inv, Replace({"n": "two"}))
    assert refused is None
    assert finish(state2).calls[0].error == "ParamSchema"


def test_approve_runs_the_call_unchanged() -> None:
    state, inv = _one_ready([{"_tool": "t", "n": 1, "_outputPath": "†state.r"}])
    after, same = decide(state, inv, Approve())
    assert same == inv  # the call runs as it is; the answer is recorded (below)
    assert evolve(after, approvals=state.approvals) == state


CALL = {"_tool": "t", "n": 1, "_outputPath": "†state.r"}


@pytest.mark.parametrize(("verdict", "data"), [
    (Approve(), {"call": CALL, "decision": "approve"}),
    (Deny("not today"), {"call": CALL, "decision": "deny", "reason": "not today"}),
    (Replace({"n": 2}), {"call": CALL, "decision": "replace",
                         "replacement": {"_tool": "t", "n": 2, "_outputPath": "†state.r"}}),
])
def test_every_approval_answer_is_an_approval_message_in_the_context(
        verdict: Any, data: dict[str, Any]) -> None:
    """§7 step 3: approve, deny and replace are each recorded as
    {"type": "approval", "data": {call, decision, replacement?, reason?}}, appended at the
    run's end before the error messages, never read by a reference."""
    state, inv = _one_ready([CALL])
    state, next_step = decide(state, inv, verdict)
    if next_step is not None:
        state = complete(state, next_step.node, Returned(5), "2026-01-01T00:00:00Z")
    result = finish(state)
    messages = [m for m in result.context.to_json() if m["type"] in ("approval", "error")]
    assert messages[0] == {"type": "approval", "data": data}
    assert [m["type"] for m in messages] == ["approval"] + ["error"] * len(result.errors)
    assert resolve(result.context, "†approval") is MISSING


# -- complete: the outcome rules -------------------------------------------------------


def _run_one(output: str | None, outcome: Any, *, tools: list[Any] | None = None,
             method: str | None = None, context: list[Any] | None = None) -> RunState:
    call: dict[str, Any] = {"_tool": "t"}
    if output is not None:
        call["_outputPath"] = output
    if method is not None:
        call["_outputMethod"] = method
    state, inv = _one_ready([call], context, tools=tools or ())
    state = complete(state, inv.node, outcome, DATE)
    check_invariants(state)
    return state


def test_a_value_goes_to_the_first_alternative() -> None:
    state = _run_one("†state.ok || †state.err", Returned({"id": 7}))
    assert value(state, "state") == {"ok": {"id": 7}}
    assert state.status[0] is Status.EXECUTED


def test_a_value_fans_out_to_every_path_of_the_first_group() -> None:
    state = _run_one("(†state.a && †data.b.c) || †state.err", Returned(5))
    assert value(state, "state") == {"a": 5}
    assert value(state, "data") == {"b": {"c": 5}}
    written = [m for m in state.context.to_json() if m.get("_outputPath")]
    assert [m["_outputPath"] for m in written] == ["†state.a", "†data.b.c"]


def test_a_choice_goes_to_the_alternative_it_names() -> None:
    state = _run_one("†state.a || †state.b || †state.c", Chose("†state.b", "middle"))
    assert value(state, "state") == {"b": "middle"}
    assert state.reasons[0] == "chose alternative 2"


def test_choosing_an_undeclared_alternative_is_a_broken_contract() -> None:
    for path in ("†state.z", "not a reference", "†state.a.deeper"):
        state = _run_one("†state.a || †state.b", Chose(path, 1))
        result = finish(state)
        assert result.calls[0].outcome == "failed" and result.calls[0].error == "BranchContract"
        assert value(state, "state") is MISSING


def test_an_exception_with_two_alternatives_goes_to_the_last() -> None:
    state = _run_one("†state.a || †state.b || †state.err",
                     Raised("CardDeclined", "declined", {"code": 51}))
    assert value(state, "state") == {"err": {"type": "CardDeclined", "message": "declined",
                                             "data": {"code": 51}}}
    result = finish(state)
    assert result.errors == () and result.calls[0].outcome == "executed"


def test_an_exception_without_alternatives_is_an_error_message() -> None:
    state = _run_one("†state.a", Raised("Boom", "it broke", [1]))
    result = finish(state)
    assert result.calls[0].outcome == "failed"
    assert result.errors[0]["data"]["error"] == {"type": "Boom", "message": "it broke", "data": [1]}
    assert value(state, "state") is MISSING


@pytest.mark.parametrize("etype", ["NotJSON", "NoMock", "NoActivity", "OutputSchema"])
def test_a_broken_contract_never_goes_to_a_branch(etype: str) -> None:
    state = _run_one("†state.a || †state.err", Raised(etype, "broken", contract=True))
    result = finish(state)
    assert result.calls[0].error == etype and value(state, "state") is MISSING


@pytest.mark.parametrize("bad", [{1, 2}, b"bytes", float("nan"), float("inf"), object(),
                                 {"k": {1: 2}}])
def test_a_result_that_is_not_json_fails_with_notjson(bad: Any) -> None:
    state = _run_one("†state.a || †state.err", Returned(bad))
    assert finish(state).calls[0].error == "NotJSON"
    assert value(state, "state") is MISSING


def test_the_output_schema_is_checked_for_the_first_alternative_only() -> None:
    tool = {"type": "object", "properties": {
        "_tool": {"const": "t"}, "_output": {"type": "object", "required": ["id"]}}}
    bad = _run_one("†state.a || †state.b", Returned({"no": "id"}), tools=[tool])
    assert finish(bad).calls[0].error == "OutputSchema"
    chosen = _run_one("†state.a || †state.b", Chose("†state.b", {"no": "id"}), tools=[tool])
    assert value(chosen, "state") == {"b": {"no": "id"}}
    first = _run_one("†state.a || †state.b", Chose("†state.a", {"no": "id"}), tools=[tool])
    assert finish(first).calls[0].error == "OutputSchema"


def test_a_write_that_cannot_be_applied_is_a_write_error_and_writes_nothing() -> None:
    state = _run_one("†state.list && †state.copy", Returned(1), method="push",
                     context=[{"type": "state", "state": {"list": {"an": "object"}}}])
    result = finish(state)
    assert result.calls[0].error == "WriteError"
    assert value(state, "state", "copy") is MISSING  # nothing of a failed fan-out is kept


def test_a_write_error_message_does_not_depend_on_timing() -> None:
    # The context position of the refused write depends on what finished before it.
    state = _run_one("†state.list", Returned(1), method="push",
                     context=[{"type": "state", "state": {"list": {"an": "object"}}}])
    message = finish(state).errors[0]["data"]["error"]["message"]
    assert message == "cannot push at †state.list: push needs an array there, found an object"


def test_error_data_whose_repr_fails_is_named_by_its_class() -> None:
    class Odd:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    state = _run_one("†state.a || †state.err", Raised("E", "m", Odd()))
    assert value(state, "state", "err", "data") == "Odd"


def test_fire_and_forget_drops_the_result() -> None:
    state = _run_one(None, Returned({1, 2}))  # not even checked for JSON: it is dropped
    assert state.status[0] is Status.EXECUTED
    assert len(state.context) == 0


def test_fire_and_forget_records_its_errors() -> None:
    state = _run_one(None, Raised("Boom", "x"))
    assert finish(state).calls[0].error == "Boom"


def test_complete_refuses_a_call_that_is_not_running() -> None:
    state = start([{"_tool": "t", "_outputPath": "†state.a"}])
    with pytest.raises(ValueError, match="not running"):
        complete(state, 0, Returned(1), DATE)


# -- the messages -----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["set", "merge", "assign", "push", "concat"])
def test_the_written_message(method: str) -> None:
    result = [1, 2] if method == "concat" else {"k": 1} if method in ("merge", "assign") else 3
    state = _run_one("†state.user.tags", Returned(result), method=method)
    message = state.context.to_json()[-1]
    call = {"_tool": "t", "_outputPath": "†state.user.tags", "_outputMethod": method}
    assert message == {"type": "data", "kind": "state", "data": {"user": {"tags": result}},
                       "_outputPath": "†state.user.tags", "_outputMethod": method,
                       "_call": call, "_date": DATE}


def test_an_index_segment_is_written_as_its_decimal_text() -> None:
    plan = compile_plan([{"_tool": "t", "_outputPath": "†state.list.0"}])
    message = output_message(plan.nodes[0], plan.nodes[0].output.targets[0],  # type: ignore[union-attr]
                             "v", DATE)
    assert thaw(message["data"]) == {"list": {"0": "v"}}


def test_instance_copies_tag_their_messages_and_errors() -> None:
    plan = compile_plan(
        [{"_tool": "t", "x": "†state.x", "_outputPath": "†state.y"}],
        context=[{"type": "state", "_instance": "②", "x": 2},
                 {"type": "state", "_instance": "①", "x": 1}], instances=True)
    state, ready = advance(begin(plan))
    by_instance = {plan.nodes[inv.node].instance: inv for inv in ready}
    state = complete(state, by_instance["②"].node, Raised("Boom", "x"), DATE)
    state = complete(state, by_instance["①"].node, Returned("ok"), DATE)
    result = finish(state)
    written = result.context.to_json()[2]
    assert written["_instance"] == "①" and written["_outputPath"] == "†state.y"
    assert result.errors[0]["_instance"] == "②"
    assert value(state, "state", "y", instance="①") == "ok"
    assert value(state, "state", "y", instance="②") is MISSING


def test_errors_are_appended_at_the_end_ordered_by_call_then_instance() -> None:
    plan = compile_plan([
        {"_tool": "a", "_outputPath": "†state.a"},
        {"_tool": "b", "_outputPath": "†state.b"},
        {"_tool": "c", "_outputPath": "†state.c"},
    ])
    state, ready = advance(begin(plan))
    # complete in reverse order: 2 fails, 0 fails, 1 succeeds
    state = complete(state, 2, Raised("C", "c"), DATE)
    state = complete(state, 1, Returned(1), DATE)
    state = complete(state, 0, Raised("A", "a"), DATE)
    result = finish(state)
    messages = result.context.to_json()
    assert [m["type"] for m in messages] == ["data", "error", "error"]
    assert [m["data"]["error"]["type"] for m in messages[1:]] == ["A", "C"]
    assert result.status == "completed"


# -- cancel, finish, executors ----------------------------------------------------------


def test_cancel_marks_running_calls_and_keeps_finished_results() -> None:
    state, ready = advance(start([
        {"_tool": "a", "_outputPath": "†state.a"},
        {"_tool": "b", "_outputPath": "†state.b"},
        {"_tool": "c", "x": "†state.b", "_outputPath": "†state.c"},
    ]))
    state = complete(state, 0, Returned("kept"), DATE)
    result = finish(cancel(state), cancelled=True)
    assert result.status == "cancelled"
    assert [c.outcome for c in result.calls] == ["executed", "cancelled", "pending"]
    assert value(state, "state", "a") == "kept"
    assert {"event": "cancelled", "call": 1} in result.trace


def test_outcome_of_looks_a_call_up() -> None:
    state, ready = advance(start([{"_tool": "a", "_outputPath": "†state.a"}]))
    result = finish(complete(state, 0, Returned(1), DATE))
    assert result.outcome_of(0) == "executed"
    with pytest.raises(KeyError):
        result.outcome_of(0, "①")


@pytest.mark.slow
def test_a_result_prints_as_a_summary_whatever_its_size() -> None:
    calls = [{"_tool": "a", "_outputPath": f"†state.a{i}"} for i in range(2_000)]
    state, ready = advance(start(calls))
    state = complete_all(state, [(n.node, Returned(n.node), DATE) for n in ready[:-1]])
    state = complete(state, ready[-1].node, Raised("E", "e"), DATE)
    assert repr(finish(state)) == (
        "RunResult(status='completed', calls=2000 (executed 1999, failed 1), errors=1, "
        "trace=5999 lines, context=Context(<2000 messages>))")


def test_the_trace_lists_events_in_order() -> None:
    state, _ = advance(start([
        {"_tool": "pay", "_outputPath": "†state.ok || †state.err"},
        {"_tool": "use", "x": "†state.ok", "_outputPath": "†state.r"},
    ]))
    state = complete(state, 0, Raised("E", "e"), DATE)
    state, _ = advance(state)
    assert finish(state).trace == (
        {"event": "started", "call": 0},
        {"event": "wrote", "call": 0, "detail": "†state.err"},
        {"event": "executed", "call": 0, "detail": "E routed to alternative 2"},
        {"event": "skipped", "call": 1, "detail": "dead branch: †state.ok was not written (call 0 (pay) took †state.err instead)"},
    )


@pytest.mark.parametrize(("tool", "names", "expected"), [
    ({"type": "object", "properties": {"_tool": {"const": "t"}}}, ["t"], "t"),
    ({"type": "object", "properties": {"_tool": {"const": "t"}}}, ["other"], ""),
    ({"type": "object", "_activity": "impl", "properties": {"_tool": {"const": "t"}}}, ["t"], "impl"),
    (None, ["t"], "t"),
    (None, [], ""),
])
def test_executor_for(tool: Any, names: list[str], expected: str) -> None:
    plan = compile_plan([{"_tool": "t"}], tools=[tool] if tool else ())
    assert executor_for(plan, plan.nodes[0], names) == expected


def test_a_plan_without_cycles_always_terminates() -> None:
    # Drive a diamond with failures everywhere: the loop still ends with every call final.
    state = start([
        {"_tool": "a", "_outputPath": "†state.a || †state.aerr"},
        {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
        {"_tool": "c", "x": "†state.a", "_outputPath": "†state.c"},
        {"_tool": "d", "x": "†state.b && †state.c", "_outputPath": "†state.d"},
        {"_tool": "e", "x": "†state.aerr", "_outputPath": "†state.e"},
    ])
    steps = 0
    while not state.done:
        steps += 1
        assert steps < 20
        state, ready = advance(state)
        for inv in ready:
            outcome = Returned("v") if inv.node != 1 else Raised("Boom", "b")
            state = complete(state, inv.node, outcome, DATE)
        check_invariants(state)
    result = finish(state)
    assert [c.outcome for c in result.calls] == ["executed", "failed", "executed", "skipped",
                                                 "skipped"]


# -- complete_all: several completions, one transition --------------------------------------


def test_complete_all_makes_the_state_completing_one_by_one_makes() -> None:
    plan = [
        {"_tool": "t", "i": 0, "_outputPath": "†state.a.x"},
        {"_tool": "t", "i": 1, "_outputPath": "†state.a.y || †state.err"},
        {"_tool": "t", "i": 2, "_outputPath": "†state.a.x"},  # set again: the order shows
        {"_tool": "t", "i": 3, "_outputPath": "†state.a.z.deep"},
        {"_tool": "t", "i": 4},
        {"_tool": "t", "i": 5, "_outputPath": "†state.a.x.below"},  # through a number
        {"_tool": "t", "a": "†state.a", "_outputPath": "†state.joined"},
    ]
    state, ready = ready_nodes(begin(compile_plan(plan)))
    finished = [
        (ready[0], Returned(1), DATE),
        (ready[2], Returned(2), DATE),
        (ready[1], Raised("Boom", "it broke"), DATE),
        (ready[3], Returned({"k": [1, 2]}), DATE),
        (ready[4], Returned("dropped"), DATE),
        (ready[5], Returned(3), DATE),
    ]
    one_by_one = state
    for node_id, outcome, date in finished:
        one_by_one = complete(one_by_one, node_id, outcome, date)
    together = complete_all(state, finished)
    check_invariants(together)
    assert together == one_by_one
    assert together.context.to_json() == one_by_one.context.to_json()
    assert list(together.trace) == list(one_by_one.trace)
    assert dict(together.took) == dict(one_by_one.took)
    assert finish(together) == finish(one_by_one)
    assert value(together, "state", "a", "x") == 2
    assert finish(together).outcome_of(5) is Status.FAILED  # a write through the number 2
    assert ready_nodes(together)[1] == ready_nodes(one_by_one)[1] == [6]


def test_settle_is_complete_all_then_advance() -> None:
    plan = [
        {"_tool": "t", "_outputPath": "†state.a"},
        {"_tool": "t", "_outputPath": "†state.b || †state.err"},
        {"_tool": "t", "x": "†state.a", "_outputPath": "†state.c"},  # released by 0
        {"_tool": "t", "x": "†state.b", "_outputPath": "†state.d"},  # skipped: 1 failed
        {"_tool": "t", "x": "†state.err", "y": "†state.d || 'none'",
         "_outputPath": "†state.e"},  # runs after the skip, in the same advance
    ]
    for trace in (True, False):
        state, ready = ready_nodes(begin(compile_plan(plan), trace=trace))
        finished = [(ready[1], Raised("Boom", "b"), DATE), (ready[0], Returned(1), DATE)]
        two_steps, expected = advance(complete_all(state, finished))
        one_step, invocations = settle(state, finished)
        check_invariants(one_step)
        assert one_step == two_steps
        assert list(one_step.trace) == list(two_steps.trace)
        assert one_step.context.to_json() == two_steps.context.to_json()
        assert invocations == expected
        assert [i.node for i in invocations] == [2, 4]
        assert [i.call for i in invocations] == [i.call for i in expected]
        assert finish(one_step) == finish(two_steps)
    with pytest.raises(ValueError, match="not running"):
        settle(state, [finished[0], finished[0]])


def test_complete_all_refuses_a_node_that_is_not_running() -> None:
    state, ready = ready_nodes(start([{"_tool": "t", "_outputPath": "†state.a"}]))
    with pytest.raises(ValueError, match="not running"):
        complete_all(state, [(ready[0], Returned(1), DATE), (ready[0], Returned(2), DATE)])


# -- several completions appended in one go (the Appender) ---------------------------------

TARGETS = ["†state.a", "†state.a.x", "†state.a.y.z", "†state.list", "†state.a.x.deep",
           "†other.k", "†state.a.y"]
OUTPUTS = st.one_of(
    st.sampled_from(TARGETS),
    st.lists(st.sampled_from(TARGETS), min_size=2, max_size=2, unique=True).map(" && ".join),
    st.tuples(st.sampled_from(TARGETS), st.sampled_from(TARGETS)).map(" || ".join))
READS = st.sampled_from([None, None, "†state.a", "†state.a.x || 'none'", "†other.k",
                         "†state.err"])


def _call(output: str, method: str, read: str | None) -> dict[str, Any]:
    call = {"_tool": "t", "_outputPath": output, "_outputMethod": method}
    if read is not None:
        call["x"] = read
    return call


def compiled_over_state(plan: list[Any]) -> Any:
    """A generated plan compiled over a context that already holds ``state.a.y``."""
    return compile_plan(plan, context=[{"type": "data", "kind": "state",
                                        "data": {"a": {"y": {}}}}])


CALLS = st.lists(st.builds(_call, OUTPUTS, st.sampled_from(
    ["set", "set", "set", "merge", "push", "assign"]), READS), min_size=2, max_size=12)
RESULTS = st.one_of(
    st.integers(0, 3).map(Returned), st.sampled_from([{"q": 1}, [1], {"x": {"w": 2}}]).map(
        Returned), st.just(Raised("Boom", "broke")))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(CALLS, st.data())
def test_completing_many_calls_at_once_makes_the_state_one_by_one_makes(
        plan: list[Any], data: st.DataObject) -> None:
    # complete_all appends the writes of several calls through an Appender and changes
    # statuses in place: the state, the context (with its views laid out alike), the
    # alternatives taken and the trace must all be what completing them in turn makes.
    compiled = compiled_over_state(plan)
    state, ready = ready_nodes(begin(compiled, isolate_invalid=True))  # cycles, dangling
    before = list(state.status)
    order = data.draw(st.permutations(ready))
    finished = [(node, data.draw(RESULTS), DATE) for node in order]
    one_by_one = state
    for node_id, outcome, date in finished:
        one_by_one = complete(one_by_one, node_id, outcome, date)
    together = complete_all(state, finished)
    check_invariants(together)
    assert together == one_by_one
    assert list(together.trace) == list(one_by_one.trace)
    assert dict(together.took) == dict(one_by_one.took) and len(together.took) == len(
        one_by_one.took)
    assert list(together.status) == list(one_by_one.status)
    assert list(together.waiting) == list(one_by_one.waiting)
    for kind in ("state", "other"):
        assert layout(together.context.view(kind)[0]) == layout(one_by_one.context.view(kind)[0])
        assert str(together.context.view(kind)[1]) == str(one_by_one.context.view(kind)[1])
    assert finish(together) == finish(one_by_one)
    # The old state is untouched by the changes made in place.
    assert list(state.status) == before
    # What the completions released starts the same way (many calls start in place too).
    after, started = advance(together)
    expected_after, expected = advance(one_by_one)
    assert after == expected_after and list(after.status) == list(expected_after.status)
    assert [(i.node, i.call) for i in started] == [(i.node, i.call) for i in expected]
    assert list(after.trace) == list(expected_after.trace)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(CALLS, st.data())
def test_took_gives_the_alternative_whose_targets_each_writer_wrote(
        plan: list[Any], data: st.DataObject) -> None:
    # The oracle is the trace: the paths a node's WROTE lines name are the targets of the
    # alternative it took. Took derives the same from statuses and the alternatives
    # recorded when not the first, for every node that wrote and no other.
    compiled = compiled_over_state(plan)
    state = begin(compiled, isolate_invalid=True, trace=True)
    while not state.done:
        state, ready = advance(state)
        finished = []
        for invocation in ready:
            node = compiled.nodes[invocation.node]
            alternatives = node.output.alternatives if node.output is not None else ()
            outcome = data.draw(RESULTS | st.sampled_from(
                [Chose(str(group.targets[0]), 5) for group in alternatives] or [Returned(1)]))
            finished.append((invocation.node, outcome, DATE))
        state = complete_all(state, finished)
    wrote: dict[int, list[str]] = {}
    for event in state.trace:
        if event.kind is EventKind.WROTE:
            wrote.setdefault(event.node, []).append(event.detail)
    possible = {}  # the alternatives with those targets (``†state.a || †state.a`` has two)
    for node_id, texts in wrote.items():
        node = compiled.nodes[node_id]
        assert node.output is not None
        possible[node_id] = {alt for alt, group in enumerate(node.output.alternatives)
                             if [target_text(node, t) for t in group.targets] == texts}
    took = state.took
    assert sorted(took) == sorted(possible) and len(took) == len(possible)
    assert all(took[n] in alts for n, alts in possible.items())


@pytest.mark.parametrize("output", ["†state.w0", '†state."w0"', '†state."my key"',
                                    "†state.a && †state.b", "†state.a || †state.b",
                                    "†state.list.0", "†state.a.0.b", "†state.w0  ",
                                    '†state."true"', "†state.-1", "†state.a || †state.a"])
def test_the_compiled_sole_text_is_the_text_rendered_each_time(output: str) -> None:
    # Node.sole_text, found when compiling: the call's own string when it is the
    # canonical text of its single target (the messages share it), else that text.
    plan = compile_plan([{"_tool": "t", "_outputPath": output}])
    node = plan.nodes[0]
    assert node.output is not None
    sole = len(node.output.alternatives) == 1 and len(node.output.alternatives[0].targets) == 1
    if sole:
        rendered = str(node.output.alternatives[0].targets[0])
        assert node.sole_text == rendered
        assert (node.sole_text is node.output_text) == (rendered == output)
    else:
        assert node.sole_text is None
    for group in node.output.alternatives:
        for target in group.targets:
            assert target_text(node, target) == str(target)
    texts = []
    for _ in range(2):  # the run's messages, with the plan's shared cache
        result = run_sync(plan, activities={"t": lambda call, tool, context: 1})
        texts.append([m["_outputPath"] for m in result.context.to_json()
                      if "_outputPath" in m])
    written = [str(t) for t in node.output.alternatives[0].targets]
    assert texts[0] == texts[1] == (
        written if result.calls[0].outcome == "executed" else [])
    if sole and result.calls[0].outcome == "executed":  # the plan's string, not a copy
        message = next(m for m in result.context.messages if "_outputPath" in m)
        assert message["_outputPath"] is node.sole_text


def _template_reference(node: Any) -> dict[str, Any]:
    # The definition of a node's call template: the call thawed, its instance added,
    # literal \\† strings of its parameters (not its meta-properties) unescaped.
    from obelisk.compiler.parse import unescape_literal

    def unescape(value: Any) -> Any:
        if isinstance(value, str):
            return unescape_literal(value)
        if isinstance(value, dict):
            return {k: unescape(v) for k, v in value.items()}
        if isinstance(value, list):
            return [unescape(v) for v in value]
        return value

    call: Any = thaw(node.call)
    if node.instance is not None:
        call["_instance"] = node.instance
    return {k: v if k[:1] == "_" else unescape(v) for k, v in call.items()}


_LITERAL_TEXT = (st.sampled_from(["\\†x", "\\\\†y", "plain", "a\\†", "", "\\x"])
                 | st.text(max_size=5).filter(lambda t: not t.lstrip().startswith("†")))
_LITERAL = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | _LITERAL_TEXT,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "zz", "_meta", "_other", "x y"]), _LITERAL,
                       max_size=5))
def test_a_call_template_is_its_definition_keys_in_order(params: dict[str, Any]) -> None:
    import json

    from obelisk.interpreters.calls import _call_template

    plan = compile_plan([{"_tool": "t", **params}])
    node = plan.nodes[0]
    made, expected = _call_template(node), _template_reference(node)
    assert json.dumps(made) == json.dumps(expected)  # the same keys in the same order
    # Node.flat, and the shortcut it allows, against the pass over every entry.
    flat = all(v is None or isinstance(v, (bool, int, float, str)) for v in params.values()) \
        and not any(isinstance(v, str) and v.startswith("\\") and not k.startswith("_")
                    for k, v in params.items())
    assert node.flat is flat
    general = _call_template(evolve(node, flat=False))
    assert json.dumps(general) == json.dumps(made)


def test_a_state_made_by_its_maker_is_the_state_attrs_makes() -> None:
    # Every transition makes its state with new_state: RunState's __dict__ built whole
    # (checked at import), the very state attrs' __init__ makes, still frozen.
    import attrs

    from obelisk.interpreters import state as machine

    assert machine.new_state is not machine.RunState  # the check at import passed
    plan = compile_plan([{"_tool": "t", "_outputPath": "†state.a"},
                         {"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}])
    state, _ = advance(begin(plan, trace=True))
    names = [a.name for a in attrs.fields(machine.RunState)]
    args = [getattr(state, name) for name in names]
    made = machine.new_state(**dict(zip(names, args, strict=True)))
    reference = machine.RunState(*args)
    assert made == reference == state and repr(made) == repr(reference)
    assert all(getattr(made, name) is getattr(reference, name) for name in names)
    assert vars(made) == vars(reference)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.running = 5  # type: ignore[misc]
    assert attrs.evolve(made, running=5).running == 5 and made.running == state.running


def test_a_nodes_call_is_made_anew_then_copied_from_its_template_from_the_second_on() -> None:
    # CallCache.call: every call handed out is a new dict equal to the node's template;
    # the template is kept from a node's second call on, never before, and what a
    # holder of one call changes reaches neither the template nor the other calls.
    from obelisk.interpreters.calls import _call_template

    plan = compile_plan([
        {"_tool": "t", "x": "†state.a", "y": {"deep": [1, "\\†lit"]}, "_outputPath": "†state.b"},
        {"_tool": "t", "z": "\\†escaped"},
        {"_tool": "t", "x": "†state.a", "n": 1, "_outputPath": "†state.c"}])  # flat
    assert [node.flat for node in plan.nodes] == [False, False, True]
    cache = CallCache()
    handed: list[dict[str, Any]] = []
    for turn in range(4):
        for node in plan.nodes:
            call = cache.call(node)
            assert call == _call_template(node)
            assert all(call is not other for other in handed)
            handed.append(call)
            if node.id == 0:
                call["y"]["deep"].append("nested")  # nothing nested is shared either
            call["y" if node.id == 0 else "z" if node.id == 1 else "n"] = "changed"
            if node.id != 1:
                call["x"] = None
        # A flat call is made from its node each time: its template is never kept.
        assert sorted(cache.templates) == ([] if turn == 0 else [0, 1])
    assert cache.templates[0] == _call_template(plan.nodes[0])  # never changed by a holder
    assert cache.templates[0]["y"] == {"deep": [1, "†lit"]}


def test_tool_choices_remember_an_activity_by_tool_and_only_for_plain_calls() -> None:
    async def a(call: Any, tool: Any, context: Any) -> Any:
        return 1

    def b(call: Any, tool: Any, context: Any) -> Any:
        return 2

    def latent(call: Any, tool: Any, context: Any) -> Any:
        return 3

    plan = compile_plan([
        {"_tool": "a"}, {"_tool": "a", "x": 1}, {"_tool": "b"},
        {"_tool": "a", "_delegate": "helper"},  # handed to a delegate: never remembered
        {"_tool": "c", "_output": {"v": 1}},  # a latent call's own output
        {"_tool": "c"},  # latent: the latent function
        {"_tool": "d"},  # no activity, no latent function... see the second registry
    ])
    registry = Registry(activities={"a": a, "b": b}, latent=latent)
    choices = ToolChoices(plan, registry)
    state, ready = advance(begin(plan))
    for _ in range(2):  # the second time from what was remembered
        for invocation in ready:
            expected = choose_executor(plan, invocation, registry)
            chosen = choices.choose(invocation)
            if isinstance(expected, RunActivity):
                assert chosen == Known(expected.function, inspect.iscoroutinefunction(
                    expected.function))
            else:
                assert chosen == expected
    assert set(choices.known) == {"a", "b", "c", "d"}
    assert choices.known["a"][1] == Known(a, True) and choices.known["b"][1] == Known(b, False)
    # A dry run's mocks count their turns: nothing is remembered.
    mocked = ToolChoices(plan, Registry(mocks={"a": {"return": 1}}))
    for invocation in ready:
        mocked.choose(invocation)
    assert mocked.known == {}
