"""compiler/tools.py: tool definitions, activity resolution, schema composition, validation
of literal parameters and results, and schema types (seeds 002 and 004, SEMANTICS §5-7)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from obelisk.compiler.compose import compose_calls_schema
from obelisk.compiler.conform import literal_param_errors, validate_output, validate_params
from obelisk.compiler.schemas import schema_types_at, types_compatible
from obelisk.compiler.tools import Tool, ToolRegistry, resolve_activity
from obelisk.core.errors import ObeliskError, ToolError
from obelisk.core.plain import thaw
from obelisk.core.values import freeze

# The seeds' two tools (002: sentimentAnalysis; 004: weatherCheck), in English.
SENTIMENT: dict[str, Any] = {
    "type": "object",
    "description": "Analyses the sentiment of a text",
    "properties": {
        "_tool": {"type": "string", "const": "sentimentAnalysis"},
        "text": {"type": "string", "description": "The text to analyse"},
        "_output": {
            "type": "object",
            "properties": {"sentiment": {"type": "string"}, "confidence": {"type": "number"}},
        },
    },
}

WEATHER: dict[str, Any] = {
    "type": "object",
    "description": "Gets the current weather for a location.",
    "properties": {
        "_tool": {"type": "string", "const": "weatherCheck"},
        "location": {"type": "string"},
        "_output": {
            "type": "object",
            "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
            "required": ["temperature", "conditions"],
        },
    },
    "required": ["location"],
}


def tool(name: str = "t", required: list[str] | None = None, top: dict[str, Any] | None = None,
         **properties: Any) -> dict[str, Any]:
    """A tool schema named ``name`` with the given properties (after ``_tool``)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"_tool": {"type": "string", "const": name}, **properties},
    }
    if required is not None:
        schema["required"] = required
    schema.update(top or {})
    return schema


# -- definitions ------------------------------------------------------------------------

# (tools, index, pointer, text the message contains)
REGISTRY_ERRORS: list[tuple[Any, int | None, str, str]] = [
    ({"_tool": "x"}, None, "", "tools are given as a list of schemas, not an object"),
    ("weatherCheck", None, "", "not a string"),
    ([1], 0, "", "a tool must be a JSON object (a JSON Schema for its calls), not an integer"),
    ([WEATHER, ["x"]], 1, "", "not an array"),
    ([{"type": "object"}], 0, "/properties/_tool", "the tool has no name"),
    ([tool(), {"properties": {"_tool": {"type": "string"}}}], 1, "/properties/_tool",
     "properties._tool has no const"),
    ([{"properties": {"_tool": {"enum": ["a"]}}}], 0, "/properties/_tool/enum",
     'the name must be given with "const", not a one-value "enum"'),
    ([{"properties": {"_tool": {"const": ""}}}], 0, "/properties/_tool/const",
     "must be a non-empty string, not \"\""),
    ([{"properties": {"_tool": {"const": 7}}}], 0, "/properties/_tool/const",
     "must be a non-empty string, not 7"),
    ([{"properties": {"_tool": True}}], 0, "/properties/_tool", "has no const"),
    ([tool(x={"type": "strin"})], 0, "/properties/x/type",
     "not a valid JSON Schema (Draft 2020-12): 'strin' is not valid under any of the given "
     "schemas; a type is one of array"),
    ([tool(required="x")], 0, "/required", "'x' is not of type 'array'"),
    ([tool(x={"minLength": -1})], 0, "/properties/x/minLength", "-1 is less than the minimum"),
    ([tool(x={"pattern": "("})], 0, "/properties/x/pattern", "is not a 'regex'"),
    ([tool(_output={"type": "objec"})], 0, "/properties/_output/type", "not a valid JSON Schema"),
    ([{"properties": []}], 0, "/properties", "[] is not of type 'object'"),
    ([tool(top={"type": "string"})], 0, "/type", 'its "type" is "string"; use "type": "object"'),
    ([tool(top={"_activity": 3})], 0, "/_activity",
     '"_activity" names an activity and must be a string, not 3'),
    ([tool(_activity={"const": ["a"]})], 0, "/properties/_activity/const",
     "properties._activity.const names an activity and must be a string"),
    ([tool(_activity={"const": "b"}, top={"_activity": "a"})], 0, "/_activity",
     'two different activities: "_activity" is "a" but properties._activity.const is "b"'),
    ([tool(x={"$ref": "#/$defs/nope"})], 0, "/properties/x/$ref",
     '$ref "#/$defs/nope" does not resolve'),
    ([tool(x={"$ref": "https://example.com/schema.json"})], 0, "/properties/x/$ref",
     "obelisk resolves references only inside the tool"),
    ([tool(x={"const": {1, 2}})], 0, "/properties/x/const", "the tool is not JSON: a set is not JSON"),
    ([tool(x={"maximum": float("nan")})], 0, "/properties/x/maximum", "nan is not a JSON number"),
    ([{"properties": {"_tool": {"const": "a"}}, 1: "x"}], 0, "", "object key 1 is not a string"),
]


