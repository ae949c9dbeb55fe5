"""The machine's seams: keep going past invalid calls, admitting calls while running,
and the one place an executor is chosen (interpreters/machine.py, executors.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from attrs import evolve
from pyrsistent import pmap

from obelisk import compile_plan, dry_run, run_async, run_sync
from obelisk.compiler.diagnostics import Diagnostic
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core import pmaps
from obelisk.core.errors import PlanRefused
from obelisk.interpreters.admission import admit, close
from obelisk.interpreters.events import EventKind, Status
from obelisk.interpreters.executors import (
    Delegate,
    Produce,
    Registry,
    RunActivity,
    RunLatent,
    choose_executor,
    execute_async,
    execute_sync,
)
from obelisk.interpreters.machine import advance, begin, complete, finish
from obelisk.interpreters.mocks import Counts
from obelisk.interpreters.outcomes import Raised, Returned
from obelisk.interpreters.state import RunState

DATE = "2025-10-26T12:00:00Z"


def plan_of(calls: list[Any], **kw: Any) -> CompiledPlan:
    return compile_plan(calls, **kw)


# -- a. keep going past invalid calls -------------------------------------------------------


def with_invalid(plan: CompiledPlan, node: int, code: str = "dangling-reference") -> CompiledPlan:
    diagnostic = Diagnostic(code=code, message="the call is wrong", call=plan.nodes[node].index,
                            pointer="/x")
    return evolve(plan, invalid=pmap({node: (diagnostic,)}),
                  diagnostics=plan.diagnostics + (diagnostic,))


def test_a_plan_with_errors_is_still_refused_by_default() -> None:
    plan = with_invalid(plan_of([{"_tool": "a"}]), 0)
    assert not plan.ok
    with pytest.raises(PlanRefused):
        begin(plan)


def test_an_invalid_call_fails_at_once_and_its_readers_are_a_dead_branch() -> None:
    plan = with_invalid(plan_of([
        {"_tool": "a", "_outputPath": "†state.a"},
        {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
        {"_tool": "c", "_outputPath": "†state.c"},
    ]), 0)
    state = begin(plan, isolate_invalid=True)
    assert state.status[0] is Status.INVALID
    state, ready = advance(state)
    assert [i.node for i in ready] == [2]
    assert state.status[1] is Status.SKIPPED  # dead branch: its writer wrote nothing
    state = complete(state, 2, Returned(1), DATE)
    result = finish(state)
    assert [c.outcome for c in result.calls] == ["invalid", "skipped", "executed"]
    assert result.calls[0].error == "Invalid"
    (error,) = result.errors
    assert error["data"]["error"] == {  # type: ignore[index, call-overload]
        "type": "Invalid", "message": "the call is wrong",
        "data": {"diagnostics": [{"code": "dangling-reference", "message": "the call is wrong",
                                  "pointer": "/x"}]},
    }
    assert result.trace[0]["event"] == EventKind.INVALID.value
    assert result.status == "completed"


def test_keep_going_is_the_same_run_when_nothing_is_invalid() -> None:
    plan = plan_of([{"_tool": "a", "_outputPath": "†state.a"}])
    assert begin(plan, isolate_invalid=True) == begin(plan)


# -- b. admitting calls while running (streaming) -------------------------------------------


FIRST = {"_tool": "use", "x": "†state.later", "_outputPath": "†state.used"}
SECOND = {"_tool": "make", "_outputPath": "†state.later"}


def test_an_open_compile_does_not_report_what_a_later_call_may_write() -> None:
    # The calls seen so far of a stream: a read that nothing seen so far writes waits.
    assert [d.code for d in plan_of([FIRST]).diagnostics] == ["dangling-reference"]
    plan = plan_of([FIRST], open=True)
    assert plan.ok and not plan.invalid


def open_run() -> RunState:
    # The first part alone reads a value nothing writes yet (an error for a closed plan).
    return begin(plan_of([FIRST], open=True), open=True, isolate_invalid=True)


def test_an_open_run_parks_a_call_whose_value_no_call_writes_yet() -> None:
    state, ready = advance(open_run())
    assert ready == () and state.status[0] is Status.PENDING and state.done


def test_an_admitted_writer_releases_the_parked_call() -> None:
    state, _ = advance(open_run())
    state = admit(state, plan_of([FIRST, SECOND]))
    assert list(state.status) == [Status.PENDING, Status.PENDING]
    assert list(state.waiting) == [1, 0]
    state, ready = advance(state)
    assert [i.node for i in ready] == [1]
    state = complete(state, 1, Returned(5), DATE)
    state, ready = advance(state)
    assert [(i.node, i.call["x"]) for i in ready] == [(0, 5)]


def test_admitted_calls_wait_only_for_unfinished_predecessors() -> None:
    state = begin(plan_of([SECOND]), open=True)
    state, _ = advance(state)
    state = complete(state, 0, Returned(5), DATE)
    state = admit(state, plan_of([SECOND, FIRST]))
    assert state.waiting[1] == 0
    state, ready = advance(state)
    assert [(i.node, i.call["x"]) for i in ready] == [(1, 5)]


def test_closing_the_run_skips_what_nothing_wrote() -> None:
    state, _ = advance(open_run())
    state, ready = advance(close(state))
    assert ready == () and state.status[0] is Status.SKIPPED
    assert finish(state).calls[0].error == "MissingValue"


def test_admit_refuses_a_closed_run_and_a_plan_that_does_not_extend_it() -> None:
    with pytest.raises(ValueError, match="closed"):
        admit(begin(plan_of([SECOND])), plan_of([SECOND, FIRST]))
    with pytest.raises(ValueError, match="first"):
        admit(open_run(), plan_of([SECOND]))


# -- c. one place where an executor is chosen -------------------------------------------------


def ready_one(calls: list[Any], **kw: Any) -> tuple[CompiledPlan, Any]:
    plan = plan_of(calls, **kw)
    _, ready = advance(begin(plan))
    return plan, ready[0]


def activity(call: Any, tool: Any, context: Any) -> str:
    return "ran"


class Latent:
    async def __call__(self, invocation: Any) -> Returned:
        return Returned({"from": "llm", "tool": invocation.call["_tool"]})


@pytest.mark.parametrize(("call", "registry", "expected"), [
    ({"_tool": "a"}, Registry(activities={"a": activity}), RunActivity(activity)),
    ({"_tool": "a", "_output": 3}, Registry(), Produce(Returned(3))),
    ({"_tool": "a"}, Registry(latent=activity), RunActivity(activity)),
    ({"_tool": "a"}, Registry(delegates=frozenset({"a"})), Delegate("a")),
    ({"_tool": "a"}, Registry(mocks={"a": {"return": 2}}, counts=Counts()),
     Produce(Returned(2))),
])
def test_choose_executor_table(call: Any, registry: Registry, expected: Any) -> None:
    plan, invocation = ready_one([call])
    assert choose_executor(plan, invocation, registry) == expected


def test_without_an_executor_a_latent_call_fails_with_no_activity() -> None:
    plan, invocation = ready_one([{"_tool": "a"}])
    chosen = choose_executor(plan, invocation, Registry())
    assert isinstance(chosen, Produce) and isinstance(chosen.outcome, Raised)
    assert chosen.outcome.type == "NoActivity"


def test_a_latent_executor_answers_latent_calls_in_both_loops() -> None:
    plan, invocation = ready_one([{"_tool": "a"}])
    chosen = choose_executor(plan, invocation, Registry(latent_executor=Latent(),
                                                        latent=activity))
    assert isinstance(chosen, RunLatent)
    expected = Returned({"from": "llm", "tool": "a"})
    assert asyncio.run(execute_async(chosen, invocation)) == expected
    loop = asyncio.new_event_loop()
    try:
        assert execute_sync(chosen, invocation, loop.run_until_complete) == expected
    finally:
        loop.close()


def test_a_delegated_call_fails_clearly_until_delegation_exists() -> None:
    plan, invocation = ready_one([{"_tool": "a"}])
    outcome = asyncio.run(execute_async(Delegate("helper"), invocation))
    assert isinstance(outcome, Raised) and outcome.contract and "helper" in outcome.message


def test_every_interpreter_reports_the_observer_events_of_one_run() -> None:
    calls = [{"_tool": "a", "_outputPath": "†state.a"}]
    seen: dict[str, list[Any]] = {"sync": [], "asyncio": [], "dry": []}
    run_sync(calls, activities={"a": activity}, observer=seen["sync"].append, clock=lambda: DATE)
    asyncio.run(run_async(calls, activities={"a": activity}, observer=seen["asyncio"].append,
                          clock=lambda: DATE))
    dry_run(calls, mocks={"a": {"return": "ran"}}, observer=seen["dry"].append,
            clock=lambda: DATE)
    assert seen["sync"] == seen["asyncio"] == seen["dry"]
    assert len(seen["sync"]) == 2


def test_every_node_of_an_invalid_cycle_ends_invalid_and_its_readers_are_skipped() -> None:
    plan = plan_of([
        {"_tool": "a", "x": "†state.b", "_outputPath": "†state.a"},
        {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
        {"_tool": "c", "x": "†state.a", "_outputPath": "†state.c"},
    ])
    assert not plan.ok  # a cycle
    cycle = tuple(d for d in plan.errors)
    plan = evolve(plan, invalid=pmap({0: cycle, 1: cycle}))
    state, ready = advance(begin(plan, isolate_invalid=True))
    assert ready == ()
    assert list(state.status) == [Status.INVALID, Status.INVALID, Status.SKIPPED]
    assert finish(state).status == "completed"


@pytest.mark.slow
def test_the_call_cache_is_one_per_plan_object_and_leaves_with_it() -> None:
    import gc

    from obelisk.interpreters import calls

    plan = plan_of([{"_tool": "a", "_outputPath": "†state.a"}])
    other = plan_of([{"_tool": "a", "_outputPath": "†state.a"}])  # equal, not the same
    assert calls.cache_of(plan) is calls.cache_of(plan) is begin(plan).cache
    assert calls.cache_of(other) is not calls.cache_of(plan)
    key = id(plan)
    del plan
    gc.collect()
    assert key not in calls._CACHES


@pytest.mark.slow
@pytest.mark.parametrize("interpreter", ["sync", "asyncio", "dry run"])
def test_a_finished_run_keeps_nothing_per_call(interpreter: str) -> None:
    # Once a run's result is dropped, what the run made is gone: no message, base, layout
    # or template of a flat call outlives the run (a call that is not flat keeps one
    # template, a plain dict, from the plan's second run on). Counted by type among the
    # objects the collector tracks (every PMap, PVector and class instance).
    import gc
    from collections import Counter

    from obelisk.interpreters import calls

    size = 200
    source = [{"_tool": "a", "x": f"†state.s{i - 1}" if i else 0, "_outputPath": f"†state.s{i}"}
              for i in range(size)]

    async def answer(call: Any, tool: Any, context: Any) -> Any:
        return {"ok": True}

    def run(plan: CompiledPlan) -> None:
        if interpreter == "sync":
            result = run_sync(plan, activities={"a": lambda call, tool, context: {"ok": True}})
        elif interpreter == "asyncio":
            result = asyncio.run(run_async(plan, activities={"a": answer}))
        else:
            result = dry_run(plan, mocks={"a": {"return": {"ok": True}}})
        assert len(result.context) == size

    run(plan_of(source))  # what any run makes once (imports, memos) is made here
    plan = plan_of(source)
    for _ in range(3):  # the first run, then runs of a plan that ran before
        gc.collect()
        before = Counter(type(o).__name__ for o in gc.get_objects())
        run(plan)
        gc.collect()
        after = Counter(type(o).__name__ for o in gc.get_objects())
        grown = {name: after[name] - before[name] for name in after
                 if after[name] - before[name] >= size // 4}
        assert grown == {}
        # These calls are flat (Node.flat): made from the node each time, they keep no
        # template (tests/test_machine.py covers the templates of other calls).
        assert all(node.flat for node in plan.nodes)
        assert len(calls.cache_of(plan).templates) == 0


def test_output_messages_share_the_plans_strings_and_call() -> None:
    # A message copies nothing the plan holds: its _call is the node's call, its
    # _outputPath the node's own text when that is the target as written canonically
    # (otherwise, as for one target of several, the target's rendering).
    plan = plan_of([{"_tool": "a", "_outputPath": "†state.a"},
                    {"_tool": "a", "_outputPath": "†state.b || †state.c"}])
    result = run_sync(plan, activities={"a": lambda call, tool, context: 1})
    first, second = result.context.messages
    assert first["_call"] is plan.nodes[0].call
    assert first["_outputPath"] is plan.nodes[0].output_text
    assert second["_outputPath"] == "†state.b"
    assert pmaps.bucket_count(first) == pmaps.bucket_count(second) == 1  # built compactly


# -- delegates through the executor seam ----------------------------------------------------


class Helper:
    """A delegate executor that answers with the delegate's name and the call's tool."""

    async def __call__(self, to: str, invocation: Any) -> Any:
        return Returned({"to": to, "tool": invocation.call["_tool"]})


DELEGATED = {"type": "object", "properties": {"_tool": {"const": "a"},
                                              "_delegate": {"const": "helper.json"}}}


def test_a_delegate_goes_before_an_activity_and_runs_in_both_loops() -> None:
    plan, invocation = ready_one([{"_tool": "a", "_delegate": "anonymous"}])
    helper = Helper()
    chosen = choose_executor(plan, invocation, Registry(activities={"a": activity},
                                                        delegate_executor=helper))
    assert chosen == Delegate("anonymous", helper)
    expected = Returned({"to": "anonymous", "tool": "a"})
    assert asyncio.run(execute_async(chosen, invocation)) == expected
    loop = asyncio.new_event_loop()
    try:
        assert execute_sync(chosen, invocation, loop.run_until_complete) == expected
    finally:
        loop.close()


def test_a_tool_prescribed_delegate_is_chosen_and_a_mock_goes_first() -> None:
    plan = compile_plan([{"_tool": "a"}], tools=[DELEGATED])
    _, ready = advance(begin(plan))
    helper = Helper()
    assert choose_executor(plan, ready[0], Registry(delegate_executor=helper)) == Delegate(
        "helper.json", helper)
    mocked = Registry(mocks={"a": {"return": 2}}, counts=Counts(), delegate_executor=helper)
    assert choose_executor(plan, ready[0], mocked) == Produce(Returned(2))


def test_an_admitted_call_with_an_error_finishes_invalid_and_never_starts() -> None:
    state = begin(plan_of([SECOND], open=True), open=True, isolate_invalid=True)
    state, _ = advance(state)
    bad = {"_tool": "make", "_outputPath": "not a path"}
    state = admit(state, plan_of([SECOND, bad], open=True))
    assert state.status[1] is Status.INVALID
    state, ready = advance(state)
    assert [i.node for i in ready] == []
