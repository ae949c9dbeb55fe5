"""Spec audit: rules of SEMANTICS.md and CONFORMANCE.md that no other test pinned down.

Each test cites the sentence it checks. Tests marked ``xfail(strict=True)`` state what the
spec says where obelisk does something else today (see the audit report); they turn into
failures as soon as obelisk is fixed, so the mark must then be removed.
Behaviour visible through the vector format is in tests/conformance/audit-*.json.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
from typing import Any

import pytest
from clirun import cli

from obelisk import (
    MISSING,
    Context,
    Deny,
    compile_plan,
    dry_run,
    resolve,
    run_async,
    run_sync,
)
from obelisk.interpreters.reporting import report
from obelisk.kit.conformance import check_vector

INTERPRETERS = ["sync", "asyncio"]


def run_both(plan: list[Any], context: list[Any] | None = None, **kwargs: Any) -> list[Any]:
    """The same real run under run_sync and run_async."""
    return [run_sync(plan, context, **kwargs), asyncio.run(run_async(plan, context, **kwargs))]


# -- SEMANTICS §5: what an activity receives ----------------------------------------------


def test_unknown_meta_properties_reach_the_activity_unresolved() -> None:
    """§5: "Meta-properties are never resolved ... `_output` ... is a literal. Unknown
    meta-properties are kept and passed through to the activity." §7 step 5: the activity
    gets "the resolved call (meta-properties included)"."""
    plan = [{"_tool": "t", "p": "†state.q", "_custom": "†state.y", "_reasoning": {"a": "†state.q"},
             "_output": "†state.q", "_outputPath": "†state.r"}]
    context = [{"type": "state", "state": {"q": 5, "y": "Y"}}]
    for interpreter in ("sync", "asyncio"):
        seen: list[dict[str, Any]] = []

        def act(call: dict[str, Any], tool: Any, ctx: Context, seen: list[Any] = seen) -> Any:
            seen.append(call)
            return 1

        if interpreter == "sync":
            run_sync(plan, context, activities={"t": act})
        else:
            asyncio.run(run_async(plan, context, activities={"t": act}))
        assert seen == [{"_tool": "t", "p": 5, "_custom": "†state.y",
                         "_reasoning": {"a": "†state.q"}, "_output": "†state.q",
                         "_outputPath": "†state.r"}], interpreter


def test_a_registered_activity_runs_even_when_the_call_has_output() -> None:
    """§7 step 4: the executor is the tool's `_activity`, else a registered activity, else
    latent; only "a latent call with `_output` has that as its result"."""
    for result in run_both([{"_tool": "t", "_output": "own", "_outputPath": "†state.a"}],
                           activities={"t": lambda call, tool, ctx: "activity"}):
        assert resolve(result.context, "†state.a") == "activity"


def test_the_scoped_context_is_read_only_for_the_run() -> None:
    """§7 step 5: the activity gets the scoped context, read-only: whatever it does with
    it does not change the run's context."""
    def meddle(call: dict[str, Any], tool: Any, ctx: Context) -> Any:
        ctx.append({"type": "state", "state": {"injected": True}})
        return ctx.value("state", ()) is not MISSING

    plan = [{"_tool": "t", "_scopes": ["state"], "_outputPath": "†data.r"}]
    for result in run_both(plan, [{"type": "state", "state": {"a": 1}}], activities={"t": meddle}):
        assert resolve(result.context, "†state") == {"a": 1}
        assert resolve(result.context, "†data.r") is True


# -- SEMANTICS §7: approval, fire-and-forget, instancing ----------------------------------


def test_a_denied_call_is_an_error_message_never_routed_to_its_error_branch() -> None:
    """§7 step 3: deny gives "an error message of type `Denied`"; unlike an activity's
    exception it is not written to the last alternative."""
    plan = [{"_tool": "pay", "_outputPath": "†state.ok || †state.err"},
            {"_tool": "handle", "e": "†state.err", "_outputPath": "†state.h"}]
    for result in run_both(plan, activities={"pay": lambda c, t, x: 1, "handle": lambda c, t, x: 1},
                           approve=lambda call: Deny("no")):
        assert [(c.call, c.outcome, c.error) for c in result.calls] == [
            (0, "failed", "Denied"), (1, "skipped", None)]
        assert resolve(result.context, "†state") is MISSING
        denied: Any = result.errors[0]
        assert denied["data"]["error"] == {"type": "Denied", "message": "no"}