@pytest.mark.parametrize(("tools", "index", "pointer", "text"), REGISTRY_ERRORS)
def test_registry_errors(tools: Any, index: int | None, pointer: str, text: str) -> None:
    with pytest.raises(ToolError) as info:
        ToolRegistry.of(tools)
    error = info.value
    assert (error.index, error.pointer) == (index, pointer)
    assert text in error.reason
    assert isinstance(error, ObeliskError) and isinstance(error, ValueError)
    where = "tool" if index is None else f"tool {index}"
    assert str(error).startswith(where)
    if pointer:
        assert f"at {pointer}: " in str(error)


def test_error_text_names_tool_index_and_pointer() -> None:
    with pytest.raises(ToolError) as info:
        ToolRegistry.of([SENTIMENT, tool("broken", x={"type": "strin"})])
    assert str(info.value) == (
        "tool 1 (broken) at /properties/x/type: not a valid JSON Schema (Draft 2020-12): "
        "'strin' is not valid under any of the given schemas; a type is one of array, "
        "boolean, integer, null, number, object, string, or a list of them")
    assert info.value.name == "broken"


def test_a_later_definition_replaces_an_earlier_one_in_its_place() -> None:
    # The amended rule (tool order): two definitions of one name are no longer refused.
    newer = {**WEATHER, "description": "A newer weather tool."}
    registry = ToolRegistry.of([WEATHER, SENTIMENT, newer])
    assert registry.names == ("weatherCheck", "sentimentAnalysis")
    weather = registry.get("weatherCheck")
    assert weather is not None and weather.to_json() == newer
    assert registry.positions == {"weatherCheck": 0, "sentimentAnalysis": 1}


def test_merged_puts_the_tools_passed_in_before_the_context_s() -> None:
    newer = {**WEATHER, "description": "From the context."}
    registry = ToolRegistry.merged([WEATHER, SENTIMENT], [newer])
    assert registry.names == ("weatherCheck", "sentimentAnalysis")
    weather = registry.get("weatherCheck")
    assert weather is not None and weather.to_json() == newer
    with pytest.raises(ToolError) as info:
        ToolRegistry.merged([WEATHER], [tool("broken", x={"type": "strin"})])
    assert info.value.index == 1  # counted over both lists, passed ones first


def test_single_tool_error_has_no_index() -> None:
    with pytest.raises(ToolError) as info:
        Tool.of({"type": "object"})
    assert info.value.index is None
    assert str(info.value).startswith("tool at /properties/_tool: the tool has no name")


def test_cached_errors_are_located_per_call() -> None:
    bad = tool(x={"type": "strin"})
    for index in (0, 1, 0):
        tools = [bad] if index == 0 else [SENTIMENT, bad]
        with pytest.raises(ToolError) as info:
            ToolRegistry.of(tools)
        assert info.value.index == index


def test_registry_basics() -> None:
    registry = ToolRegistry.of([SENTIMENT, WEATHER])
    assert registry.names == ("sentimentAnalysis", "weatherCheck")
    assert len(registry) == 2
    assert [t.name for t in registry] == ["sentimentAnalysis", "weatherCheck"]
    assert "weatherCheck" in registry and "nope" not in registry and 3 not in registry
    weather = registry.get("weatherCheck")
    assert weather is not None and registry.get("nope") is None
    assert weather.schema == freeze(WEATHER)
    assert weather.to_json() == WEATHER
    assert ToolRegistry.of([]).names == () and len(ToolRegistry()) == 0


def test_registry_accepts_tools_frozen_schemas_and_generators() -> None:
    weather = Tool.of(WEATHER)
    registry = ToolRegistry.of(s for s in [freeze(SENTIMENT), weather])
    assert registry.names == ("sentimentAnalysis", "weatherCheck")
    assert registry.get("weatherCheck") == weather
    assert registry.get("sentimentAnalysis") == Tool.of(SENTIMENT)


def test_tool_is_a_frozen_value() -> None:
    schema = copy.deepcopy(WEATHER)
    weather = Tool.of(schema)
    schema["properties"]["location"]["type"] = "number"  # the caller's dict, not the tool's
    assert weather.to_json() == WEATHER
    weather.to_json()["properties"].clear()  # a copy
    assert weather.to_json() == WEATHER
    out = weather.output_schema
    assert out is not None
    out.clear()
    assert weather.output_schema == WEATHER["properties"]["_output"]
    with pytest.raises(AttributeError):
        weather.name = "x"  # type: ignore[misc]
    assert hash(weather) == hash(Tool.of(copy.deepcopy(WEATHER)))


