"""interpreters/dryrun.py: mocks, generated examples, exploration and the report.

What every interpreter shares is in test_interpreters.py; this file covers what only a
dry run has (CONFORMANCE.md "Mocks" and "the dry-run report").
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from obelisk import (
    MISSING,
    ActivityError,
    Branch,
    Context,
    MockError,
    PlanRefused,
    dry_run,
    resolve,
)
from obelisk.compiler.schemas import example_of
from obelisk.interpreters.dryrun import DRY_RUN_DATE
from obelisk.interpreters.mocks import check_mocks

INTERPRETERS = ["sync", "asyncio"]


@pytest.fixture(params=INTERPRETERS)
def interpreter(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def outcome(result: Any, call: int, instance: str | None = None) -> tuple[str, str | None]:
    found = next(c for c in result.calls if c.call == call and c.instance == instance)
    return found.outcome, found.error


# -- sequence and by_instance -----------------------------------------------------------

THREE_CALLS = [
    {"_tool": "roll", "n": 0, "_outputPath": "†state.a"},
    {"_tool": "other", "_outputPath": "†state.o"},
    {"_tool": "roll", "n": 1, "_outputPath": "†state.b"},
    {"_tool": "roll", "n": 2, "_outputPath": "†state.c"},
]


def test_sequence_is_indexed_by_rank_among_the_calls_of_the_tool(interpreter: str) -> None:
    # The first roll is the slowest: under asyncio it finishes last, yet still gets entry 1.
    mocks = {"roll": {"sequence": [{"return": 1, "delay_ms": 30}, {"return": 2},
                                   {"raise": {"type": "Third", "message": "third"}}]},
             "other": {"return": "o"}}
    result = dry_run(THREE_CALLS, mocks=mocks, interpreter=interpreter)
    assert resolve(result.context, "†state") == {"a": 1, "o": "o", "b": 2}
    assert outcome(result, 3) == ("failed", "Third")


def test_sequence_past_its_end_is_no_mock(interpreter: str) -> None:
    result = dry_run(THREE_CALLS, mocks={"roll": {"sequence": [{"return": 1}]},
                                         "other": {"return": 0}}, interpreter=interpreter)
    assert [outcome(result, i) for i in range(4)] == [
        ("executed", None), ("executed", None), ("failed", "NoMock"), ("failed", "NoMock")]
    assert "invocation number 2 of that tool" in result.errors[0]["data"]["error"]["message"]


def test_sequence_over_instances_counts_call_order_then_instance(interpreter: str) -> None:
    context = [{"type": "input", "_instance": "①", "x": 1},
               {"type": "input", "_instance": "②", "x": 2}]
    plan = [{"_tool": "t", "x": "†input.x", "_outputPath": "†state.first"},
            {"_tool": "t", "x": "†input.x", "_outputPath": "†state.second"}]
    mocks = {"t": {"sequence": [{"return": "0:①"}, {"return": "0:②", "delay_ms": 20},
                                {"return": "1:①"}, {"return": "1:②"}]}}
    result = dry_run(plan, context, mocks=mocks, instances=True, interpreter=interpreter)
    assert result.report()["views"]["state"] == {
        "①": {"first": "0:①", "second": "1:①"}, "②": {"first": "0:②", "second": "1:②"}}


def test_by_instance_without_an_entry_is_no_mock(interpreter: str) -> None:
    context = [{"type": "state", "_instance": "①", "x": 1},
               {"type": "state", "_instance": "②", "x": 2}]
    plan = [{"_tool": "t", "x": "†state.x", "_outputPath": "†state.y || †state.err"}]
    result = dry_run(plan, context, mocks={"t": {"by_instance": {"①": {"echo": True}}}},
                     instances=True, interpreter=interpreter)
    assert outcome(result, 0, "①") == ("executed", None)
    assert outcome(result, 0, "②") == ("failed", "NoMock")  # a broken contract: no branch
    assert resolve(result.context, "†state.err", "②") is MISSING


def test_nested_forms(interpreter: str) -> None:
    context = [{"type": "state", "_instance": "①", "x": 1},
               {"type": "state", "_instance": "②", "x": 2}]
    plan = [{"_tool": "t", "x": "†state.x", "_outputPath": "†state.y || †state.err"},
            {"_tool": "t", "x": "†state.x", "_outputPath": "†state.z || †state.err2"}]
    mocks = {"t": {"by_instance": {
        "①": {"sequence": [{"echo": True}, {"branch": "†state.err2", "value": "chosen"}]},
        "②": {"sequence": [{"raise": {"type": "E", "message": "m"}}, {"return": 5}],
              "delay_ms": 5}}}}
    result = dry_run(plan, context, mocks=mocks, instances=True, interpreter=interpreter)
    views = result.report()["views"]["state"]
    # A sequence inside by_instance counts that instance's invocations: in each instance
    # call 0 takes the first entry and call 1 the second.
    assert views["①"] == {"x": 1, "y": {"x": 1}, "err2": "chosen"}
    assert views["②"] == {"x": 2, "err": {"message": "m", "type": "E"}, "z": 5}
    assert outcome(result, 1, "①") == ("executed", None)
    assert outcome(result, 1, "②") == ("executed", None)


def test_echo_returns_the_resolved_parameters_without_meta_properties(interpreter: str) -> None:
    plan = [{"_tool": "t", "a": "†input.a", "b": [1, "†input.a"], "_scopes": ["input"],
             "_reasoningForCall": "why", "_outputPath": "†state.r"}]
    result = dry_run(plan, [{"type": "input", "input": {"a": "A"}}], mocks={"t": {"echo": True}},
                     interpreter=interpreter)
    assert resolve(result.context, "†state.r") == {"a": "A", "b": [1, "A"]}


def test_echo_scopes_with_and_without_scopes(interpreter: str) -> None:
    context = [{"type": "state", "s": 1}, {"type": "input", "input": {"i": 1}},
               {"type": "data", "kind": "user", "data": {"u": 1}}]
    plan = [{"_tool": "t", "_scopes": ["user", "state"], "_outputPath": "†data.both"},
            {"_tool": "t", "_outputPath": "†data.none"}]
    result = dry_run(plan, context, mocks={"t": {"echo_scopes": True}}, interpreter=interpreter)
    assert resolve(result.context, "†data.both") == {"state": {"s": 1}, "user": {"u": 1}}
    assert resolve(result.context, "†data.none") == {}


# -- where a result comes from ----------------------------------------------------------

TOOL_WITH_OUTPUT = {"type": "object", "properties": {
    "_tool": {"const": "lookup"},
    "_output": {"type": "object", "required": ["temperature", "conditions"], "properties": {
        "temperature": {"type": "number"}, "conditions": {"type": "string"}}}}}


def test_a_mock_wins_over_the_call_output(interpreter: str) -> None:
    plan = [{"_tool": "think", "_output": "own", "_outputPath": "†state.r"}]
    result = dry_run(plan, mocks={"think": {"return": "mocked"}}, interpreter=interpreter)
    assert resolve(result.context, "†state.r") == "mocked"


def test_without_a_mock_the_call_output_is_the_result(interpreter: str) -> None:
    plan = [{"_tool": "lookup", "_output": {"temperature": 3, "conditions": "snow"},
             "_outputPath": "†state.r"}]
    result = dry_run(plan, tools=[TOOL_WITH_OUTPUT], interpreter=interpreter)
    assert resolve(result.context, "†state.r.conditions") == "snow"


def test_without_output_an_example_is_generated_from_the_schema(interpreter: str) -> None:
    plan = [{"_tool": "lookup", "_outputPath": "†state.r"}]
    result = dry_run(plan, tools=[TOOL_WITH_OUTPUT], interpreter=interpreter)
    assert resolve(result.context, "†state.r") == {"temperature": 0, "conditions": "string"}


def test_otherwise_no_mock(interpreter: str) -> None:
    result = dry_run([{"_tool": "t", "_outputPath": "†state.a || †state.b"}],
                     interpreter=interpreter)
    assert outcome(result, 0) == ("failed", "NoMock")
    assert "no mock for tool 't'" in result.errors[0]["data"]["error"]["message"]


def test_a_tool_whose_output_schema_has_no_example_is_no_mock() -> None:
    tool = {"type": "object", "properties": {"_tool": {"const": "t"}, "_output": {}}}
    result = dry_run([{"_tool": "t", "_outputPath": "†state.r"}], tools=[tool])
    assert outcome(result, 0) == ("failed", "NoMock")


# -- function mocks ---------------------------------------------------------------------


def test_function_mocks_take_the_activity_signature(interpreter: str) -> None:
    seen: list[Any] = []

    def plain(call: dict[str, Any], tool: Any, context: Context) -> Any:
        seen.append((call, tool, context.to_json()))
        return call["x"] * 2

    async def asynchronous(call: dict[str, Any], tool: Any, context: Context) -> Any:
        await asyncio.sleep(0)
        return Branch("†state.err", "chosen")

    def fails(call: dict[str, Any], tool: Any, context: Context) -> Any:
        raise ActivityError("Nope", "nope", {"d": 1})

    tools = [{"type": "object", "properties": {"_tool": {"const": name}}}
             for name in ("double", "choose", "fails")]
    plan = [{"_tool": "double", "x": 21, "_scopes": ["state"], "_outputPath": "†state.d"},
            {"_tool": "choose", "_outputPath": "†state.ok || †state.err"},
            {"_tool": "fails", "_outputPath": "†state.ok2 || †state.err2"}]
    result = dry_run(plan, [{"type": "state", "s": 1}], tools=tools, interpreter=interpreter,
                     mocks={"double": plain, "choose": asynchronous, "fails": fails})
    assert resolve(result.context, "†state") == {
        "s": 1, "d": 42, "err": "chosen", "err2": {"type": "Nope", "message": "nope", "data": {"d": 1}}}
    call, tool, context = seen[0]
    assert call == {"_tool": "double", "x": 21, "_scopes": ["state"], "_outputPath": "†state.d"}
    assert tool == tools[0] and context == [{"type": "state", "s": 1}]


# -- mocks that are not valid -----------------------------------------------------------

BAD_MOCKS = [
    ({"t": "return 1"}, "a mock is an object"),
    ({"t": {}}, "give exactly one of"),
    ({"t": {"return": 1, "raise": {"type": "E"}}}, "give exactly one of"),
    ({"t": {"retrun": 1}}, "unknown field 'retrun'"),
    ({"t": {"raise": "boom"}}, "mocks.t.raise"),
    ({"t": {"raise": {"message": "no type"}}}, "mocks.t.raise"),
    ({"t": {"raise": {"type": "E", "message": 5}}}, "mocks.t.raise.message"),
    ({"t": {"branch": "state.error"}}, "mocks.t.branch"),
    ({"t": {"return": 1, "value": 2}}, "goes with \"branch\" only"),
    ({"t": {"echo": "yes"}}, "mocks.t.echo: true"),
    ({"t": {"echo_scopes": 1}}, "mocks.t.echo_scopes: true"),
    ({"t": {"sequence": []}}, "non-empty array"),
    ({"t": {"sequence": [{"return": 1}, {"nope": 1}]}}, "mocks.t.sequence[1]"),
    ({"t": {"by_instance": ["①"]}}, "instance id -> mock"),
    ({"t": {"by_instance": {"①": {"raise": {}}}}}, "mocks.t.by_instance.①.raise"),
    ({"t": {"return": 1, "delay_ms": -5}}, "delay_ms"),
    ({"t": {"return": 1, "delay_ms": True}}, "delay_ms"),
]


@pytest.mark.parametrize(("mocks", "problem"), BAD_MOCKS)
def test_bad_mocks_are_refused_with_every_problem(mocks: Any, problem: str) -> None:
    with pytest.raises(MockError) as info:
        dry_run([{"_tool": "t"}], mocks=mocks)
    assert any(problem in p for p in info.value.problems), info.value.problems


def test_every_problem_is_listed() -> None:
    with pytest.raises(MockError) as info:
        check_mocks({"a": {}, "b": {"echo": False}, "c": {"return": 1}})
    assert len(info.value.problems) == 2


def test_mocks_must_be_an_object() -> None:
    with pytest.raises(MockError, match="tool name -> mock"):
        check_mocks([{"return": 1}])  # type: ignore[arg-type]


def test_a_plan_with_errors_is_refused() -> None:
    with pytest.raises(PlanRefused):
        dry_run([{"_tool": "t", "x": "†state.nowhere"}])


def test_the_interpreter_must_be_known() -> None:
    with pytest.raises(ValueError, match="interpreter"):
        dry_run([{"_tool": "t"}], interpreter="threads")


# -- the clock --------------------------------------------------------------------------


def test_the_clock_is_fixed(interpreter: str) -> None:
    result = dry_run([{"_tool": "t", "_outputPath": "†state.r"}], mocks={"t": {"return": 1}},
                     interpreter=interpreter)
    assert result.context.to_json()[-1]["_date"] == DRY_RUN_DATE == "1970-01-01T00:00:00Z"


def test_the_clock_can_be_injected() -> None:
    import datetime

    moment = datetime.datetime(2025, 10, 26, 12, tzinfo=datetime.timezone.utc)
    result = dry_run([{"_tool": "t", "_outputPath": "†state.r"}], mocks={"t": {"return": 1}},
                     clock=lambda: moment)
    assert result.context.to_json()[-1]["_date"] == "2025-10-26T12:00:00+00:00"


# -- generated examples -----------------------------------------------------------------

EXAMPLES = [
    ({"const": 5}, 5),
    ({"enum": ["b", "a"]}, "b"),
    ({"examples": [{"k": 1}], "type": "object"}, {"k": 1}),
    ({"type": "string", "default": "d"}, "d"),
    ({"type": "string"}, "string"),
    ({"type": "string", "minLength": 10}, "stringxxxx"),
    ({"type": "string", "maxLength": 3}, "str"),
    ({"type": "string", "format": "date-time"}, "1970-01-01T00:00:00Z"),
    ({"type": "string", "format": "email"}, "user@example.com"),
    ({"type": "integer"}, 0),
    ({"type": "integer", "minimum": 3}, 3),
    ({"type": "integer", "exclusiveMinimum": 2.5}, 3),
    ({"type": "integer", "maximum": -1}, -1),
    ({"type": "integer", "minimum": 1, "multipleOf": 7}, 7),
    ({"type": "number", "exclusiveMinimum": 0}, 0.5),
    ({"type": "number", "exclusiveMaximum": -2}, -2.5),
    ({"type": "number", "minimum": 1.5}, 1.5),
    ({"type": "boolean"}, False),
    ({"type": "null"}, None),
    ({"type": ["null", "string"]}, "string"),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, 0),
    ({"type": "array", "items": {"type": "integer"}}, []),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, [0, 0]),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}},
     {"a": "string", "b": False}),
    ({"type": "object", "required": ["id"]}, {"id": None}),
    ({"properties": {"n": {"type": "integer"}}}, {"n": 0}),
    ({"$defs": {"money": {"type": "number", "minimum": 1}}, "type": "object",
      "properties": {"amount": {"$ref": "#/$defs/money"}}}, {"amount": 1}),
    ({"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}, {}),
    ({"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}, "required": ["x"]}, MISSING),
    ({}, MISSING),
    ({"description": "anything"}, MISSING),
    (True, MISSING),
    ("not a schema", MISSING),
]


@pytest.mark.parametrize(("schema", "expected"), EXAMPLES)
def test_example_of(schema: Any, expected: Any) -> None:
    example = example_of(schema)
    assert example == expected if expected is not MISSING else example is MISSING
    if example is not MISSING:
        assert Draft202012Validator(schema).is_valid(example)


def test_example_of_a_recursive_schema_ends() -> None:
    schema = {"$defs": {"node": {"type": "object", "required": ["next"],
                                 "properties": {"next": {"$ref": "#/$defs/node"}}}},
              "$ref": "#/$defs/node"}
    assert example_of(schema) is MISSING


def test_a_tool_ref_into_its_own_defs_is_followed() -> None:
    tool = {"type": "object", "$defs": {"weather": {"type": "object", "properties": {
        "t": {"type": "number"}}, "required": ["t"]}},
        "properties": {"_tool": {"const": "w"}, "_output": {"$ref": "#/$defs/weather"}}}
    result = dry_run([{"_tool": "w", "_outputPath": "†state.w"}], tools=[tool])
    assert resolve(result.context, "†state.w") == {"t": 0}


# -- exploration ------------------------------------------------------------------------

PAYMENT = [
    {"_tool": "processPayment", "amount": "†input.amount",
     "_outputPath": "†state.receipt || †state.error"},
    {"_tool": "confirmOrder", "receipt": "†state.receipt", "_outputPath": "†state.confirmation"},
    {"_tool": "reportFailure", "error": "†state.error", "_outputPath": "†state.report"},
]
PAYMENT_CONTEXT = [{"type": "input", "input": {"amount": 50}}]
WEATHER = [
    {"_tool": "getWeather", "_outputPath": "†state.sunny || †state.notSunny || †state.failed"},
    {"_tool": "findPark", "w": "†state.sunny", "_outputPath": "†state.suggestion"},
    {"_tool": "findMovie", "w": "†state.notSunny", "_outputPath": "†state.suggestion"},
]


def combos(result: Any) -> list[dict[str, Any]]:
    return result.report()["explore"]["combinations"]  # type: ignore[no-any-return]


def test_explore_runs_every_branch_of_the_payment(interpreter: str) -> None:
    mocks = {"processPayment": {"return": {"id": "r-1"}}, "confirmOrder": {"return": "ok"},
             "reportFailure": {"echo": True}}
    result = dry_run(PAYMENT, PAYMENT_CONTEXT, mocks=mocks, explore=True, interpreter=interpreter)
    explore = result.report()["explore"]
    assert (explore["total"], explore["run"], explore["truncated"]) == (2, 2, False)
    first, second = explore["combinations"]
    assert first["choices"] == [{"call": 0, "instance": None, "alternative": 1,
                                 "output": "†state.receipt || †state.error"}]
    assert (first["executed"], first["skipped"], first["failed"]) == ([0, 1], [2], [])
    assert first["views"]["state"]["global"]["receipt"] == {"id": "r-1"}  # the mock's own value
    assert (second["executed"], second["skipped"]) == ([0, 2], [1])
    assert second["views"]["state"]["global"]["error"] == {
        "type": "Explored", "message": "exploring alternative 2 of 2"}
    # the base run is the plain dry run
    assert [c.outcome for c in result.calls] == ["executed", "executed", "skipped"]


def test_explore_keeps_a_mocked_failure_where_it_lands() -> None:
    mocks = {"processPayment": {"raise": {"type": "CardDeclined", "message": "declined"}},
             "confirmOrder": {"return": "ok"}, "reportFailure": {"echo": True}}
    result = dry_run(PAYMENT, PAYMENT_CONTEXT, mocks=mocks, explore=True)
    first, second = combos(result)
    assert first["views"]["state"]["global"]["receipt"] == {"explored": True}
    assert second["views"]["state"]["global"]["error"]["type"] == "CardDeclined"


def test_explore_uses_an_example_for_a_forced_value() -> None:
    tools = [{"type": "object", "properties": {
        "_tool": {"const": "pay"}, "_output": {"type": "object", "properties": {
            "id": {"type": "string", "const": "r-example"}}}}}]
    plan = [{"_tool": "pay", "_outputPath": "†state.receipt || †state.error"}]
    result = dry_run(plan, mocks={"pay": {"raise": {"type": "E", "message": "e"}}}, tools=tools,
                     explore=True)
    assert combos(result)[0]["views"]["state"]["global"]["receipt"] == {"id": "r-example"}


def test_explore_a_three_way_branch(interpreter: str) -> None:
    mocks = {"getWeather": {"return": {"sky": "clear"}}, "findPark": {"return": "park"},
             "findMovie": {"return": "movie"}}
    result = dry_run(WEATHER, mocks=mocks, explore=True, interpreter=interpreter)
    found = [(c["choices"][0]["alternative"], c["executed"], c["skipped"],
              c["views"]["state"]["global"]) for c in combos(result)]
    assert found == [
        (1, [0, 1], [2], {"sunny": {"sky": "clear"}, "suggestion": "park"}),
        (2, [0, 2], [1], {"notSunny": {"sky": "clear"}, "suggestion": "movie"}),
        (3, [0], [1, 2], {"failed": {"type": "Explored", "message": "exploring alternative 3 of 3"}}),
    ]


def test_explore_keeps_a_mocked_choice_where_it_lands() -> None:
    mocks = {"getWeather": {"branch": "†state.notSunny", "value": "rain"},
             "findPark": {"return": "park"}, "findMovie": {"return": "movie"}}
    result = dry_run(WEATHER, mocks=mocks, explore=True)
    views = [c["views"]["state"]["global"] for c in combos(result)]
    assert views[0]["sunny"] == "rain"        # the choice's value, moved to alternative 1
    assert views[1]["notSunny"] == "rain"     # the mock's own choice
    assert views[2]["failed"]["type"] == "Explored"


def test_explore_multiplies_independent_branches_and_reports_truncation() -> None:
    plan = [{"_tool": "t", "n": i, "_outputPath": f"†state.ok{i} || †state.err{i}"}
            for i in range(9)]
    full = dry_run(plan[:3], mocks={"t": {"return": 1}}, explore=True)
    assert full.total_combinations == 8 and len(full.combinations) == 8 and not full.truncated
    choices = {tuple(c["alternative"] for c in combo["choices"]) for combo in combos(full)}
    assert len(choices) == 8
    big = dry_run(plan, mocks={"t": {"return": 1}}, explore=True)
    assert (big.total_combinations, len(big.combinations), big.truncated) == (512, 256, True)
    small = dry_run(plan, mocks={"t": {"return": 1}}, explore=True, limit=5)
    assert small.report()["explore"]["run"] == 5 and small.report()["explore"]["truncated"]


def test_explore_lists_only_the_choices_of_calls_that_ran() -> None:
    plan = [{"_tool": "a", "_outputPath": "†state.x || †state.y"},
            {"_tool": "b", "v": "†state.x", "_outputPath": "†state.p || †state.q"}]
    result = dry_run(plan, mocks={"a": {"return": 1}, "b": {"return": 2}}, explore=True)
    assert result.total_combinations == 4
    shapes = [[c["call"] for c in combo["choices"]] for combo in combos(result)]
    # Four runs; the two where call 0 took its second alternative differ only in the
    # choice forced on call 1, which never ran, so they are listed once.
    assert shapes == [[0, 1], [0, 1], [0]]
    explore = result.report()["explore"]
    assert (explore["total"], explore["run"], explore["distinct"]) == (4, 4, 3)


def test_explore_over_instances() -> None:
    context = [{"type": "state", "_instance": "①", "v": 1},
               {"type": "state", "_instance": "②", "v": 2}]
    plan = [{"_tool": "t", "v": "†state.v", "_outputPath": "†state.ok || †state.err"}]
    result = dry_run(plan, context, mocks={"t": {"echo": True}}, instances=True, explore=True)
    assert result.total_combinations == 4
    last = combos(result)[-1]
    assert [(c["instance"], c["alternative"]) for c in last["choices"]] == [("①", 2), ("②", 2)]


def test_a_plan_without_branches_explores_one_combination() -> None:
    result = dry_run([{"_tool": "t", "_outputPath": "†state.r"}], mocks={"t": {"return": 1}},
                     explore=True)
    assert result.total_combinations == 1
    assert combos(result)[0]["choices"] == []


# -- the report -------------------------------------------------------------------------


def test_the_report_has_exactly_the_documented_shape(interpreter: str) -> None:
    context = [{"type": "input", "input": {"amount": 50}},
               {"type": "state", "_instance": "①", "n": 1},
               {"type": "state", "_instance": "②", "n": 2}]
    plan = [{"_tool": "pay", "amount": "†input.amount", "n": "†state.n",
             "_outputPath": "†state.receipt || †state.error"},
            {"_tool": "confirm", "r": "†state.receipt", "_outputPath": "†state.done"}]
    mocks = {"pay": {"by_instance": {"①": {"return": "r1"},
                                     "②": {"raise": {"type": "Declined", "message": "no"}}}},
             "confirm": {"raise": {"type": "Down", "message": "down"}}}
    report = dry_run(plan, context, mocks=mocks, instances=True, interpreter=interpreter).report()
    assert list(report) == ["status", "diagnostics", "calls", "errors", "views", "trace"]
    assert report["status"] == "completed"
    assert report["calls"] == [
        {"call": 0, "instance": "①", "tool": "pay", "outcome": "executed", "reason": ""},
        {"call": 0, "instance": "②", "tool": "pay", "outcome": "executed",
         "reason": "Declined routed to alternative 2"},
        {"call": 1, "instance": "①", "tool": "confirm", "outcome": "failed",
         "reason": "Down: down", "error": "Down"},
        {"call": 1, "instance": "②", "tool": "confirm", "outcome": "skipped",
         "reason": "dead branch: †state.receipt was not written (call 0 (pay) [②] took †state.error instead)"},
    ]
    assert report["errors"] == [{"type": "error", "_instance": "①", "data": {
        "call": plan[1], "error": {"type": "Down", "message": "down"}}}]
    assert report["views"] == {
        "input": {"global": {"amount": 50}, "①": {"amount": 50}, "②": {"amount": 50}},
        "state": {"①": {"n": 1, "receipt": "r1"},
                  "②": {"n": 2, "error": {"type": "Declined", "message": "no"}}},
    }
    assert all(set(event) <= {"event", "call", "instance", "detail"} for event in report["trace"])
    assert {"event": "skipped", "call": 1, "instance": "②",
            "detail": "dead branch: †state.receipt was not written (call 0 (pay) [②] took "
                      "†state.error instead)"} in report["trace"]


def test_the_trace_lists_each_calls_events_in_order(interpreter: str) -> None:
    result = dry_run(PAYMENT, PAYMENT_CONTEXT, interpreter=interpreter, mocks={
        "processPayment": {"return": 1}, "confirmOrder": {"return": 2},
        "reportFailure": {"return": 3}})
    for call in range(3):
        events = [e["event"] for e in result.trace if e["call"] == call]
        assert events in (["started", "wrote", "executed"], ["skipped"])


def test_sync_and_asyncio_reports_agree_less_the_trace() -> None:
    context = [{"type": "input", "_instance": i, "x": n} for n, i in enumerate("①②③④")]
    plan = [{"_tool": "a", "x": "†input.x", "_outputPath": "†state.a || †state.aerr"},
            {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b", "_outputMethod": "push"},
            {"_tool": "c", "e": "†state.aerr", "_outputPath": "†data.log"}]
    mocks = {"a": {"by_instance": {"①": {"return": 1, "delay_ms": 20},
                                   "②": {"raise": {"type": "E", "message": "e"}},
                                   "③": {"return": 3}, "④": {"return": 4, "delay_ms": 5}}},
             # Not a sequence: which instance's b is invoked first follows a's delays
             # under asyncio, so a sequence would be timing-dependent here (X2).
             "b": {"by_instance": {"①": {"return": 1}, "②": {"return": 2},
                                   "③": {"raise": {"type": "X", "message": "x"}, "delay_ms": 10},
                                   "④": {"return": 4}}},
             "c": {"echo": True, "delay_ms": 3}}
    reports = [dry_run(plan, context, mocks=mocks, instances=True, interpreter=name).report()
               for name in INTERPRETERS]
    for report in reports:
        report.pop("trace")
    assert reports[0] == reports[1]