def test_fire_and_forget_is_finished_before_the_run_returns() -> None:
    """§7 step 6: "a call without `_outputPath` is fire-and-forget: no other call can wait
    on it, its result is dropped, but the run still finishes it before returning and
    records its errors"."""
    finished: list[str] = []

    async def slow_ok(call: dict[str, Any], tool: Any, ctx: Context) -> Any:
        await asyncio.sleep(0.05)
        finished.append("ok")
        return {"dropped": True}

    async def slow_fail(call: dict[str, Any], tool: Any, ctx: Context) -> Any:
        await asyncio.sleep(0.08)
        finished.append("fail")
        raise RuntimeError("log is down")

    plan = [{"_tool": "okLog"}, {"_tool": "badLog"}, {"_tool": "t", "_outputPath": "†state.r"}]
    compiled = compile_plan(plan)
    assert compiled.successors[0] == compiled.successors[1] == ()  # nobody waits on them
    result = asyncio.run(run_async(plan, activities={
        "okLog": slow_ok, "badLog": slow_fail, "t": lambda c, t, x: 1}))
    assert sorted(finished) == ["fail", "ok"]
    assert result.status == "completed"
    assert [(c.call, c.outcome, c.error) for c in result.calls] == [
        (0, "executed", None), (1, "failed", "RuntimeError"), (2, "executed", None)]
    assert resolve(result.context, "†state") == {"r": 1}  # the dropped result wrote nothing
    errors: list[Any] = list(result.errors)
    assert [e["data"]["error"]["message"] for e in errors] == ["log is down"]


