"""Replaying a run's events rebuilds the run (the events seam, interpreters/replaying.py)."""

from __future__ import annotations

import asyncio
import copy
import itertools
from typing import Any

import pytest
from equivalents import activity_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_run_properties import approval, scenarios, without_delays

from obelisk import compile_plan, run_async, run_sync
from obelisk.interpreters.events import Cancelled, Decided, Finished, RunEvent, Started
from obelisk.interpreters.machine import advance, finish
from obelisk.interpreters.outcomes import Approve, Deny, Returned
from obelisk.interpreters.replaying import Folding, replay, replay_more, replay_open

REPLAYS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
DATE = "2025-10-26T12:00:00Z"


def replayed(plan: Any, context: Any, events: list[RunEvent]) -> Any:
    state, ready = advance(replay(plan, context, events))
    assert ready == ()  # a complete record: only the final skips were left
    return finish(state)


@pytest.mark.slow
@REPLAYS
@given(scenarios())
def test_replaying_a_runs_events_gives_the_same_result(scenario: dict[str, Any]) -> None:
    compiled = compile_plan(scenario["plan"], context=scenario["context"],
                            instances=scenario["instances"])
    mocks = scenario["mocks"]
    common: dict[str, Any] = dict(approve=approval(scenario), clock=lambda: DATE)
    sync_events: list[RunEvent] = []
    sync = run_sync(compiled, observer=sync_events.append, **common, activities={
        tool: activity_of(without_delays(mock), "plain") for tool, mock in mocks.items()})
    async_events: list[RunEvent] = []
    aio = asyncio.run(run_async(
        compiled, observer=async_events.append, max_concurrency=scenario["max_concurrency"],
        **common, activities={tool: activity_of(mock, "async") for tool, mock in mocks.items()}))
    for result, events in ((sync, sync_events), (aio, async_events)):
        again = replayed(compiled, None, events)
        assert again.calls == result.calls
        assert again.context.to_json() == result.context.to_json()
        assert again.errors == result.errors


