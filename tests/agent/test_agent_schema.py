"""The solution schema (every plan obelisk accepts validates against it), strict mode, and
dropping the nulls strict mode forces."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from obelisk import compile_plan
from obelisk.agent import drop_forced_nulls, solution_schema, strict_schema
from obelisk.agent.schema import widen_to_references
from obelisk.planfile import read_plan_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
VECTOR_FILES = sorted((ROOT / "tests" / "conformance").glob("*.json"))


def valid(schema: Any, value: Any) -> list[str]:
    Draft202012Validator.check_schema(schema)
    return [e.message for e in Draft202012Validator(schema).iter_errors(value)]


def tools_for(plan: list[Any], tools: list[Any]) -> list[Any]:
    """The given tools, or (when a plan is checked without tools) an open tool per name."""
    if tools:
        return tools
    names = dict.fromkeys(c["_tool"] for c in plan if isinstance(c.get("_tool"), str))
    return [{"type": "object", "properties": {"_tool": {"const": n}}} for n in names]


def plan_cases() -> list[Any]:
    """Every plan of the examples and the vectors that obelisk accepts (no error
    diagnostics): (plan, tools, context, instances)."""
    cases = []
    for path in EXAMPLES:
        if isinstance(json.loads(path.read_text()), dict):
            pf = read_plan_file(str(path))
            cases.append(pytest.param(list(pf.plan), list(pf.tools), list(pf.context),
                                      pf.instances, id=f"example/{path.stem}"))
    for path in VECTOR_FILES:
        for vector in json.loads(path.read_text()):
            if "plan" in vector:
                cases.append(pytest.param(
                    vector["plan"], vector.get("tools") or [], vector.get("context", []),
                    bool(vector.get("instances")), id=vector["id"]))
    return [c for c in cases if compile_plan(c.values[0], tools=c.values[1],
                                             context=c.values[2], instances=c.values[3]).ok]


ACCEPTED = plan_cases()


@pytest.mark.parametrize(("plan", "tools", "context", "instances"), ACCEPTED)
@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_every_accepted_plan_validates(plan: list[Any], tools: list[Any], context: list[Any],
                                       instances: bool, mode: str) -> None:
    if mode == "lazy" and any("_output" in c for c in plan):
        plan = [{k: v for k, v in c.items() if k != "_output"} for c in plan]
    schema = solution_schema(tools_for(plan, tools), None, mode)
    assert valid(schema, {"calls": plan, "output": None}) == []


def test_enough_plans_are_checked() -> None:
    assert len(ACCEPTED) >= 60
    # Every example plan file (the others are contexts) is accepted, so checked here.
    plan_files = [p for p in EXAMPLES if isinstance(json.loads(p.read_text()), dict)]
    assert len(plan_files) >= 6
    assert sum(1 for c in ACCEPTED if str(c.id).startswith("example/")) == len(plan_files)


LOOKUP = {
    "type": "object",
    "properties": {
        "_tool": {"type": "string", "const": "lookup"},
        "id": {"type": "integer"},
        "filter": {"type": "object", "properties": {"max": {"type": "number"}},
                   "additionalProperties": False},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "_output": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
    "required": ["id"],
}
FIXED = {
    "type": "object",
    "properties": {"_tool": {"const": "log"}, "_outputPath": {"const": "†state.log"},
                   "line": {"type": "string"}},
}


def branch(schema: dict[str, Any], index: int = 0) -> dict[str, Any]:
    branches: list[dict[str, Any]] = schema["properties"]["calls"]["items"]["anyOf"]
    return branches[index]


@pytest.mark.parametrize(("mode", "activities", "has_output"), [
    ("eager", (), True),            # latent, eager: the LLM may carry the result
    ("eager", ("lookup",), False),  # an activity runs it: the LLM must not invent results
    ("lazy", (), False),            # lazy: a plan only
    ("lazy", ("lookup",), False),
])
def test_output_is_shown_only_for_latent_tools_in_eager_mode(
        mode: str, activities: tuple[str, ...], has_output: bool) -> None:
    props = branch(solution_schema([LOOKUP], None, mode, activities))["properties"]
    assert ("_output" in props) is has_output


def test_branches_declare_the_meta_properties_and_accept_references() -> None:
    schema = solution_schema([LOOKUP, FIXED], None, kinds=["state", "input"])
    props = branch(schema)["properties"]
    assert list(props)[:3] == ["_tool", "_activity", "_reasoningForCall"]
    assert props["_outputMethod"]["enum"] == ["set", "merge", "assign", "push", "concat"]
    assert props["_scopes"]["items"]["enum"] == ["state", "input"]
    assert branch(schema, 1)["properties"]["_outputPath"] == {"const": "†state.log"}
    call = {"_tool": "lookup", "id": "†input.id", "filter": {"max": "†state.max"},
            "tags": ["a", "†state.tag"], "_outputPath": "†state.x || †state.err",
            "_outputMethod": "merge", "_instance": "①", "_scopes": ["state"]}
    assert valid(schema, {"calls": [call], "output": None}) == []
    bad = [
        {**call, "id": "seven"},                 # not an integer, not a reference
        {**call, "filter": {"max": 1, "x": 2}},  # the tool forbids other properties
        {**call, "_outputPath": "state.x"},      # an output path is a reference
        {**call, "_outputMethod": "append"},
        {**call, "_scopes": ["user"]},           # not a data kind of this context
        {"_tool": "log", "line": "x", "_outputPath": "†state.other"},  # the tool fixes it
    ]
    for call_ in bad:
        assert valid(schema, {"calls": [call_], "output": None}) != [], call_


def test_output_is_nullable_and_accepts_references() -> None:
    user = {"type": "object", "properties": {"id": {"type": "integer"},
                                             "items": {"type": "array",
                                                       "items": {"type": "integer"}}},
            "required": ["id"]}
    schema = solution_schema([], user)
    assert valid(schema, {"calls": [], "output": None}) == []
    assert valid(schema, {"calls": [], "output": "†state.answer"}) == []
    assert valid(schema, {"calls": [], "output": {"id": "†state.id",
                                                  "items": [1, "†state.n"]}}) == []
    assert valid(schema, {"calls": [], "output": {"id": "x"}}) != []
    assert valid(schema, {"calls": [], "output": {}}) != []
    assert valid(schema, {"calls": []}) != []  # both keys are required
    assert valid(schema, {"calls": [{"_tool": "x"}], "output": None}) != []  # no tools


# -- strict mode -----------------------------------------------------------------------------


@pytest.mark.parametrize(("schema", "strict"), [
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
     {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
      "additionalProperties": False}),
    ({"type": "object", "properties": {"a": {"type": "string"}}},
     {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
      "required": ["a"], "additionalProperties": False}),
    ({"type": "object", "properties": {"a": {"type": ["string", "null"]}}},  # already nullable
     {"type": "object", "properties": {"a": {"type": ["string", "null"]}},
      "required": ["a"], "additionalProperties": False}),
    ({"properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}},
     {"properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"},
                                     {"type": "null"}]}},
      "required": ["a"], "additionalProperties": False}),
    ({"const": "x"}, {"enum": ["x"]}),
    ({"type": "array", "items": {"properties": {"k": {"const": 1}}}},
     {"type": "array", "items": {"properties": {"k": {"anyOf": [{"enum": [1]}, {"type": "null"}]}},
                                 "required": ["k"], "additionalProperties": False}}),
    ({"type": "object"}, {"type": "object"}),  # free-form: left open
])
def test_strict_schema(schema: Any, strict: Any) -> None:
    assert strict_schema(schema) == strict


def test_the_strict_solution_schema_is_a_valid_schema() -> None:
    strict = strict_schema(solution_schema([LOOKUP, FIXED], {"type": "object", "properties": {
        "n": {"type": "integer"}}}))
    Draft202012Validator.check_schema(strict)
    assert strict["properties"]["calls"]["items"]["anyOf"][0]["additionalProperties"] is False


@pytest.mark.parametrize(("value", "schema", "expected"), [
    ({"a": None}, {"properties": {"a": {"type": "string"}}}, {}),
    ({"a": None}, {"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"a": None}),
    ({"a": None}, {"properties": {"a": {"type": ["string", "null"]}}}, {"a": None}),
    ({"a": None}, {"properties": {"a": {}}}, {"a": None}),  # any JSON: null is a value
    ({"a": {"b": None, "c": 1}},
     {"properties": {"a": {"properties": {"b": {"type": "integer"}, "c": {"type": "integer"}}}}},
     {"a": {"c": 1}}),
    ([{"a": None}], {"items": {"properties": {"a": {"type": "integer"}}}}, [{}]),
])
def test_drop_forced_nulls(value: Any, schema: Any, expected: Any) -> None:
    assert drop_forced_nulls(value, schema) == expected


# -- the inverse, as a property --------------------------------------------------------------

TOOLS = [LOOKUP, FIXED]
SCHEMA = solution_schema(TOOLS, {"type": "object", "properties": {
    "answer": {"type": "string"}, "score": {"type": ["number", "null"]}}})
STRICT = strict_schema(SCHEMA)

refs = st.sampled_from(["†state.a", "†input.b.c", "†state.x || †state.y"])
maybe = st.booleans()


@st.composite
def lookup_calls(draw: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"_tool": "lookup", "_activity": "",
                            "id": draw(st.one_of(st.integers(-5, 5), refs))}
    if draw(maybe):
        filt: dict[str, Any] = {}
        if draw(maybe):
            filt["max"] = draw(st.one_of(st.floats(-9, 9), refs))
        call["filter"] = draw(st.one_of(st.just(filt), refs))
    if draw(maybe):
        call["tags"] = draw(st.lists(st.one_of(st.sampled_from(["a", "b"]), refs), max_size=3))
    if draw(maybe):
        call["_outputPath"] = draw(refs)
    if draw(maybe):
        call["_outputMethod"] = draw(st.sampled_from(["set", "push"]))
    if draw(maybe):
        call["_output"] = draw(st.one_of(st.just({}), st.just({"name": "n"})))
    return call


@st.composite
def log_calls(draw: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"_tool": "log", "_activity": ""}
    if draw(maybe):
        call["line"] = draw(st.one_of(st.text(max_size=3), refs))
    if draw(maybe):
        call["_instance"] = "①"
    return call


@st.composite
def solutions(draw: Any) -> dict[str, Any]:
    calls = draw(st.lists(st.one_of(lookup_calls(), log_calls()), max_size=3))
    output: Any = None
    if draw(maybe):
        output = {}
        if draw(maybe):
            output["answer"] = draw(st.one_of(st.text(max_size=3), refs))
        # "score" is optional and nullable: strict mode cannot say "absent" for it, so a
        # null there is kept as a value (§9); the inverse holds when it is present.
        output["score"] = draw(st.one_of(st.none(), st.integers(0, 3)))
    return {"calls": calls, "output": output}


def strictify(value: Any, schema: Any) -> Any:
    """What strict mode makes the LLM write: every missing optional property as null."""
    if isinstance(value, dict) and isinstance(schema, dict):
        for key in ("anyOf", "oneOf"):
            for sub in schema.get(key, []):
                if not Draft202012Validator(sub).is_valid(value):
                    continue
                return strictify(value, sub)
        props = schema.get("properties", {})
        out = {k: strictify(v, props.get(k, {})) for k, v in value.items()}
        for key in props:
            out.setdefault(key, None)
        return out
    if isinstance(value, list) and isinstance(schema, dict):
        return [strictify(v, schema.get("items", {})) for v in value]
    return value


@pytest.mark.slow
@given(solutions())
def test_drop_forced_nulls_inverts_strict_mode(solution: dict[str, Any]) -> None:
    assert valid(SCHEMA, solution) == []
    forced = strictify(solution, SCHEMA)
    assert valid(STRICT, forced) == []
    assert drop_forced_nulls(forced, SCHEMA) == solution


REF = {"type": "string", "pattern": "^†"}


@pytest.mark.parametrize(("schema", "widened"), [
    ({}, {}),
    ({"type": "string", "description": "d"}, {"type": "string", "description": "d"}),
    ({"type": "string", "enum": ["a"]}, {"anyOf": [{"type": "string", "enum": ["a"]}, REF]}),
    ({"type": "integer"}, {"anyOf": [{"type": "integer"}, REF]}),
    ({"type": "array", "items": {"type": "number"}},
     {"anyOf": [{"type": "array", "items": {"anyOf": [{"type": "number"}, REF]}}, REF]}),
    ({"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
     {"anyOf": [{"oneOf": [{"type": "integer"}, {"type": "boolean"}]}, REF]}),
    ({"type": "object", "propertyNames": {"maxLength": 3},
      "additionalProperties": {"type": "null"}},
     {"anyOf": [{"type": "object", "propertyNames": {"maxLength": 3},
                 "additionalProperties": {"anyOf": [{"type": "null"}, REF]}}, REF]}),
])
def test_widen_to_references(schema: Any, widened: Any) -> None:
    assert widen_to_references(schema) == widened
    if schema:
        assert valid(widened, "†state.x") == []  # a reference matches exactly once