def test_instances_come_from_data_messages_only() -> None:
    """§7 Instancing: "copied once per instance id found in the context's data messages"."""
    context = [{"type": "text", "text": "hi", "_instance": "③"},
               {"type": "error", "data": {"call": {}, "error": {"type": "X", "message": "m"}},
                "_instance": "④"},
               {"type": "state", "_instance": "①", "a": 1}]
    plan = compile_plan([{"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}],
                        context=context, instances=True)
    assert [(n.index, n.instance) for n in plan.nodes] == [(0, "①")]


# -- CONFORMANCE: the dry-run report ------------------------------------------------------


def test_views_leave_a_missing_global_value_out() -> None:
    """CONFORMANCE report: `views` holds, for every data kind, the value of †kind for
    global and for each instance id; "a MISSING value is left out"."""
    result = dry_run([{"_tool": "t", "x": "†input.a", "_outputPath": "†state.b"}],
                     [{"type": "input", "input": {"a": 1}, "_instance": "①"},
                      {"type": "data", "kind": "user", "data": {"n": "A"}}],
                     mocks={"t": {"return": 2}}, instances=True)
    assert report(result.run)["views"] == {
        "input": {"①": {"a": 1}}, "state": {"①": {"b": 2}},
        "user": {"global": {"n": "A"}, "①": {"n": "A"}}}


@pytest.mark.parametrize("interpreter", INTERPRETERS)
def test_report_calls_and_errors_are_ordered_by_call_then_instance(interpreter: str) -> None:
    """CONFORMANCE: "`calls` and `errors` are ordered by call index, then instance", even
    when a later call fails first."""
    context = [{"type": "state", "_instance": "①", "a": 1}, {"type": "state", "_instance": "②", "a": 2}]
    plan = [{"_tool": "slow", "x": "†state.a", "_outputPath": "†state.s"},
            {"_tool": "fast", "x": "†state.a", "_outputPath": "†state.f"}]
    mocks = {"slow": {"raise": {"type": "Slow", "message": "m"}, "delay_ms": 40},
             "fast": {"by_instance": {"②": {"raise": {"type": "Fast2", "message": "m"}},
                                      "①": {"raise": {"type": "Fast1", "message": "m"},
                                            "delay_ms": 10}}}}
    rep = dry_run(plan, context, mocks=mocks, instances=True, interpreter=interpreter).report()
    assert [(c["call"], c["instance"]) for c in rep["calls"]] == [(0, "①"), (0, "②"), (1, "①"), (1, "②")]
    assert [(e["data"]["error"]["type"], e["_instance"]) for e in rep["errors"]] == [
        ("Slow", "①"), ("Slow", "②"), ("Fast1", "①"), ("Fast2", "②")]


# -- CONFORMANCE: the runner --------------------------------------------------------------

PLAN = [{"_tool": "t", "_outputPath": "†state.x"}]
RUNS = {"id": "v", "plan": PLAN, "mocks": {"t": {"return": 1}}}

# (name, vector, words the problem must contain): each must FAIL.
MALFORMED = [
    ("no id", {"cases": [{"ref": "†state", "missing": True}]}, "id"),
    ("neither cases nor plan", {"id": "v"}, "cases"),
    ("plan without expect", {"id": "v", "plan": PLAN}, "expect"),
    ("unknown vector field", {"id": "v", "cases": [], "mock": {}}, "mock"),
    ("unknown expect field", {**RUNS, "expect": {"executd": [0]}}, "executd"),
    ("unknown case field", {"id": "v", "cases": [{"ref": "†state", "missing": True, "x": 1}]}, "x"),
    ("two answers", {"id": "v", "cases": [{"ref": "†state", "missing": True, "value": 1}]}, "exactly one"),
    ("no answer", {"id": "v", "cases": [{"ref": "†state"}]}, "exactly one"),
    ("missing false", {"id": "v", "cases": [{"ref": "†state", "missing": False}]}, "missing"),
    ("unknown error kind", {"id": "v", "cases": [{"ref": "†state", "error": "type"}]}, "error"),
    ("unknown matcher field", {"id": "v", "plan": PLAN, "expect": {"diagnostics": [{"code": "x", "message": "m"}]}}, "message"),
    ("run expected of an invalid plan", {"id": "v", "plan": [{"_tool": "t", "a": "†state.nope"}],
     "expect": {"diagnostics": [{"code": "dangling-reference"}], "executed": []}}, "cannot run"),
    ("bad mock", {**RUNS, "mocks": {"t": {"retrun": 1}}, "expect": {"executed": [0]}}, "retrun"),
    ("bad context", {"id": "v", "cases": [], "context": [{"type": "state", "state": {}, "a": 1}]}, "context"),
]


@pytest.mark.parametrize(("name", "vector", "words"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_the_runner_fails_a_vector_it_cannot_read(name: str, vector: Any, words: str) -> None:
    """CONFORMANCE: "Vectors that a reader cannot parse, or that use a field not described
    here, FAIL with a message naming the problem; they are never skipped." Also: `id`
    required, `expect` required with `plan`, a vector has cases or plan, exactly one of
    value/missing/error, and "When the diagnostics contain errors, the plan is not run,
    and values, executed, skipped, failed and errors must be absent"."""
    problems = check_vector(vector)
    assert problems, name
    assert any(words in p for p in problems), problems


# (name, expect): each is wrong about RUNS (one call that returns 1 to †state.x).
WRONG = [
    ("executed", {"executed": []}),
    ("skipped", {"skipped": [0]}),
    ("failed", {"failed": [0]}),
    ("errors listed but none", {"errors": [{"call": 0, "type": "E"}]}),
    ("value", {"values": [{"ref": "†state.x", "value": 2}]}),
    ("missing", {"values": [{"ref": "†state.x", "missing": True}]}),
    ("instance form", {"executed": [[0, "①"]]}),
    ("diagnostic not reported", {"diagnostics": [{"code": "cycle"}]}),
    ("severity", {"diagnostics": [{"code": "external-reference", "severity": "error"}]}),
]


@pytest.mark.parametrize(("name", "expect"), WRONG, ids=[w[0] for w in WRONG])
def test_the_runner_fails_every_wrong_expectation(name: str, expect: Any) -> None:
    """CONFORMANCE plan vectors: each listed diagnostic must be reported (matching only the
    fields given); `values` are resolve cases on the final context; `executed`,
    `skipped`, `failed` are exact sets; `errors`, when given, is exact."""
    assert check_vector({**RUNS, "expect": expect}), name


def test_the_runner_checks_errors_exactly_and_not_reported_and_only_listed_errors() -> None:
    """CONFORMANCE: `errors` "when given, the list is exact"; `not_reported` matchers must
    match no diagnostic; `only_listed_errors` (default true) refuses unlisted errors,
    while warnings and infos that are not listed never fail a vector."""
    raising = {**RUNS, "mocks": {"t": {"raise": {"type": "E", "message": "m"}}}}
    assert check_vector({**raising, "expect": {"errors": []}})
    assert not check_vector({**raising, "expect": {"errors": [{"call": 0, "type": "E"}]}})
    racing = {"id": "v", "plan": PLAN + PLAN}
    assert check_vector({**racing, "expect": {"not_reported": [{"code": "write-race"}]}})
    assert not check_vector({**racing, "expect": {}})  # an unlisted warning is fine
    dangling = {"id": "v", "plan": [{"_tool": "t", "a": "†state.nope"}]}
    assert check_vector({**dangling, "expect": {}})
    assert not check_vector({**dangling, "expect": {"only_listed_errors": False}})
    assert not check_vector({"id": "v", "plan": PLAN + PLAN, "expect": {
        "diagnostics": [{"code": "write-race", "severity": "warning", "calls": [1, 0],
                         "call": 0, "pointer": "/_outputPath"}]}})


def test_a_compile_only_vector_is_not_run() -> None:
    """CONFORMANCE: "A vector whose `expect` has none of these five is compile-only and is
    not run either": a mock that could not run (a NoMock) does not fail it."""
    assert not check_vector({"id": "v", "plan": [{"_tool": "t", "_outputPath": "†state.x"}],
                             "expect": {"diagnostics": []}})


def test_the_command_searches_folders_and_reports_every_vector(tmp_path: pathlib.Path) -> None:
    """CONFORMANCE: `obelisk conformance PATH...` takes "files or folders, folders searched
    for *.json"; one line per vector, then exactly `N passed, N failed`; exit 0 only when
    every vector passes. Duplicate ids FAIL (ids are unique)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.json").write_text(json.dumps(
        {"id": "a", "cases": [{"ref": "†state", "missing": True}]}), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a vector", encoding="utf-8")
    single = tmp_path / "b.vector"
    single.write_text(json.dumps([{"id": "b", "cases": []}]), encoding="utf-8")
    code, out, _ = cli("conformance", str(tmp_path), str(single))
    assert code == 0, out
    assert out.splitlines() == ["PASS a", "PASS b", "2 passed, 0 failed"]
    (tmp_path / "sub" / "c.json").write_text(json.dumps(
        {"id": "a", "cases": [{"ref": "†state", "missing": True}]}), encoding="utf-8")
    code, out, _ = cli("conformance", str(tmp_path))
    assert code == 1
    assert "duplicate id" in out and out.splitlines()[-1] == "1 passed, 1 failed"


# -- contradictions the audit found, now fixed ---------------------------------------------

BAD_SHAPES = [
    ("executed is a number", {"executed": 0}),
    ("executed pair of one", {"executed": [[0]]}),
    ("executed holds an object", {"executed": [{"a": 1}, 2]}),
    ("executed holds null", {"executed": [None, 0]}),
    ("values is a number", {"values": 5}),
    ("errors holds a number", {"errors": [5]}),
    ("errors is a number", {"errors": 5}),
    ("not_reported is a number", {"not_reported": 5}),
]


@pytest.mark.parametrize(("name", "expect"), BAD_SHAPES, ids=[b[0] for b in BAD_SHAPES])
def test_a_malformed_expect_fails_the_vector_instead_of_crashing(name: str, expect: Any) -> None:
    """CONFORMANCE: "Vectors that a reader cannot parse ... FAIL with a message naming the
    problem; they are never skipped." A malformed `expect` member is such a vector."""
    assert check_vector({**RUNS, "expect": expect}), name


def test_one_malformed_vector_does_not_stop_the_others(tmp_path: pathlib.Path) -> None:
    """CONFORMANCE: the command "prints one line per vector (id, PASS or FAIL ...) and,
    last, a line of exactly the form `N passed, N failed`"; unreadable vectors FAIL."""
    path = tmp_path / "v.json"
    path.write_text(json.dumps([{**RUNS, "id": "bad", "expect": {"executed": 0}},
                                {"id": "good", "cases": [{"ref": "†state", "missing": True}]}]),
                    encoding="utf-8")
    code, out, err = cli("conformance", str(path))
    assert code == 1
    assert "FAIL bad" in out and "PASS good" in out
    assert out.splitlines()[-1] == "1 passed, 1 failed"


def test_an_unknown_field_in_an_errors_matcher_fails_the_vector() -> None:
    """CONFORMANCE: vectors "that use a field not described here, FAIL". An `errors` entry
    is matched by call index, instance and type; `message` is not a described field."""
    vector = {**RUNS, "mocks": {"t": {"raise": {"type": "E", "message": "m"}}},
              "expect": {"errors": [{"call": 0, "type": "E", "message": "something else"}]}}
    assert check_vector(vector)


@pytest.mark.parametrize("interpreter", INTERPRETERS)
def test_a_sequence_mock_gives_one_entry_per_invocation_in_order(interpreter: str) -> None:
    """CONFORMANCE Mocks: `{"sequence": [mock, mock, ...]}  // one per invocation, in order`.

    Here the order of invocations does not depend on timing: call 0 reads what call 1
    writes, so call 1 is invoked first and must get the first entry; and a call that is
    skipped is never invoked, so it takes no entry."""
    chain = [{"_tool": "t", "x": "†state.b", "_outputPath": "†state.a"},
             {"_tool": "t", "_outputPath": "†state.b"}]
    mocks = {"t": {"sequence": [{"return": "first"}, {"return": "second"}]}}
    result = dry_run(chain, mocks=mocks, interpreter=interpreter)
    assert resolve(result.context, "†state") == {"b": "first", "a": "second"}
    skipping = [{"_tool": "p", "_outputPath": "†state.ok || †state.err"},
                {"_tool": "t", "e": "†state.err", "_outputPath": "†state.a"},
                {"_tool": "t", "_outputPath": "†state.b"}]
    result = dry_run(skipping, mocks={"p": {"return": 1}, **mocks}, interpreter=interpreter)
    assert resolve(result.context, "†state.b") == "first"


def test_the_dry_run_uses_output_only_for_latent_calls() -> None:
    """SEMANTICS §7: the dry run takes a call's result "from a mock ..., else from its
    `_output` when it is latent and has one, else from an example generated from the
    tool's `_output` schema, else it fails with `NoMock`". §7 step 4: a tool with
    `_activity` set is run by that activity, so its calls are not latent."""
    tools = [{"type": "object", "_activity": "impl",
              "properties": {"_tool": {"const": "a"}, "_output": {"type": "string", "const": "example"}}},
             {"type": "object", "_activity": "impl", "properties": {"_tool": {"const": "b"}}}]
    plan = [{"_tool": "a", "_output": "example", "_outputPath": "†state.a"},
            {"_tool": "b", "_output": "own", "_outputPath": "†state.b"}]
    result = dry_run(plan, tools=tools)
    assert [(c.outcome, c.error) for c in result.calls] == [("executed", None), ("failed", "NoMock")]
    assert resolve(result.context, "†state.b") is MISSING