def test_order_of_keys_is_kept() -> None:
    schema = tool(zeta={"type": "string"}, _output={"type": "object"}, alpha={"type": "number"},
                  _note={"type": "string"}, mid={"type": "boolean"})
    t = Tool.of(schema)
    assert t.parameters == ("zeta", "alpha", "mid")
    assert t.meta_fields == ("_tool", "_output", "_note")
    assert list(t.to_json()["properties"]) == list(schema["properties"])


@pytest.mark.parametrize(("schema", "explicit"), [
    (WEATHER, None),
    (tool(top={"_activity": "fetchWeather"}), "fetchWeather"),
    (tool(_activity={"type": "string", "const": "fetchWeather"}), "fetchWeather"),
    (tool(_activity={"const": "a"}, top={"_activity": "a"}), "a"),
    (tool(top={"_activity": ""}), None),  # empty: not explicit (seed 004, rule 1)
    (tool(_activity={"const": ""}), None),
    (tool(_activity={"type": "string"}), None),  # declared but not fixed
])
def test_explicit_activity(schema: dict[str, Any], explicit: str | None) -> None:
    assert Tool.of(schema).explicit_activity == explicit


def test_output_schema() -> None:
    assert Tool.of(WEATHER).output_schema == WEATHER["properties"]["_output"]
    assert Tool.of(tool()).output_schema is None
    assert Tool.of(tool(_output=True)).output_schema == {}
    assert Tool.of(tool(_output=False)).output_schema == {"not": {}}


# -- activities ---------------------------------------------------------------------------

# (tool, registered activities, resolved activity)
ACTIVITIES: list[tuple[dict[str, Any], set[str], str]] = [
    (WEATHER, {"weatherCheck"}, "weatherCheck"),  # same-name convention
    (WEATHER, set(), ""),  # latent
    (WEATHER, {"other"}, ""),
    (SENTIMENT, {"weatherCheck"}, ""),
    (tool("w", top={"_activity": "fetch"}), {"w"}, "fetch"),  # explicit wins over the name
    (tool("w", top={"_activity": "fetch"}), set(), "fetch"),  # even when not registered
    (tool("w", _activity={"const": "fetch"}), {"w", "fetch"}, "fetch"),
    (tool("w", top={"_activity": ""}), {"w"}, "w"),  # empty is not explicit
    (tool("w", top={"_activity": ""}), set(), ""),
]


@pytest.mark.parametrize(("schema", "names", "expected"), ACTIVITIES)
def test_resolve_activity(schema: dict[str, Any], names: set[str], expected: str) -> None:
    assert resolve_activity(Tool.of(schema), names) == expected


def test_resolve_activity_takes_any_collection() -> None:
    weather = Tool.of(WEATHER)
    assert resolve_activity(weather, {"weatherCheck": lambda call: None}) == "weatherCheck"
    assert resolve_activity(weather, ("weatherCheck",)) == "weatherCheck"
    assert resolve_activity(weather, frozenset()) == ""


# -- composition -----------------------------------------------------------------------------

REASONING = {"type": "string", "description": "Why the agent makes this call."}

SEED_COMPOSED = {
    "type": "object",
    "properties": {
        "calls": {
            "type": "array",
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "description": "Analyses the sentiment of a text",
                        "properties": {
                            "_tool": {"type": "string", "const": "sentimentAnalysis"},
                            "_activity": {"type": "string", "const": ""},
                            "_reasoningForCall": REASONING,
                            "_output": SENTIMENT["properties"]["_output"],
                            "text": {"type": "string", "description": "The text to analyse"},
                        },
                    },
                    {
                        "type": "object",
                        "description": "Gets the current weather for a location.",
                        "properties": {
                            "_tool": {"type": "string", "const": "weatherCheck"},
                            "_activity": {"type": "string", "const": "weatherCheck"},
                            "_reasoningForCall": REASONING,
                            "_output": WEATHER["properties"]["_output"],
                            "location": {"type": "string"},
                        },
                        "required": ["location"],
                    },
                ]
            },
        }
    },
    "required": ["calls"],
}


def test_compose_seed_example() -> None:
    registry = ToolRegistry.of([SENTIMENT, WEATHER])
    composed = compose_calls_schema(registry, {"weatherCheck"})
    assert composed == SEED_COMPOSED
    # Order is part of the contract: json.dumps shows it.
    assert json.dumps(composed) == json.dumps(SEED_COMPOSED)
    Draft202012Validator.check_schema(composed)


