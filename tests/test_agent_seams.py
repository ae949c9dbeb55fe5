"""Seams the agent loop needs from the interpreters: the drivers keep going past invalid
calls when asked, and a dry run answers latent calls through a latent executor."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from attrs import evolve
from pyrsistent import pmap

from obelisk import compile_plan
from obelisk.compiler.diagnostics import Diagnostic
from obelisk.compiler.nodes import CompiledPlan
from obelisk.core.errors import PlanRefused
from obelisk.interpreters.aio import drive_async
from obelisk.interpreters.calls import Invocation
from obelisk.interpreters.executors import (
    Produce,
    Registry,
    RunLatent,
    async_executor,
    choose_executor,
    sync_executor,
)
from obelisk.interpreters.mocks import Counts
from obelisk.interpreters.outcomes import Outcome, Returned
from obelisk.interpreters.sync import drive_sync

DATE = "2025-10-26T12:00:00Z"
CALLS = [
    {"_tool": "a", "_outputPath": "†state.a"},
    {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
    {"_tool": "c", "_outputPath": "†state.c"},
]


def invalid_first() -> CompiledPlan:
    plan = compile_plan(CALLS)
    diagnostic = Diagnostic(code="dangling-reference", message="wrong", call=0, pointer="/x")
    return evolve(plan, invalid=pmap({0: (diagnostic,)}),
                  diagnostics=plan.diagnostics + (diagnostic,))


def ok(call: dict[str, Any], tool: Any, context: Any) -> int:
    return 1


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_drivers_keep_going_past_invalid_calls_only_when_asked(interpreter: str) -> None:
    plan = invalid_first()
    registry = Registry(activities={"a": ok, "b": ok, "c": ok})

    def drive(**kw: Any) -> Any:
        if interpreter == "sync":
            return drive_sync(plan, plan.context, sync_executor(plan, registry), None,
                              lambda: DATE, **kw)
        return asyncio.run(drive_async(plan, plan.context, async_executor(plan, registry),
                                       None, lambda: DATE, **kw))

    with pytest.raises(PlanRefused):
        drive()
    result = drive(isolate_invalid=True)
    assert [c.outcome for c in result.calls] == ["invalid", "skipped", "executed"]


class Answer:
    async def __call__(self, invocation: Invocation) -> Outcome:
        return Returned("from the LLM")


def test_a_dry_run_asks_the_latent_executor_for_latent_calls_without_a_mock() -> None:
    plan = compile_plan([{"_tool": "think", "_outputPath": "†state.t"},
                         {"_tool": "mocked", "_outputPath": "†state.m"},
                         {"_tool": "own", "_output": 3, "_outputPath": "†state.o"}])
    executor = Answer()
    registry = Registry(mocks={"mocked": {"return": 1}}, counts=Counts(),
                        latent_executor=executor)

    def invocation(node: int) -> Invocation:
        return Invocation(node, dict(plan.nodes[node].call), None, plan.context)  # type: ignore[arg-type]

    assert choose_executor(plan, invocation(0), registry) == RunLatent(executor)
    assert choose_executor(plan, invocation(1), registry) == Produce(Returned(1))
    assert choose_executor(plan, invocation(2), registry) == Produce(Returned(3))


def test_a_dry_run_latent_executor_can_be_limited_to_some_tools() -> None:
    plan = compile_plan([{"_tool": "think", "_outputPath": "†state.t"},
                         {"_tool": "other", "_outputPath": "†state.o"}])
    executor = Answer()
    registry = Registry(mocks={}, counts=Counts(), latent_executor=executor,
                        latent_tools=frozenset({"think"}))

    def invocation(node: int) -> Invocation:
        return Invocation(node, dict(plan.nodes[node].call), None, plan.context)  # type: ignore[arg-type]

    assert choose_executor(plan, invocation(0), registry) == RunLatent(executor)
    assert not isinstance(choose_executor(plan, invocation(1), registry), RunLatent)
