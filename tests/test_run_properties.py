"""Hypothesis properties for running plans (SEMANTICS §7, "Determinism").

On generated race-free plans (chains, fan-outs, fan-ins, branches taken and not, all
five methods, fire-and-forget calls, instances, approvals, random activity delays):

- the sync and asyncio interpreters with real activities, and the dry run under sync and
  asyncio with the equivalent mocks, give the same report less its trace (the same
  calls, outcomes, errors in the same order, and the same final data per kind and
  instance), whatever the timing and the concurrency limit;
- every run terminates with status ``completed``, and every call ends with exactly one
  outcome (executed, skipped or failed) and exactly one final trace event;
- exploration terminates too, and in every combination each call has one outcome.

Plans are race-free by construction: every call writes its own paths, except a chain of
calls that share ``†state.shared``, each reading the token its predecessor wrote, so all
writers of a path are ordered. The compiler must agree (no write-race, no scope-race).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from equivalents import activity_of
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from obelisk import compile_plan, dry_run, run_async, run_sync
from obelisk.interpreters.dryrun import DRY_RUN_DATE
from obelisk.interpreters.reporting import report

RUNS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
EXPLORE = settings(deadline=None, max_examples=80, suppress_health_check=[HealthCheck.too_slow])

METHODS = ["set", "merge", "assign", "push", "concat"]
INSTANCE_SETS = [[], ["①", "②"], ["①", "②", "③"]]

scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "ж"]), st.booleans())
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["k", "m", "n"]), inner, max_size=2)),
    max_leaves=5)


@st.composite
def behaviours(draw: st.DrawFn, index: int, alternatives: list[list[str]],
               has_scopes: bool) -> dict[str, Any]:
    """One mock: what a call's tool does (the same for every instance)."""
    forms = ["return", "return", "raise", "echo"]
    if len(alternatives) >= 2:
        forms += ["branch", "branch"]
    if has_scopes:
        forms.append("echo_scopes")
    if not alternatives:
        forms.append("branch")  # to nothing declared: a BranchContract
    form = draw(st.sampled_from(forms))
    mock: dict[str, Any]
    if form == "return":
        mock = {"return": draw(values)}
    elif form == "raise":
        mock = {"raise": {"type": f"E{index}", "message": draw(st.sampled_from(["m", "x"]))}}
        if draw(st.booleans()):
            mock["raise"]["data"] = draw(values)
    elif form == "branch":
        targets = [t for group in alternatives for t in group] + ["†state.undeclared"]
        mock = {"branch": draw(st.sampled_from(targets)), "value": draw(values)}
    else:
        mock = {form: True}
    if draw(st.integers(0, 2)) == 0:
        mock["delay_ms"] = draw(st.integers(1, 4))
    return mock


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    instances = draw(st.sampled_from(INSTANCE_SETS))
    context: list[Any] = [{"type": "input", "input": {"x": 1, "s": "text", "list": [1]}}]
    for instance in instances:
        context.append({"type": "input", "_instance": instance, "x": draw(st.integers(2, 9))})
    if draw(st.booleans()):
        context.append({"type": "state", "state": {"shared": draw(values)}})

    plan: list[Any] = []
    mocks: dict[str, Any] = {}
    readable: list[str] = []     # targets of earlier calls: reading them adds an edge
    token: str | None = None     # the token of the last writer of †state.shared
    for index in range(draw(st.integers(1, 9))):
        call: dict[str, Any] = {"_tool": f"t{index}"}

        # Parameters: inputs, earlier outputs (with fallbacks and gates), literals.
        for number in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["input", "read", "fallback", "gate", "literal",
                                         "nested"]))
            if kind in ("read", "fallback", "gate", "nested") and not readable:
                kind = "input"
            if kind == "input":
                param: Any = draw(st.sampled_from(["†input.x", "†input.s", "†input.list",
                                                   "†input.nothing || 'dflt'"]))
            elif kind == "read":
                param = draw(st.sampled_from(readable))
            elif kind == "fallback":
                param = f"{draw(st.sampled_from(readable))} || 'fallback'"
            elif kind == "gate":
                param = f"{draw(st.sampled_from(readable))} && {draw(st.sampled_from(readable))}"
            elif kind == "nested":
                param = {"deep": [draw(st.sampled_from(readable)), 1]}
            else:
                param = draw(values)
            call[f"p{number}"] = param

        # Output: none (fire-and-forget), one path, a fan-out, or 2-3 alternatives.
        shape = draw(st.sampled_from(["none", "one", "fanout", "two", "three"]))
        counts = {"none": [], "one": [1], "fanout": [2], "two": [1, 2], "three": [2, 1, 1]}[shape]
        alternatives = [
            [f"†{'state' if (alt + k) % 2 == 0 else 'data'}.c{index}_{alt}_{k}"
             for k in range(count)]
            for alt, count in enumerate(counts)]
        explicit = instances and draw(st.integers(0, 4)) == 0
        if explicit:
            call["_instance"] = draw(st.sampled_from(instances))  # runs once, in one instance
        if alternatives and not explicit and draw(st.integers(0, 2)) == 0:
            # join the chain of writers of †state.shared
            alternatives[0] += ["†state.shared", f"†state.tok{index}"]
            if token is not None:
                call["after"] = f"{token} || 'first'"
            token = f"†state.tok{index}"
        if alternatives:
            groups = [" && ".join(g) if len(alternatives) == 1 or len(g) == 1
                      else "(" + " && ".join(g) + ")" for g in alternatives]
            call["_outputPath"] = " || ".join(groups)
            call["_outputMethod"] = draw(st.sampled_from(METHODS))
            if not explicit:  # what one instance writes, the others cannot read
                readable += [t for group in alternatives for t in group
                             if t != "†state.shared" and not t.startswith("†state.tok")]
        has_scopes = draw(st.booleans())
        if has_scopes:
            call["_scopes"] = ["input"]

        if instances and draw(st.booleans()):
            mocks[call["_tool"]] = {"by_instance": {
                i: draw(behaviours(index, alternatives, has_scopes)) for i in instances}}
        else:
            mocks[call["_tool"]] = draw(behaviours(index, alternatives, has_scopes))
        plan.append(call)

    return {
        "plan": plan, "context": context, "mocks": mocks, "instances": bool(instances),
        "denied": draw(st.sets(st.integers(0, 6), max_size=2)),
        "replaced": draw(st.sets(st.integers(0, 6), max_size=1)),
        "max_concurrency": draw(st.sampled_from([None, None, 1, 2])),
    }