def test_compose_meta_fields_first_in_order() -> None:
    schema = tool(
        "t", zeta={"type": "string"}, _output={"type": "object"}, alpha={"type": "number"},
        _note={"type": "string"}, _reasoningForCall={"type": "string", "maxLength": 200},
        required=["alpha", "_output"], top={"_activity": "run"},
    )
    branch = compose_calls_schema(ToolRegistry.of([schema]))["properties"]["calls"]["items"]["anyOf"][0]
    assert list(branch["properties"]) == [
        "_tool", "_activity", "_reasoningForCall", "_output", "_note", "zeta", "alpha"]
    assert branch["properties"]["_activity"] == {"type": "string", "const": "run"}
    assert branch["properties"]["_reasoningForCall"] == {"type": "string", "maxLength": 200}
    assert branch["required"] == ["alpha"]  # _output made optional
    assert "_activity" not in branch  # the top-level keyword is now properties._activity
    assert branch["properties"]["_tool"] == {"type": "string", "const": "t"}


@pytest.mark.parametrize(("required", "expected"), [
    (["_output"], None),  # nothing left: the keyword goes
    (["location", "_output"], ["location"]),
    (["location"], ["location"]),
    (None, None),
])
def test_compose_output_is_optional(required: list[str] | None, expected: list[str] | None) -> None:
    schema = tool(location={"type": "string"}, _output={"type": "number"}, required=required)
    branch = compose_calls_schema(ToolRegistry.of([schema]))["properties"]["calls"]["items"]["anyOf"][0]
    assert branch.get("required") == expected
    assert "_output" in branch["properties"]


def test_compose_activity_replaces_declared_property() -> None:
    schema = tool("t", _activity={"type": "string", "const": "x", "description": "d"})
    branch = compose_calls_schema(ToolRegistry.of([schema]))["properties"]["calls"]["items"]["anyOf"][0]
    assert branch["properties"]["_activity"] == {"type": "string", "const": "x"}


def test_compose_one_branch_per_tool_in_order() -> None:
    names = ["c", "a", "b"]
    registry = ToolRegistry.of([tool(n) for n in names])
    branches = compose_calls_schema(registry, {"a"})["properties"]["calls"]["items"]["anyOf"]
    assert [b["properties"]["_tool"]["const"] for b in branches] == names
    assert [b["properties"]["_activity"]["const"] for b in branches] == ["", "a", ""]


def test_compose_empty_registry() -> None:
    composed = compose_calls_schema(ToolRegistry.of([]))
    assert composed["properties"]["calls"] == {"type": "array", "maxItems": 0}
    Draft202012Validator.check_schema(composed)


def test_compose_is_plain_fresh_and_valid_for_llm_calls() -> None:
    registry = ToolRegistry.of([SENTIMENT, WEATHER])
    first = compose_calls_schema(registry)
    first["properties"].clear()
    assert compose_calls_schema(registry) == compose_calls_schema(registry)
    assert compose_calls_schema(registry)["properties"]
    assert thaw(freeze(compose_calls_schema(registry))) == compose_calls_schema(registry)
    validator = Draft202012Validator(compose_calls_schema(registry, ["weatherCheck"]))
    good = {"calls": [
        {"_tool": "weatherCheck", "_activity": "weatherCheck", "_reasoningForCall": "asked",
         "location": "Paris"},
        {"_tool": "sentimentAnalysis", "_activity": "", "text": "great",
         "_output": {"sentiment": "positive", "confidence": 0.9}},
    ]}
    assert validator.is_valid(good)
    assert not validator.is_valid({"calls": [{"_tool": "weatherCheck", "_activity": ""}]})


# -- literal parameters ----------------------------------------------------------------------

CHECKED = tool(
    "pay",
    amount={"type": "number"},
    currency={"type": "string", "enum": ["EUR", "USD"]},
    tags={"type": "array", "items": {"type": "string"}},
    address={"type": "object", "properties": {"city": {"type": "string"}},
             "required": ["city"], "additionalProperties": False},
    choice={"anyOf": [{"type": "integer"},
                      {"type": "object", "properties": {"x": {"type": "integer"}}}]},
    code={"const": "†x"},
    _output={"type": "object"},
    required=["amount", "_output"],
    top={"additionalProperties": False},
)

