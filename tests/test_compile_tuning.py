"""What makes compiling fast changes nothing a compile says (compiler/plan.py, reading.py,
validation.py, shape.py): the per-plan memo of literal checks and prescribed
meta-properties; and ``compile_plan`` leaves the garbage collector alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.compiler.conform import literal_param_errors
from obelisk.compiler.plan import compile_plan
from obelisk.compiler.reading import prescribed_meta
from obelisk.compiler.tools import Tool, ToolError, ToolRegistry
from obelisk.core.plain import thaw
from obelisk.core.values import freeze

# -- literal checks, one property at a time and memoised ---------------------------------

SPLIT = {  # the top level checks only type, properties and required: checked by property
    "type": "object", "description": "splittable",
    "properties": {
        "_tool": {"type": "string", "const": "pay"},
        "_scope": {"type": "integer"},
        "amount": {"type": "number", "maximum": -1},
        "count": {"type": "integer", "minimum": 0},
        "flag": {"type": "boolean"},
        "code": {"const": "†x"},
        "name": {"type": "string", "maxLength": 3},
        "never": False,
        "tags": {"type": "array", "items": {"type": "string"}},
        "one": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "item": {"$ref": "#/$defs/item"},
    },
    "$defs": {"item": {"type": "object", "required": ["id"]}},
    "required": ["amount"],
}
WHOLE = {**SPLIT, "additionalProperties": False}  # checked as a whole, as before

scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(
    [0.0, -0.0, 1.0, 1.5, -1.0, "", "ab", "abcd", "†x", "†input.a", "\\†x", "_"]))
value = st.recursive(scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["id", "x"]), inner,
                                                 max_size=2)), max_leaves=5)
call = st.dictionaries(st.sampled_from(
    ["_tool", "_scope", "_outputPath", "amount", "count", "flag", "code", "name", "never",
     "tags", "one", "item", "extra"]), value, max_size=6)

TOOLS = [Tool.of(SPLIT), Tool.of(WHOLE)]
MEMO: dict[Any, Any] = {}  # shared by every example, as one plan's calls share it


def test_only_a_plain_top_level_is_checked_by_property() -> None:
    assert TOOLS[0]._shape.split is not None  # noqa: SLF001
    assert TOOLS[1]._shape.split is None  # noqa: SLF001


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(call)
def test_memoised_literal_checks_equal_the_whole_call_check(raw: dict[str, Any]) -> None:
    for tool in TOOLS:
        expected = literal_param_errors(tool, raw)
        assert literal_param_errors(tool, raw, MEMO) == expected
        members: dict[str, Any] = {}
        frozen = freeze(raw, members=members)  # read as thaw(frozen): keys sorted, as before
        assert literal_param_errors(tool, frozen, MEMO) == literal_param_errors(tool, thaw(frozen))
        assert literal_param_errors(tool, members, MEMO) == literal_param_errors(tool, thaw(frozen))


@pytest.mark.parametrize(("first", "second"), [
    (1, True), (True, 1), (0, 0.0), (0.0, -0.0), (1.0, 1), (None, False), ("1", 1),
])
def test_the_memo_keeps_equal_values_of_other_types_apart(first: Any, second: Any) -> None:
    memo: dict[Any, Any] = {}
    for name in ("amount", "count", "flag", "name", "one"):
        for v in (first, second):
            got = literal_param_errors(TOOLS[0], {"amount": 0, name: v}, memo)
            assert got == literal_param_errors(TOOLS[0], {"amount": 0, name: v})


def test_a_reference_against_a_false_schema_is_still_an_error() -> None:
    got = literal_param_errors(TOOLS[0], {"amount": -2, "never": "†state.x"}, {})
    assert got == literal_param_errors(TOOLS[0], {"amount": -2, "never": "†state.x"}) != []


def test_prescribed_meta_is_the_same_with_a_memo() -> None:
    tool = Tool.of({"type": "object", "properties": {
        "_tool": {"const": "t"}, "_outputPath": {"const": "†state.x"},
        "_outputMethod": {"default": "merge"}}})
    memo: dict[Any, Any] = {}
    for written in ({}, {"_outputPath": "†state.y"}, {"_outputMethod": "push"}):
        frozen = freeze({"_tool": "t", **written})
        assert prescribed_meta(frozen, tool, memo) == prescribed_meta(frozen, tool)
    assert prescribed_meta(freeze({}), None, memo) == prescribed_meta(freeze({}), None) == {}


# -- the collector ------------------------------------------------------------------------


@pytest.fixture
def thresholds() -> Iterator[None]:
    before = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield
    gc.set_threshold(*before[0])
    (gc.enable if before[1] else gc.disable)()


class Spy:
    """A context (a list of messages) that notes the collector's state when read."""

    def __init__(self) -> None:
        self.seen: list[tuple[bool, tuple[int, int, int], int]] = []

    def __iter__(self) -> Iterator[Any]:
        self.seen.append((gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()))
        return iter(())


@pytest.mark.usefixtures("thresholds")
def test_compiling_leaves_the_collector_alone() -> None:
    # compile_plan is pure: it neither disables, re-tunes nor freezes the collector
    # (the command line and bench/ tune it around a compile: obelisk.gc_tuned).
    spy = Spy()
    compile_plan([{"_tool": "a", "x": f"†state.s{i}"} for i in range(200)], context=spy)
    assert spy.seen == [(True, (700, 10, 10), 0)]
    assert gc.isenabled() and gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0
    with pytest.raises(ToolError):
        compile_plan([{"_tool": "a"}], tools=[{"type": "object"}])  # a tool without a name
    assert gc.isenabled() and gc.get_threshold() == (700, 10, 10)


@pytest.mark.usefixtures("thresholds")
def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    spy = Spy()
    compile_plan([{"_tool": "a"}], context=spy)
    assert spy.seen == [(False, (700, 10, 10), 0)] and not gc.isenabled()


@pytest.mark.slow
def test_what_a_compile_leaves_for_the_collector_is_collected() -> None:
    # Errors of lark and jsonschema hold reference cycles (a traceback's frames, an
    # anyOf error's context): with the collector left on, they are collected as any
    # program's are; nothing of them is kept beyond the diagnostics.
    plan = [{"_tool": "a", "x": f"†state.a{i}", "y": bad, "z": "lit", "_outputPath": bad}
            for i in range(20) for bad in ("†a |", "(†a", "'x'", "†a.", '†a."\\q"', "†a &&")]
    tools = ToolRegistry.of([SPLIT, WHOLE | {"properties": {
        "_tool": {"const": "a"}, "z": {"anyOf": [{"type": "integer"}]}}}])
    compile_plan(plan[:12], tools=tools)  # what is made once (caches) is made here
    gc.collect()
    compiled = compile_plan(plan, tools=tools)
    assert len(compiled.diagnostics) >= 240
    gc.collect()
    assert gc.collect() == 0  # nothing left over that a second pass would find
