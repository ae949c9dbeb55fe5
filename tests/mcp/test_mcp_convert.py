"""MCP tools as obelisk tools: schemas, references, refusals, and the hints' policy."""

from __future__ import annotations

import pytest

from obelisk import Tool, compile_plan
from obelisk.mcp import McpToolError, tool_of
from obelisk.mcp.convert import policy_of

INPUT = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def entry(**fields: object) -> dict[str, object]:
    return {"name": "weather", "description": "The weather.", "inputSchema": INPUT, **fields}


def test_a_tool_becomes_a_schema_with_its_name_parameters_and_output() -> None:
    tool = tool_of(entry(outputSchema={"type": "object", "properties": {
        "temp": {"type": "number"}}}), "srv", "w")
    assert tool.name == "w.weather" and tool.remote == "weather" and tool.server == "srv"
    assert tool.schema["properties"]["_tool"] == {"type": "string", "const": "w.weather"}
    assert tool.schema["properties"]["city"] == {"type": "string"}
    assert tool.schema["required"] == ["city"]
    assert tool.schema["description"] == "The weather."
    assert tool.schema["properties"]["_output"]["properties"]["temp"] == {"type": "number"}
    Tool.of(tool.schema)  # obelisk accepts it


def test_the_output_schema_types_references_into_results() -> None:
    tool = tool_of(entry(outputSchema={"type": "object", "properties": {
        "temp": {"type": "number"}}}), "srv", None)
    shout = tool_of({"name": "shout", "inputSchema": {"type": "object", "properties": {
        "text": {"type": "string"}}}}, "srv", None)
    plan = compile_plan([{"_tool": "weather", "city": "Paris", "_outputPath": "†state.w"},
                         {"_tool": "shout", "text": "†state.w.temp"}],
                        tools=[tool.schema, shout.schema])
    assert [d.code for d in plan.diagnostics] == ["type-mismatch"]


def test_refs_into_defs_are_inlined_and_recursion_is_cut() -> None:
    tool = tool_of({"name": "t", "inputSchema": {
        "type": "object", "properties": {"p": {"$ref": "#/$defs/P"}},
        "$defs": {"P": {"type": "object", "properties": {
            "x": {"type": "integer"}, "next": {"$ref": "#/$defs/P"}}}}},
        "outputSchema": {"$ref": "#/definitions/O", "definitions": {"O": {"type": "string"}}}},
        "s", None)
    p = tool.schema["properties"]["p"]
    assert p["properties"]["x"] == {"type": "integer"}
    assert p["properties"]["next"] == {}  # the loop is cut where it closes
    assert "$defs" not in tool.schema
    assert tool.schema["properties"]["_output"] == {"type": "string"}


@pytest.mark.parametrize(("schema", "message"), [
    ({"type": "array", "items": {}}, "its inputSchema has type \"array\""),
    ({"type": "object", "properties": {"_output": {}}}, "'_output' has the name of an obelisk"),
    ({"type": "object", "properties": {"p": {"$ref": "https://x/p.json"}}},
     "points outside the schema"),
    ({"type": "object", "properties": {"p": {"$ref": "#/$defs/missing"}}}, "does not resolve"),
    ({"type": "object", "properties": {"p": {"type": "strng"}}}, "not a usable schema"),
])
def test_a_tool_obelisk_cannot_use_is_refused_with_its_name(schema: object,
                                                             message: str) -> None:
    with pytest.raises(McpToolError) as caught:
        tool_of({"name": "bad", "inputSchema": schema}, "srv", None)
    assert "server srv: tool 'bad'" in str(caught.value) and message in str(caught.value)


# (annotations, overrides) -> (read_only, destructive, at_most_once)
POLICIES = [
    (None, None, (False, True, True)),  # the MCP spec's defaults
    ({"readOnlyHint": True}, None, (True, False, False)),
    ({"destructiveHint": False}, None, (False, False, True)),
    ({"destructiveHint": False, "idempotentHint": True}, None, (False, False, False)),
    ({"readOnlyHint": True, "destructiveHint": True}, None, (True, False, False)),
    ({"readOnlyHint": "yes"}, None, (False, True, True)),  # not a boolean: the default
    ({"destructiveHint": True}, {"destructiveHint": False}, (False, False, True)),
    ({"readOnlyHint": True}, {"readOnlyHint": False}, (False, True, True)),
]


@pytest.mark.parametrize(("annotations", "overrides", "expected"), POLICIES)
def test_the_hints_set_the_policy(annotations: dict[str, object] | None,
                                  overrides: dict[str, bool] | None,
                                  expected: tuple[bool, bool, bool]) -> None:
    policy = policy_of(annotations, overrides)
    assert (policy.read_only, policy.destructive, policy.at_most_once) == expected


def test_a_tool_that_is_not_idempotent_is_at_most_once_on_resume() -> None:
    assert tool_of(entry(), "s", None).schema["x-obelisk-at-most-once"] is True
    idempotent = tool_of(entry(annotations={"idempotentHint": True}), "s", None)
    assert "x-obelisk-at-most-once" not in idempotent.schema
    sources = dict(idempotent.policy.source)
    assert sources["idempotentHint"] == "server" and sources["readOnlyHint"] == "default"