# (call, expected (pointer, message) pairs)
LITERAL: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
    ({"_tool": "pay", "amount": 5}, []),
    ({"amount": "x"}, [("/amount", "amount: 'x' is not of type 'number'")]),
    ({}, [("/amount", "missing required parameter 'amount'")]),
    ({"amount": 1, "currency": "GBP"},
     [("/currency", "currency: 'GBP' is not one of ['EUR', 'USD']")]),
    # references satisfy any schema, at the top level ...
    ({"amount": "†input.amount", "currency": "†state.currency"}, []),
    ({"amount": "†input.a || 5"}, []),
    # ... and nested inside arrays and objects
    ({"amount": 1, "tags": [1, "†input.tag", "b"]}, [("/tags/0", "tags.0: 1 is not of type 'string'")]),
    ({"amount": 1, "tags": ["†input.tag", 2]}, [("/tags/1", "tags.1: 2 is not of type 'string'")]),
    ({"amount": 1, "address": {"city": "†input.city"}}, []),
    ({"amount": 1, "choice": {"x": "†state.x"}}, []),  # an anyOf branch holding a reference
    ({"amount": 1, "tags": "†input.tags"}, []),
    # a required property must be present, whatever its value
    ({"amount": 1, "address": {}}, [("/address/city", "address: missing required property 'city'")]),
    ({"amount": 1, "address": {"city": 3, "zip": "x"}},
     [("/address/city", "address.city: 3 is not of type 'string'"),
      ("/address/zip", "address: unexpected property 'zip'")]),
    ({"amount": 1, "choice": {"x": "y"}},
     [("/choice", "choice: {'x': 'y'} is not valid under any of the given schemas")]),
    # additionalProperties: false refuses unknown parameters, not undeclared meta-properties
    ({"amount": 1, "extra": 1},
     [("/extra", "unexpected parameter 'extra': the schema does not declare it")]),
    ({"amount": 1, "_outputPath": "†state.receipt", "_outputMethod": "push",
      "_instance": "①", "_scopes": ["state"], "_reasoningForCall": "why", "_custom": 1}, []),
    # declared meta-properties are validated, as written (never resolved)
    ({"amount": 1, "_tool": "refund"}, [("/_tool", "_tool: 'pay' was expected")]),
    ({"amount": 1, "_output": 3}, [("/_output", "_output: 3 is not of type 'object'")]),
    ({"amount": 1, "_output": "†state.x"}, [("/_output", "_output: '†state.x' is not of type 'object'")]),
    ({"amount": 1, "_output": {}}, []),
    # _output is never required of a call, even when the tool lists it
    ({"amount": 1}, []),
    # an escaped \† is a literal string starting with †
    ({"amount": 1, "code": "\\†x"}, []),
    ({"amount": 1, "code": "\\†y"}, [("/code", "code: '†x' was expected")]),
    ({"amount": 1, "code": "x"}, [("/code", "code: '†x' was expected")]),
    # several errors, sorted by pointer then message
    ({"amount": True, "tags": [1, 2], "extra": None},
     [("/amount", "amount: True is not of type 'number'"),
      ("/extra", "unexpected parameter 'extra': the schema does not declare it"),
      ("/tags/0", "tags.0: 1 is not of type 'string'"),
      ("/tags/1", "tags.1: 2 is not of type 'string'")]),
]


@pytest.mark.parametrize(("call", "expected"), LITERAL)
def test_literal_param_errors(call: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    pay = Tool.of(CHECKED)
    assert literal_param_errors(pay, call) == expected
    assert literal_param_errors(pay, freeze(call)) == expected  # frozen calls too


SEED_CALLS: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
    ({"_tool": "weatherCheck", "location": "Paris", "_outputPath": "†state.weather"}, []),
    ({"_tool": "weatherCheck", "location": "†input.city"}, []),
    ({"_tool": "weatherCheck"}, [("/location", "missing required parameter 'location'")]),
    ({"_tool": "weatherCheck", "location": 75001},
     [("/location", "location: 75001 is not of type 'string'")]),
    ({"_tool": "weatherCheck", "location": "Paris",
      "_output": {"temperature": 21.5, "conditions": "sunny"}}, []),
    ({"_tool": "weatherCheck", "location": "Paris", "_output": {"temperature": "warm"}},
     [("/_output/conditions", "_output: missing required property 'conditions'"),
      ("/_output/temperature", "_output.temperature: 'warm' is not of type 'number'")]),
]


@pytest.mark.parametrize(("call", "expected"), SEED_CALLS)
def test_literal_param_errors_seed_weather(call: dict[str, Any],
                                           expected: list[tuple[str, str]]) -> None:
    assert literal_param_errors(Tool.of(WEATHER), call) == expected


