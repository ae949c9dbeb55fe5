"""compiler/plan.py: compiling past invalid calls (``CompiledPlan.invalid``).

Every call that is a JSON object gets its node(s) whatever its errors, and ``invalid``
maps each node an error is about to those errors; the good calls' nodes and edges do not
change when a bad call is put beside them.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.compiler import compile_plan
from obelisk.compiler.diagnostics import CycleDetails

TOOLS = [
    {"type": "object", "properties": {"_tool": {"const": "step"}, "x": {},
                                      "n": {"type": "integer"}}},
    {"type": "object", "properties": {"_tool": {"const": "typed"}, "n": {"type": "integer"}}},
]

#: Two good calls: the second reads what the first writes.
GOOD: list[dict[str, Any]] = [
    {"_tool": "step", "x": "a", "_outputPath": "†state.a"},
    {"_tool": "step", "x": "†state.a", "_outputPath": "†state.b"},
]

#: (a bad call put after GOOD, the codes of its errors). None of them touches GOOD's paths.
BAD: list[tuple[Any, set[str]]] = [
    ({"_tool": "nope", "x": 1}, {"unknown-tool"}),
    ({"x": 1}, {"unknown-tool"}),
    ({"_tool": "step", "n": "three"}, {"param-schema"}),
    ({"_tool": "step", "x": "†state.(", "_outputPath": "†state.c"}, {"syntax"}),
    ({"_tool": "step", "_outputPath": "†state."}, {"syntax"}),
    ({"_tool": "step", "_outputPath": 3}, {"syntax"}),
    ({"_tool": "step", "_outputPath": "†tool.c"}, {"invalid-output-target"}),
    ({"_tool": "step", "_outputMethod": "add", "_outputPath": "†state.c"},
     {"invalid-output-method"}),
    ({"_tool": "step", "_scopes": "state"}, {"invalid-meta"}),
    ({"_tool": "step", "_instance": 3}, {"invalid-meta"}),
    ({"_tool": "step", "x": "†state.missing"}, {"dangling-reference"}),
    ({"_tool": "typed", "n": "†state.a"}, set()),  # state.a's type is unknown: no error
]


@pytest.mark.parametrize(("bad", "codes"), BAD)
def test_a_bad_call_gets_its_node_and_is_marked_invalid(bad: Any, codes: set[str]) -> None:
    plan = compile_plan([*GOOD, bad], tools=TOOLS)
    assert len(plan.nodes) == 3
    bad_node = plan.nodes[2]
    assert bad_node.index == 2
    expected = {2} if codes else set()
    assert set(plan.invalid) == expected
    assert {d.code for d in plan.invalid.get(2, ())} == codes
    assert all(d.is_error and d.call == 2 for d in plan.invalid.get(2, ()))


@pytest.mark.parametrize(("bad", "codes"), BAD)
def test_a_bad_call_leaves_the_good_calls_alone(bad: Any, codes: set[str]) -> None:
    alone = compile_plan(GOOD, tools=TOOLS)
    beside = compile_plan([*GOOD, bad], tools=TOOLS)
    assert beside.nodes[:2] == alone.nodes
    assert [e for e in beside.edges if e.writer < 2 and e.reader < 2] == list(alone.edges)
    assert not alone.invalid


def test_a_call_that_is_not_an_object_has_no_node() -> None:
    plan = compile_plan([*GOOD, 3, {"_tool": "step"}], tools=TOOLS)
    assert [n.index for n in plan.nodes] == [0, 1, 3]
    assert [d.code for d in plan.diagnostics if d.call == 2] == ["invalid-call"]
    assert set(plan.invalid) == set()  # no node is about call 2


#: (plan, instances, context, the invalid node ids)
TABLE: list[tuple[list[Any], bool, list[Any], set[int]]] = [
    # a cycle marks every node in it, and only those
    ([{"_tool": "step", "x": "†state.b", "_outputPath": "†state.a"},
      {"_tool": "step", "x": "†state.a", "_outputPath": "†state.b"},
      {"_tool": "step", "x": "†state.a", "_outputPath": "†state.c"}], False, [], {0, 1}),
    # a warning (a write race) makes nothing invalid
    ([{"_tool": "step", "_outputPath": "†state.a"},
      {"_tool": "step", "_outputPath": "†state.a"}], False, [], set()),
    # a call's own error marks every one of its instance nodes
    ([{"_tool": "nope"}, {"_tool": "step"}], True,
     [{"type": "data", "_instance": "i1", "v": 1}, {"type": "data", "_instance": "i2", "v": 2}],
     {0, 1}),
    # an error about one instance marks only that instance's node
    ([{"_tool": "step", "_instance": "i1", "_outputPath": "†state.v"},
      {"_tool": "step", "x": "†state.v"}], True,
     [{"type": "data", "_instance": "i1", "v": 1}, {"type": "data", "_instance": "i2", "v": 2}],
     {2}),
]


@pytest.mark.parametrize(("plan", "instances", "context", "invalid"), TABLE)
def test_invalid_nodes(plan: list[Any], instances: bool, context: list[Any],
                       invalid: set[int]) -> None:
    compiled = compile_plan(plan, tools=TOOLS, context=context, instances=instances)
    assert set(compiled.invalid) == invalid
    for diagnostics in compiled.invalid.values():
        assert diagnostics and all(d.is_error for d in diagnostics)
        assert all(d in compiled.diagnostics for d in diagnostics)


def test_the_cycle_diagnostic_carries_its_edges() -> None:
    plan = compile_plan(TABLE[0][0], tools=TOOLS)
    (cycle,) = [d for d in plan.diagnostics if d.code == "cycle"]
    assert isinstance(cycle.details, CycleDetails)
    assert cycle.details.nodes == (0, 1)
    assert {(s.writer, s.reader, s.written, s.read) for s in cycle.details.steps} == {
        (0, 1, "†state.a", "†state.a"), (1, 0, "†state.b", "†state.b")}
    assert plan.invalid[0] == plan.invalid[1] == (cycle,)


def test_a_good_plan_has_no_invalid_node() -> None:
    assert not compile_plan(GOOD, tools=TOOLS).invalid


@st.composite
def mixed_plans(draw: st.DrawFn) -> list[Any]:
    """Good calls in a chain (each may read an earlier one's path), bad calls from
    :data:`BAD` and calls that are not objects, in any order."""
    plan: list[Any] = []
    for i in range(draw(st.integers(0, 8))):
        match draw(st.sampled_from(("good", "good", "bad", "not-an-object"))):
            case "good":
                call: dict[str, Any] = {"_tool": "step", "_outputPath": f"†state.g{i}"}
                if i and draw(st.booleans()):
                    call["x"] = f"†state.g{draw(st.integers(0, i - 1))}"
                plan.append(call)
            case "bad":
                plan.append(draw(st.sampled_from([bad for bad, _ in BAD])))
            case _:
                plan.append(draw(st.sampled_from((3, "call", None, []))))
    return plan


@settings(max_examples=150, deadline=None)
@given(mixed_plans())
def test_every_object_call_has_a_node_and_invalid_matches_the_errors(plan: list[Any]) -> None:
    compiled = compile_plan(plan, tools=TOOLS)
    objects = [i for i, call in enumerate(plan) if isinstance(call, dict)]
    assert [n.index for n in compiled.nodes] == objects
    erroneous = {d.call for d in compiled.diagnostics if d.is_error}
    assert set(compiled.invalid) == {n.id for n in compiled.nodes if n.index in erroneous}
    for node_id, diagnostics in compiled.invalid.items():
        assert {d.call for d in diagnostics} == {compiled.nodes[node_id].index}