@pytest.mark.slow
@REPLAYS
@given(scenarios(), st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_a_replay_made_in_steps_is_the_replay_made_at_once(scenario: dict[str, Any],
                                                           cuts: list[int]) -> None:
    compiled = compile_plan(scenario["plan"], context=scenario["context"],
                            instances=scenario["instances"])
    approvals = approval(scenario) is not None
    events: list[RunEvent] = []
    asyncio.run(run_async(compiled, observer=events.append, approve=approval(scenario),
                          clock=lambda: DATE, max_concurrency=scenario["max_concurrency"],
                          activities={tool: activity_of(mock, "async")
                                      for tool, mock in scenario["mocks"].items()}))
    whole = replay_open(compiled, None, events, approvals=approvals)
    bounds = sorted({min(c, len(events)) for c in cuts} | {0, len(events)})
    stepped = replay_open(compiled, None, events[:bounds[0]], approvals=approvals)
    for start, end in itertools.pairwise(bounds):
        stepped = replay_more(stepped, events[start:end], approvals=approvals)
    # a follower's fold, one event at a time (the calls under way kept by node)
    folding = Folding(replay_open(compiled, None, (), approvals=approvals),
                      approvals=approvals)
    for event in events:
        folding.more(event)
    for found in (stepped, folding.replayed):
        assert found.state.status == whole.state.status
        assert found.state.context.to_json() == whole.state.context.to_json()
        assert [i.node for i in found.running] == [i.node for i in whole.running]
        assert [i.node for i in found.undecided] == [i.node for i in whole.undecided]
        assert finish(found.state).calls == finish(whole.state).calls


def test_the_observer_sees_each_step_in_order() -> None:
    events: list[RunEvent] = []
    run_sync([{"_tool": "a", "_outputPath": "†state.a"}, {"_tool": "b", "x": "†state.a"}],
             activities={"a": lambda c, t, x: 1, "b": lambda c, t, x: None},
             approve=lambda call: call["_tool"] == "a", clock=lambda: DATE,
             observer=events.append)
    assert [type(e).__name__ for e in events] == [
        "Started", "Decided", "Finished", "Started", "Decided"]
    assert events[2] == Finished(0, Returned(1), DATE)
    assert events[4] == Decided(1, Deny())
    assert isinstance(events[3], Started) and events[3].call == {"_tool": "b", "x": 1}


def test_a_cancelled_run_records_its_cancellation() -> None:
    events: list[RunEvent] = []

    async def forever(call: Any, tool: Any, context: Any) -> None:
        await asyncio.Event().wait()

    async def main() -> Any:
        task = asyncio.create_task(run_async([{"_tool": "f"}], activities={"f": forever},
                                             observer=events.append))
        while not events:
            await asyncio.sleep(0)
        task.cancel()
        return await task

    result = asyncio.run(main())
    assert events[-1] == Cancelled()
    state = replay(result.plan, None, events)
    assert finish(state).calls == result.calls


class _NodesOnly:
    """An observer that declares it never reads the calls of Started events (as the
    journal's recorder does)."""

    reads_calls = False

    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def __call__(self, event: RunEvent) -> None:
        self.events.append(event)


def test_started_events_carry_a_copy_of_the_call_unless_the_observer_never_reads_it() -> None:
    plan = [{"_tool": "a", "x": {"deep": [1]}, "_outputPath": "†state.a"}]
    seen: list[Any] = []

    def meddling(event: RunEvent) -> None:
        if isinstance(event, Started):  # changes its copy: the activity must not see it
            event.call["x"]["deep"].append(2)
            event.call["extra"] = True

    for interpreter in ("sync", "asyncio"):
        seen.clear()

        def activity(call: Any, tool: Any, context: Any) -> Any:
            seen.append(call)
            return 1

        nodes_only = _NodesOnly()
        if interpreter == "sync":
            run_sync(plan, activities={"a": activity}, observer=meddling)
            run_sync(plan, activities={"a": activity}, observer=nodes_only)
        else:
            asyncio.run(run_async(plan, activities={"a": activity}, observer=meddling))
            asyncio.run(run_async(plan, activities={"a": activity}, observer=nodes_only))
        assert seen == [{"_tool": "a", "x": {"deep": [1]}, "_outputPath": "†state.a"}] * 2
        started = [e for e in nodes_only.events if isinstance(e, Started)]
        assert [(e.node, e.call) for e in started] == [(0, {})]


def test_runs_resumed_from_one_replay_each_get_the_calls_as_replayed() -> None:
    # An activity is handed its invocation's call itself: a resumed run takes copies of
    # the replay's invocations (Replayed.pick_up), so what one resumed run's activity
    # changes in place neither the replay nor a second run resumed from it sees. Both
    # kinds of picked-up call: one running (node 0), one waiting for the hook (node 1).
    from obelisk.interpreters.aio import drive_async
    from obelisk.interpreters.executors import Registry, async_executor, sync_executor
    from obelisk.interpreters.sync import drive_sync

    plan = compile_plan([{"_tool": "t", "x": {"deep": [1]}, "_outputPath": "†state.a"},
                         {"_tool": "t", "x": {"deep": [2]}, "_outputPath": "†state.b"}])
    events: list[RunEvent] = [Started(0, {}), Decided(0, Approve()), Started(1, {})]
    replayed = replay_open(plan, None, events, approvals=True)
    assert [i.node for i in replayed.running] == [0]
    assert [i.node for i in replayed.undecided] == [1]
    seen: list[Any] = []
    shown: list[Any] = []

    def meddle(call: dict[str, Any], tool: Any, context: Any) -> Any:
        seen.append(copy.deepcopy(call))
        call["x"]["deep"].append("changed")
        return 1

    def approve(call: dict[str, Any]) -> Any:
        shown.append(copy.deepcopy(call))
        return True

    clock = lambda: DATE  # noqa: E731
    for interpreter in ("sync", "asyncio", "sync", "asyncio"):
        registry = Registry(activities={"t": meddle})
        if interpreter == "sync":
            result = drive_sync(plan, plan.context, sync_executor(plan, registry), approve,
                                clock, resume=replayed)
        else:
            result = asyncio.run(drive_async(plan, plan.context, async_executor(plan, registry),
                                             approve, clock, resume=replayed))
        assert result.status == "completed" and not result.errors
    assert seen == [{"_tool": "t", "x": {"deep": [1]}, "_outputPath": "†state.a"},
                    {"_tool": "t", "x": {"deep": [2]}, "_outputPath": "†state.b"}] * 4
    assert shown == [{"_tool": "t", "x": {"deep": [2]}, "_outputPath": "†state.b"}] * 4
    assert [i.call["x"] for i in (*replayed.running, *replayed.undecided)] == [
        {"deep": [1]}, {"deep": [2]}]