# Keywords where a reference, counted as valid, could cause an error its value would avoid:
# they are skipped on values that hold a reference (the resolved call is validated at run time).
# (parameter schema, value, errors expected)
REFERENCE_AWARE: list[tuple[dict[str, Any], Any, list[tuple[str, str]]]] = [
    ({"not": {"properties": {"a": {"type": "string"}}}}, {"a": "†s.a"}, []),
    ({"not": {"properties": {"a": {"type": "string"}}}}, {"a": "x"},
     [("/p", "p: {'a': 'x'} should not be valid under {'properties': {'a': {'type': 'string'}}}")]),
    ({"oneOf": [{"properties": {"a": {"type": "string"}}},
                {"properties": {"a": {"type": "number"}}}]}, {"a": "†s.a"}, []),
    ({"oneOf": [{"properties": {"a": {"type": "string"}}},
                {"properties": {"a": {"type": "number"}}}]}, {"a": None},
     [("/p", "p: {'a': None} is not valid under any of the given schemas")]),
    ({"if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]}},
     {"kind": "†s.kind"}, []),
    ({"if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]}},
     {"kind": "a"}, [("/p/x", "p: missing required property 'x'")]),
    ({"const": {"a": 1}}, {"a": "†s.a"}, []),
    ({"enum": [[1, 2]]}, [1, "†s.two"], []),
    ({"enum": [[1, 2]]}, [1, 3], [("/p", "p: [1, 3] is not one of [[1, 2]]")]),
    ({"uniqueItems": True}, ["†s.a", "†s.a"], []),
    ({"uniqueItems": True}, [1, 1], [("/p", "p: [1, 1] has non-unique elements")]),
    ({"contains": {"type": "string"}, "maxContains": 1}, ["x", "†s.a"], []),
    ({"contains": {"type": "string"}, "maxContains": 1}, ["x", "y"],
     [("/p", "p: Too many items match the given schema (expected at most 1)")]),
    ({"contains": {"type": "string"}, "minContains": 2}, [1, "†s.a"],
     [("/p", "p: Too few items match the given schema (expected at least 2 but only 1 matched)")]),
]


@pytest.mark.parametrize(("schema", "value", "expected"), REFERENCE_AWARE)
def test_references_inside_composite_keywords(schema: dict[str, Any], value: Any,
                                              expected: list[tuple[str, str]]) -> None:
    t = Tool.of(tool(p=schema))
    got = literal_param_errors(t, {"p": value})
    assert got == expected


def test_long_values_are_elided() -> None:
    got = literal_param_errors(Tool.of(CHECKED), {"amount": "x" * 5000})
    [(pointer, message)] = got
    assert pointer == "/amount" and len(message) <= 300
    assert message.endswith("… is not of type 'number'")


def test_meta_named_in_required_counts_as_declared() -> None:
    t = Tool.of(tool(required=["_scope"]))
    assert literal_param_errors(t, {}) == [("/_scope", "missing required meta-property '_scope'")]
    assert literal_param_errors(t, {"_scope": 1}) == []
    closed = Tool.of(tool(required=["_scope"], top={"additionalProperties": False}))
    assert literal_param_errors(closed, {"_scope": 1}) == [  # what the schema says
        ("/_scope", "unexpected meta-property '_scope': the schema does not declare it")]


def test_schema_refs_inside_the_tool() -> None:
    t = Tool.of(tool(
        top={"$defs": {"money": {"type": "number", "minimum": 0}}},
        amount={"$ref": "#/$defs/money"},
        _output={"$ref": "#/$defs/money"},
    ))
    assert literal_param_errors(t, {"amount": -1}) == [
        ("/amount", "amount: -1 is less than the minimum of 0")]
    assert literal_param_errors(t, {"amount": "†input.a"}) == []
    assert validate_output(t, -1) == [("", "result: -1 is less than the minimum of 0")]


def test_deep_parameters_give_a_message_not_a_crash() -> None:
    deep: Any = 1
    for _ in range(500):
        deep = [deep]
    t = Tool.of(tool(x={"items": {"$ref": "#/properties/x"}, "type": ["array", "integer"]}))
    got = literal_param_errors(t, {"x": deep})
    assert got in ([], [("", "the value is nested too deeply to validate (or the schema's "
                             "$ref loops back on itself)")])


def test_schema_that_loops_gives_a_message_not_a_crash() -> None:
    t = Tool.of(tool(p={"$ref": "#/properties/p"}))
    [(pointer, message)] = literal_param_errors(t, {"p": 1})
    assert pointer == "" and "loops back on itself" in message


# -- resolved parameters and results (the interpreters' checks) ---------------------------------


@pytest.mark.parametrize(("call", "expected"), [
    ({"amount": 5}, []),
    ({"amount": "†input.amount"}, [("/amount", "amount: '†input.amount' is not of type 'number'")]),
    ({"amount": 1, "code": "†x"}, []),  # resolved: † is an ordinary character
    ({"amount": 1, "code": "\\†x"}, [("/code", "code: '†x' was expected")]),
    ({"amount": 1, "_outputPath": "†state.x"}, []),
    ({}, [("/amount", "missing required parameter 'amount'")]),
])
def test_validate_params(call: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    pay = Tool.of(CHECKED)
    assert validate_params(pay, call) == expected
    assert validate_params(pay, freeze(call)) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ({"temperature": 21.5, "conditions": "sunny"}, []),
    ({"temperature": 21, "conditions": "sunny", "extra": 1}, []),
    ({"temperature": "warm", "conditions": "sunny"},
     [("/temperature", "temperature: 'warm' is not of type 'number'")]),
    ({}, [("/conditions", "missing required property 'conditions'"),
          ("/temperature", "missing required property 'temperature'")]),
    ("sunny", [("", "result: 'sunny' is not of type 'object'")]),
])
def test_validate_output(value: Any, expected: list[tuple[str, str]]) -> None:
    weather = Tool.of(WEATHER)
    assert validate_output(weather, value) == expected
    assert validate_output(weather, freeze(value)) == expected


def test_mixed_plain_and_frozen_values() -> None:
    pay = Tool.of(CHECKED)
    call = {"amount": 1, "tags": [freeze(["a", 2])], "address": freeze({"city": 3})}
    assert validate_params(pay, {"amount": 1, "tags": freeze(["a", 2]), "address": {"city": 3}}) == [
        ("/address/city", "address.city: 3 is not of type 'string'"),
        ("/tags/1", "tags.1: 2 is not of type 'string'")]
    assert literal_param_errors(pay, call) == [
        ("/address/city", "address.city: 3 is not of type 'string'"),
        ("/tags/0", "tags.0: ['a', 2] is not of type 'string'")]


def test_validate_output_without_output_schema() -> None:
    assert validate_output(Tool.of(tool()), {"anything": [1]}) == []


# -- types ---------------------------------------------------------------------------------------

TYPED = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "opt": {"type": ["integer", "null"]},
        "c": {"const": 3},
        "e": {"enum": ["x", 1.5, None]},
        "any": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        "partly": {"oneOf": [{"type": "string"}, {"minimum": 1}]},
        "flags": {"type": "array", "items": {"type": "boolean"}},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
        "old": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "null"}},
        "ref": {"$ref": "#/$defs/x"},
        "map": {"type": "object", "additionalProperties": {"type": "number"}},
        "open": {"type": "object", "additionalProperties": True},
        "patterned": {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        "both": {"allOf": [{"type": ["string", "number"]}, {"type": "number"}]},
        "whole": {"type": "number", "const": 2},
        "never": {"type": "string", "const": 2},
        "untyped": {"description": "anything"},
        "deep": {"type": "object", "properties": {
            "x": {"type": "object", "properties": {"y": {"type": "null"}}}}},
        "union": {"anyOf": [
            {"type": "object", "properties": {"p": {"type": "string"}}},
            {"type": "object", "properties": {"p": {"type": "integer"}}}]},
        "guarded": {"type": "object", "properties": {"p": {"type": "string"}},
                    "anyOf": [{"required": ["p"]}, {"required": ["q"]}]},
        "byindex": {"type": "object", "properties": {"0": {"type": "boolean"}}},
    },
}