def approval(scenario: dict[str, Any]) -> Any:
    """A deterministic approval hook: deny some tools, replace the parameters of others."""
    def approve(call: dict[str, Any]) -> Any:
        index = int(call["_tool"][1:])
        if index in scenario["denied"]:
            return f"t{index} is not allowed"
        if index in scenario["replaced"]:
            return {"replaced": index}
        return True
    return approve


def without_delays(mock: Any) -> Any:
    if isinstance(mock, dict):
        return {k: without_delays(v) for k, v in mock.items() if k != "delay_ms"}
    return mock


def run_everywhere(scenario: dict[str, Any]) -> dict[str, dict[str, Any]]:
    plan, context, mocks = scenario["plan"], scenario["context"], scenario["mocks"]
    common: dict[str, Any] = dict(instances=scenario["instances"], approve=approval(scenario))
    sync = run_sync(plan, context, clock=lambda: DRY_RUN_DATE, **common, trace=True, activities={
        tool: activity_of(without_delays(mock), "plain") for tool, mock in mocks.items()})
    aio = asyncio.run(run_async(
        plan, context, clock=lambda: DRY_RUN_DATE, max_concurrency=scenario["max_concurrency"],
        **common, trace=True, activities={tool: activity_of(mock, "async") for tool, mock in mocks.items()}))
    return {
        "sync": report(sync), "asyncio": report(aio),
        "dry-sync": dry_run(plan, context, mocks=mocks, **common).report(),
        "dry-asyncio": dry_run(plan, context, mocks=mocks, interpreter="asyncio",
                               **common).report(),
    }


def assert_race_free(scenario: dict[str, Any]) -> None:
    compiled = compile_plan(scenario["plan"], context=scenario["context"],
                            instances=scenario["instances"])
    codes = {d.code for d in compiled.diagnostics}
    assert compiled.ok, [d.message for d in compiled.errors]
    assert not codes & {"write-race", "scope-race"}, scenario["plan"]


FINAL_EVENTS = {"executed", "skipped", "failed", "denied"}


def assert_one_outcome_each(found: dict[str, Any]) -> None:
    assert found["status"] == "completed"
    for call in found["calls"]:
        assert call["outcome"] in ("executed", "skipped", "failed"), call
        ident = (call["call"], call["instance"])
        final = [e for e in found["trace"]
                 if (e["call"], e.get("instance")) == ident and e["event"] in FINAL_EVENTS]
        assert len(final) == 1, (ident, found["trace"])
        started = [e for e in found["trace"]
                   if (e["call"], e.get("instance")) == ident and e["event"] == "started"]
        assert len(started) <= 1
    # error messages are ordered by call index, then instance
    keys = [(c["call"], c["instance"] or "") for c in found["calls"] if "error" in c]
    assert keys == sorted(keys) and len(keys) == len(found["errors"])


@pytest.mark.slow
@RUNS
@given(scenarios())
def test_every_interpreter_gives_the_same_report(scenario: dict[str, Any]) -> None:
    assert_race_free(scenario)
    reports = run_everywhere(scenario)
    for found in reports.values():
        assert_one_outcome_each(found)
        found.pop("trace")
    expected = reports["sync"]
    for name, found in reports.items():
        assert found == expected, name
    for call in expected["calls"]:  # what the generated plans cover
        event(f"a call {call['outcome']}")
        if call["reason"].startswith("dead branch"):
            event("a dead branch")
        if call.get("error"):
            event(f"error {call['error'] if call['error'][0] != 'E' else 'raised'}")
        if "routed" in call["reason"] or "chose" in call["reason"]:
            event("a branch taken")
    if scenario["instances"]:
        event("instances")


@pytest.mark.slow
@EXPLORE
@given(scenarios())
def test_exploration_terminates_with_one_outcome_per_call(scenario: dict[str, Any]) -> None:
    assert_race_free(scenario)
    result = dry_run(scenario["plan"], scenario["context"], mocks=scenario["mocks"],
                     instances=scenario["instances"], explore=True, limit=12)
    explore = result.report()["explore"]
    assert explore["run"] == min(explore["total"], 12)
    assert explore["truncated"] == (explore["total"] > 12)
    for combo in explore["combinations"]:
        ids = combo["executed"] + combo["skipped"] + combo["failed"]
        assert len(ids) == len(result.calls)
        assert sorted(map(str, ids)) == sorted(
            str(c.call if c.instance is None else [c.call, c.instance]) for c in result.calls)
