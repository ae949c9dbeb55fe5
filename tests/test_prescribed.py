"""A tool that prescribes a meta-property (a ``const`` or ``default`` in its schema): a call
that leaves it out takes it, as if it had written it; ``_call`` stays the call as written."""

from __future__ import annotations

from typing import Any

import pytest

from obelisk import compile_plan
from obelisk.compiler.reading import PRESCRIBABLE, prescribed_meta
from obelisk.compiler.tools import Tool
from obelisk.core.plain import thaw
from obelisk.core.values import freeze
from obelisk.interpreters.machine import advance, begin, complete
from obelisk.interpreters.outcomes import Returned


def tool(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"_tool": {"const": "t"}, **props},
            "required": ["_tool"]}


# (the meta-property's schema, the call's own value or None, what the call takes)
TABLE: list[tuple[str, dict[str, Any], Any, Any]] = [
    ("_outputPath", {"const": "†state.x"}, None, "†state.x"),
    ("_outputPath", {"default": "†state.x"}, None, "†state.x"),
    ("_outputPath", {"default": "†state.x"}, "†state.y", None),  # written: kept as written
    ("_outputMethod", {"const": "push"}, None, "push"),
    ("_scopes", {"default": ["user"]}, None, ["user"]),
    ("_delegate", {"const": "helper"}, None, "helper"),
    ("_outputPath", {"type": "string"}, None, None),  # neither const nor default
    ("_outputPath", {"const": "†state.x", "default": "†state.y"}, None, "†state.x"),
    ("_instance", {"const": "①"}, None, None),  # not one the tool may prescribe
]


@pytest.mark.parametrize(("name", "schema", "given", "taken"), TABLE)
def test_prescribed_meta(name: str, schema: dict[str, Any], given: Any, taken: Any) -> None:
    call: dict[str, Any] = {"_tool": "t"} if given is None else {"_tool": "t", name: given}
    found = thaw(prescribed_meta(freeze(call), Tool.of(tool(**{name: schema}))))
    assert found == ({} if taken is None else {name: taken})


def test_the_four_prescribable_names() -> None:
    assert PRESCRIBABLE == ("_outputPath", "_outputMethod", "_scopes", "_delegate")


def test_a_prescribed_output_path_writes_and_records_the_call_as_written() -> None:
    weather = tool(_outputPath={"const": "†state.weather"})
    plan = compile_plan([{"_tool": "t"}, {"_tool": "u", "w": "†state.weather"}],
                        tools=[weather, {**tool(w={}), "properties": {
                            "_tool": {"const": "u"}, "w": {}}}])
    assert plan.ok and plan.successors[0] == (1,)
    assert plan.calls[0] == freeze({"_tool": "t"})
    state, ready = advance(begin(plan))
    assert ready[0].call == {"_tool": "t", "_outputPath": "†state.weather"}  # as if written
    state = complete(state, 0, Returned("rain"), "2025-10-26T12:00:00Z")
    message = state.context.messages[-1]
    assert message["_outputPath"] == "†state.weather"
    assert thaw(message["_call"]) == {"_tool": "t"}  # the call as written


def test_a_prescribed_scope_gives_the_scoped_context() -> None:
    plan = compile_plan([{"_tool": "t"}], tools=[tool(_scopes={"const": ["user"]})],
                        context=[{"type": "data", "kind": "user", "data": {"name": "Ada"}}])
    _, ready = advance(begin(plan))
    assert thaw(ready[0].context.value("user", ())) == {"name": "Ada"}


def test_a_value_the_const_forbids_is_a_param_schema_error() -> None:
    plan = compile_plan([{"_tool": "t", "_outputMethod": "set"}],
                        tools=[tool(_outputMethod={"const": "push"})])
    assert [(d.code, d.pointer) for d in plan.errors] == [("param-schema", "/_outputMethod")]