# (path, expected types or None for unknown)
TYPES_AT: list[tuple[tuple[str | int, ...], frozenset[str] | None]] = [
    ((), frozenset({"object"})),
    (("s",), frozenset({"string"})),
    (("opt",), frozenset({"integer", "null"})),
    (("c",), frozenset({"integer"})),
    (("e",), frozenset({"string", "number", "null"})),
    (("any",), frozenset({"string", "number"})),
    (("partly",), None),  # a branch says nothing
    (("flags",), frozenset({"array"})),
    (("flags", 0), frozenset({"boolean"})),
    (("flags", -1), frozenset({"boolean"})),
    (("pair", 0), frozenset({"string"})),
    (("pair", 5), frozenset({"integer"})),
    (("pair", -1), None),  # which element is last depends on the length
    (("old", 0), frozenset({"string"})),
    (("old", 1), frozenset({"null"})),
    (("ref",), None),
    (("map", "anything"), frozenset({"number"})),
    (("open", "anything"), None),
    (("patterned", "abc"), None),
    (("both",), frozenset({"number"})),
    (("whole",), frozenset({"integer"})),
    (("never",), frozenset()),  # no value can be valid
    (("untyped",), None),
    (("deep", "x", "y"), frozenset({"null"})),
    (("deep", "x", "z"), None),
    (("union", "p"), frozenset({"string", "integer"})),
    (("guarded", "p"), frozenset({"string"})),
    (("byindex", 0), frozenset({"boolean"})),
    (("byindex", -1), None),
    (("absent",), None),
    (("s", "below"), None),
    (("flags", "key"), None),
]


@pytest.mark.parametrize(("path", "expected"), TYPES_AT)
def test_schema_types_at(path: tuple[str | int, ...], expected: frozenset[str] | None) -> None:
    assert schema_types_at(TYPED, path) == expected
    assert schema_types_at(freeze(TYPED), path) == expected  # frozen schemas too


@pytest.mark.parametrize(("schema", "path", "expected"), [
    (None, (), None),
    ({}, (), None),
    ({"type": "object"}, ("x",), None),
    (True, (), None),
    ({"type": "strin"}, (), frozenset()),
    (WEATHER["properties"]["_output"], ("temperature",), frozenset({"number"})),
    (Tool.of(WEATHER).output_schema, ("conditions",), frozenset({"string"})),
    (thaw(Tool.of(WEATHER).schema), ("location",), frozenset({"string"})),
])
def test_schema_types_at_edges(schema: Any, path: tuple[str | int, ...],
                               expected: frozenset[str] | None) -> None:
    assert schema_types_at(schema, path) == expected


