"""The machine's transitions are cheap and leave every earlier state as it was.

Each transition (``advance``, ``decide``, ``complete``, ``settle``, ``cancel``) works on a local step
and makes one new state; these tests keep every state a run passed through, with a deep
copy of what it held when it was made, and check that nothing later changed any of them.
They also pin the trace option: recorded when asked, or when an observer follows the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from obelisk import compile_plan, run_async, run_sync
from obelisk.core.plain import thaw
from obelisk.interpreters.cancel import cancel
from obelisk.interpreters.machine import advance, begin, complete, decide, finish, settle
from obelisk.interpreters.outcomes import Approve, Deny, Raised, Returned
from obelisk.interpreters.state import RunState, Took

DATE = "2025-10-26T12:00:00Z"

PLAN: list[dict[str, Any]] = [
    {"_tool": "src", "_outputPath": "†state.src"},
    {"_tool": "pay", "x": "†state.src", "_outputPath": "†state.ok || †state.err"},
    {"_tool": "use", "x": "†state.ok", "_outputPath": "†state.used"},
    {"_tool": "fix", "x": "†state.err", "_outputPath": "†state.fixed"},
    {"_tool": "fan", "x": "†state.src", "_outputPath": "†state.out.a"},
    {"_tool": "fan", "x": "†state.src", "_outputPath": "†state.out.b"},
    {"_tool": "join", "x": "†state.out", "_outputPath": "†state.joined"},
    {"_tool": "deny", "x": "†state.src", "_outputPath": "†state.denied"},
    {"_tool": "fail", "x": "†state.src", "_outputPath": "†state.failed"},
    {"_tool": "late", "x": "†state.joined", "_outputPath": "†state.late"},
]


def snapshot(state: RunState) -> dict[str, Any]:
    """A deep, plain copy of everything a state holds."""
    return {
        "context": state.context.to_json(), "messages": len(state.context),
        "views": {k: thaw(state.context.view(k)[0]) for k in state.context.kinds},
        "status": list(state.status), "waiting": list(state.waiting),
        "candidates": sorted(state.candidates), "running": state.running,
        "errors": thaw(dict(state.errors)), "reasons": dict(state.reasons),
        "trace": list(state.trace), "took": dict(state.took),
        "approvals": thaw(dict(state.approvals)), "open": state.open,
    }


def keeper(seen: list[tuple[RunState, dict[str, Any]]]) -> Callable[[RunState], RunState]:
    """A function that notes a state and a deep copy of it in ``seen``, and returns it."""
    def keep(state: RunState) -> RunState:
        seen.append((state, snapshot(state)))
        return state
    return keep


def test_no_transition_changes_an_earlier_state() -> None:
    plan = compile_plan(PLAN)
    seen: list[tuple[RunState, dict[str, Any]]] = []
    keep = keeper(seen)

    state = keep(begin(plan))
    outcomes = {"pay": Raised("Declined", "no"), "fail": Raised("Broken", "b")}
    while True:
        state, ready = advance(state)
        keep(state)
        if not ready:
            break
        for invocation in ready:
            tool = plan.nodes[invocation.node].tool
            verdict = Deny("no") if tool == "deny" else Approve()
            state, approved = decide(state, invocation, verdict)
            keep(state)
            if approved is None:
                continue
            if tool == "late":
                keep(cancel(state))  # a branch of the run that is cancelled here
                continue
            state = keep(complete(state, invocation.node,
                                  outcomes.get(tool or "", Returned({"v": tool})), DATE))
    result = finish(state)
    assert [c.outcome for c in result.calls] == [
        "executed", "executed", "skipped", "executed", "executed", "executed", "executed",
        "failed", "failed", "running"]
    for old, copy in seen:
        assert snapshot(old) == copy


def test_settling_changes_no_earlier_state() -> None:
    # As the asyncio loop drives the machine: what finished is completed and the next
    # calls made ready in one transition.
    plan = compile_plan(PLAN)
    seen: list[tuple[RunState, dict[str, Any]]] = []
    keep = keeper(seen)

    state, ready = advance(keep(begin(plan)))
    keep(state)
    outcomes = {"pay": Raised("Declined", "no"), "fail": Raised("Broken", "b")}
    while ready:
        finished = []
        for invocation in ready:
            tool = plan.nodes[invocation.node].tool
            state, approved = decide(state, invocation, Deny("no") if tool == "deny" else Approve())
            keep(state)
            if approved is not None:
                finished.append((invocation.node, outcomes.get(tool or "", Returned(tool)), DATE))
        state, ready = settle(state, finished)
        keep(state)
    assert [c.outcome for c in finish(state).calls] == [
        "executed", "executed", "skipped", "executed", "executed", "executed", "executed",
        "failed", "failed", "executed"]
    for old, copy in seen:
        assert snapshot(old) == copy


def test_an_advance_with_nothing_to_do_returns_the_same_state() -> None:
    state, _ = advance(begin(compile_plan([{"_tool": "a", "_outputPath": "†state.a"}])))
    again, ready = advance(state)
    assert ready == () and again is state


def test_begin_without_the_trace_records_none_and_changes_nothing_else() -> None:
    plan = compile_plan(PLAN)

    def drive(trace: bool) -> RunState:
        state = begin(plan, trace=trace)
        while True:
            state, ready = advance(state)
            if not ready:
                return state
            for invocation in ready:
                state = complete(state, invocation.node, Returned(1), DATE)

    with_trace, without = drive(True), drive(False)
    assert len(with_trace.trace) > 0 and len(without.trace) == 0
    assert finish(without) == finish(with_trace)  # a result's trace is not part of its value
    assert finish(without).trace == ()


def clock() -> str:
    return DATE


def activity(call: dict[str, Any], tool: Any, context: Any) -> Any:
    return {"ok": True}


async def async_activity(call: dict[str, Any], tool: Any, context: Any) -> Any:
    return {"ok": True}


def test_a_run_records_its_trace_when_asked_or_watched() -> None:
    plan = [{"_tool": "t", "_outputPath": "†state.a"},
            {"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}]
    events: list[Any] = []
    plain = run_sync(plan, activities={"t": activity}, clock=clock)
    asked = run_sync(plan, activities={"t": activity}, clock=clock, trace=True)
    watched = run_sync(plan, activities={"t": activity}, clock=clock, observer=events.append)
    refused = run_sync(plan, activities={"t": activity}, clock=clock, observer=events.append, trace=False)
    assert plain.trace == () and refused.trace == ()
    assert asked.trace == watched.trace != ()
    assert [e["event"] for e in asked.trace] == [
        "started", "wrote", "executed", "started", "wrote", "executed"]
    assert plain == asked == watched == refused  # the same run otherwise

    async def both() -> tuple[Any, Any]:
        return (await run_async(plan, activities={"t": async_activity}, clock=clock),
                await run_async(plan, activities={"t": async_activity}, clock=clock, trace=True))

    quiet, traced = asyncio.run(both())
    assert quiet.trace == () and traced.trace == asked.trace and quiet == traced == plain


def test_took_is_a_mapping_of_each_writer_to_the_alternative_it_took() -> None:
    # A view of the state: the nodes that wrote (EXECUTED, with an _outputPath), each
    # with its alternative; an earlier state's view is unchanged by later transitions.
    plan = compile_plan([
        {"_tool": "a", "_outputPath": "†state.a || †state.aerr"},
        {"_tool": "b", "_outputPath": "†state.b || †state.berr"},
        {"_tool": "c"},  # fire-and-forget: executed, writes nothing
        {"_tool": "d", "_outputPath": "†state.d"},  # fails: writes nothing
    ])
    state, ready = advance(begin(plan))
    first = state.took
    assert dict(first) == {} and len(first) == 0 and first.get(0) is None
    state = complete(state, 0, Returned(1), DATE)
    state = complete(state, 1, Raised("Boom", "b"), DATE)
    state = complete(state, 2, Returned(3), DATE)
    state = complete(state, 3, Raised("Broken", "b"), DATE)
    took = state.took
    assert isinstance(took, Took)
    assert dict(took) == {0: 0, 1: 1} and len(took) == 2 and list(took) == [0, 1]
    assert took[1] == 1 and took.get(2) is None and 3 not in took and -1 not in took
    assert 99 not in took
    assert took == {0: 0, 1: 1} and took != first and dict(first) == {}
    assert hash(took) == hash(complete(complete(complete(complete(
        advance(begin(plan))[0], 1, Raised("Boom", "b"), DATE), 0, Returned(1), DATE),
        2, Returned(3), DATE), 3, Raised("Broken", "b"), DATE).took)
