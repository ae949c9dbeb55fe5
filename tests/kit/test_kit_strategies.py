"""obelisk.testing's strategies draw what they promise: valid contexts and expressions,
race-free plans with a mock for every tool, and (wild) plans with compile errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from obelisk import Context, compile_plan, dry_run, parse_input, parse_output
from obelisk.testing import contexts, expressions, mocks, output_paths, plans

SOME = settings(max_examples=100, deadline=None)


@pytest.mark.slow
@SOME
@given(contexts())
def test_contexts_are_valid(messages: list[Any]) -> None:
    Context.of(messages)


@pytest.mark.slow
@SOME
@given(expressions(invalid=False))
def test_valid_expressions_parse(text: str) -> None:
    parse_input(text)


@SOME
@given(output_paths())
def test_output_paths_parse(text: str) -> None:
    parse_output(text)


@pytest.mark.slow
@SOME
@given(plans())
def test_plans_compile_without_races_and_mock_every_tool(plan: dict[str, Any]) -> None:
    compiled = compile_plan(plan["plan"], context=plan["context"], instances=plan["instances"])
    assert compiled.ok, [d.message for d in compiled.errors]
    assert not {d.code for d in compiled.diagnostics} & {"write-race", "scope-race"}
    assert {c["_tool"] for c in plan["plan"]} == set(plan["mocks"])
    result = dry_run(compiled, mocks=plan["mocks"])
    assert result.status == "completed"
    for call in result.calls:
        event(f"a call {call.outcome}")


@pytest.mark.slow
@SOME
@given(plans(wild=True))
def test_wild_plans_have_compile_errors_sometimes(plan: dict[str, Any]) -> None:
    compiled = compile_plan(plan["plan"], context=plan["context"], instances=plan["instances"])
    event("errors" if not compiled.ok else "no errors")


@pytest.mark.slow
@SOME
@given(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, min_size=1).flatmap(
    lambda tools: st.tuples(st.just(tools), mocks(tools))))
def test_mocks_give_one_valid_mock_per_tool(drawn: tuple[list[str], dict[str, Any]]) -> None:
    tools, table = drawn
    assert sorted(table) == sorted(tools)
    dry_run([{"_tool": t} for t in tools], mocks=table)  # MockError if one were malformed