def test_schema_types_at_deep_schema_is_unknown_not_a_crash() -> None:
    schema: Any = {"type": "string"}
    for _ in range(400):
        schema = {"anyOf": [schema]}
    assert schema_types_at(schema, ()) is None


S, N, I = "string", "number", "integer"
# (produced, accepted, compatible)
COMPATIBLE: list[tuple[set[str], set[str], bool]] = [
    ({S}, {S}, True),
    ({S}, {N}, False),
    ({I}, {N}, True),  # every integer is a number
    ({N}, {I}, True),  # a number may be whole
    ({S, "null"}, {"null"}, True),  # some produced type fits
    ({"object"}, {"array", S}, False),
    ({"boolean"}, {I, N}, False),
    (set(), {S}, False),  # nothing is produced
    ({S}, set(), False),
]


@pytest.mark.parametrize(("produced", "accepted", "expected"), COMPATIBLE)
def test_types_compatible(produced: set[str], accepted: set[str], expected: bool) -> None:
    assert types_compatible(frozenset(produced), frozenset(accepted)) is expected


# -- properties ------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["x", "†input.a", "\\†y", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "b", "city", "_m"]), inner, max_size=3),
    max_leaves=8,
)
CALLS = st.dictionaries(
    st.sampled_from(["amount", "currency", "tags", "address", "choice", "code", "extra",
                     "_tool", "_output", "_outputPath"]),
    JSON, max_size=5)


def _with_references(value: Any, mask: list[bool]) -> Any:
    """``value`` with some leaves (chosen by ``mask``, cycled) replaced by references."""
    counter = iter(range(10**6))

    def walk(v: Any, top: bool = False) -> Any:
        if isinstance(v, dict):
            return {k: (v2 if top and k.startswith("_") else walk(v2)) for k, v2 in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return "†state.r" if mask[next(counter) % len(mask)] else v

    return walk(value, top=True)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(CALLS, st.lists(st.booleans(), min_size=1, max_size=5))
def test_references_never_add_errors(call: dict[str, Any], mask: list[bool]) -> None:
    pay = Tool.of(CHECKED)
    before = {p for p, _ in literal_param_errors(pay, call)}
    after = {p for p, _ in literal_param_errors(pay, _with_references(call, mask))}
    assert after <= before


def _has_string_prefix(value: Any, prefixes: tuple[str, ...]) -> bool:
    if isinstance(value, str):
        return value.startswith(prefixes)
    if isinstance(value, dict):
        return any(_has_string_prefix(v, prefixes) for v in value.values())
    if isinstance(value, list):
        return any(_has_string_prefix(v, prefixes) for v in value)
    return False


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(CALLS)
def test_agrees_with_jsonschema_when_no_references(call: dict[str, Any]) -> None:
    pay = Tool.of(CHECKED)
    params = {k: v for k, v in call.items()
              if not k.startswith("_") or k in ("_tool", "_output")}
    if _has_string_prefix(params, ("†", "\\†")):
        return
    schema = copy.deepcopy(CHECKED)
    schema["required"] = ["amount"]
    reference = Draft202012Validator(schema).is_valid(params)
    assert (literal_param_errors(pay, call) == []) is reference
    assert (validate_params(pay, call) == []) is reference


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["type", "properties", "required", "items", "$ref",
                                        "_activity", "anyOf", "const"]), JSON, max_size=4),
       JSON)
def test_definitions_raise_only_tool_errors(extra: dict[str, Any], prop: Any) -> None:
    schema = {"properties": {"_tool": {"const": "t"}, "p": prop}, **extra}
    try:
        t = Tool.of(schema)
    except ToolError:
        return
    literal_param_errors(t, {"p": prop})
    compose_calls_schema(ToolRegistry.of([t]))
    schema_types_at(t.schema, ("p",))


_DETERMINISM = """
import json
from obelisk.compiler.compose import compose_calls_schema
from obelisk.compiler.conform import literal_param_errors
from obelisk.compiler.tools import ToolRegistry
from tests.test_tools import CHECKED, SENTIMENT, WEATHER
registry = ToolRegistry.of([SENTIMENT, WEATHER, CHECKED])
call = {"amount": True, "tags": [1, 2], "extra": None, "address": {"zip": 1, "b": 2}}
print(json.dumps([compose_calls_schema(registry, {"weatherCheck"}),
                  literal_param_errors(registry.get("pay"), call)]))
"""


@pytest.mark.slow
def test_results_do_not_depend_on_hash_seed() -> None:
    outputs = set()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _DETERMINISM], env=env, cwd=root,
                              capture_output=True, text=True, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1
