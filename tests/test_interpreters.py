"""One suite, every interpreter (SEMANTICS §7).

Each test runs under seven interpreters: the sync and the asyncio interpreter with real
activities (plain functions, and ``async def`` ones), the Dask interpreter on a real
cluster (tests/daskcluster.py: its workers do what the mocks say), and the dry run under
sync and asyncio with the equivalent mocks. A scenario states its tools' behaviour once, as a
CONFORMANCE.md mock (or a function); ``equivalents.activity_of`` turns a mock into the
activity that does the same thing, so the real and the dry interpreters see the same world.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from equivalents import activity_of

from obelisk import (
    MISSING,
    ActivityError,
    Approve,
    Branch,
    Context,
    Deny,
    Replace,
    RunResult,
    dry_run,
    resolve,
    run_async,
    run_sync,
)
from obelisk.core.plain import thaw
from obelisk.interpreters.dryrun import DRY_RUN_DATE
from obelisk.interpreters.reporting import views

# -- the interpreters -------------------------------------------------------------------


class Runner:
    """Runs a plan under one interpreter, with mocks or their equivalent activities."""

    def __init__(self, name: str, cluster: Any = None) -> None:
        self.name = name
        self.kind, self.style = name.split("-")
        self.cluster = cluster  # the Dask interpreter's

    @property
    def dry(self) -> bool:
        return self.kind == "dry"

    def __call__(self, plan: list[Any], context: list[Any] | None = None, *,
                 mocks: Mapping[str, Any] | None = None, tools: list[Any] | None = None,
                 instances: bool = False, approve: Callable[..., Any] | None = None) -> RunResult:
        mocks = dict(mocks or {})
        ctx = context or []
        if self.dry:
            return dry_run(plan, ctx, mocks=mocks, tools=tools or (), instances=instances,
                           interpreter=self.style, approve=approve).run
        activities = {name: activity_of(m, self.style) for name, m in mocks.items()}
        kw: dict[str, Any] = dict(activities=activities, tools=tools or (), instances=instances,
                                  approve=approve, clock=lambda: DRY_RUN_DATE)
        if self.kind == "sync":
            return run_sync(plan, ctx, **kw)
        if self.kind == "dask":
            return self.on_dask(plan, ctx, mocks, kw)
        return asyncio.run(run_async(plan, ctx, **kw))

    def on_dask(self, plan: list[Any], ctx: list[Any], mocks: dict[str, Any],
                kw: dict[str, Any]) -> RunResult:
        """On the cluster, each worker doing what the mocks say; a function mock (which
        workers could not import) makes the run's calls run in the client."""
        import dask_activities
        from daskcluster import on_cluster

        from obelisk import ActivityPath, run_dask

        by_path = ActivityPath("dask_activities", "mocked")
        kw["activities"] = {name: m if callable(m) else by_path for name, m in mocks.items()}
        placement = "local" if any(callable(m) for m in mocks.values()) else "dask"
        plain = {name: m for name, m in mocks.items() if not callable(m)}

        async def run(client: Any) -> RunResult:
            await client.run(dask_activities.install, plain)
            return await run_dask(plan, ctx, client=client, executor=placement, **kw)

        return on_cluster(self.cluster, run)

    def __repr__(self) -> str:
        return self.name


INTERPRETERS = ["sync-plain", "sync-async", "asyncio-plain", "asyncio-async",
                "dask-plain", "dry-sync", "dry-asyncio"]


@pytest.fixture(scope="module")
def dask_cluster() -> Any:
    from daskcluster import local_cluster

    yield from local_cluster()


@pytest.fixture(params=INTERPRETERS)
def run(request: pytest.FixtureRequest) -> Runner:
    if request.param.startswith("dask"):  # the cluster starts with the first such test
        return Runner(request.param, request.getfixturevalue("dask_cluster"))
    return Runner(request.param)


@pytest.fixture(params=["sync-plain", "asyncio-plain"])
def real(request: pytest.FixtureRequest) -> Runner:
    return Runner(request.param)


# -- reading a result -------------------------------------------------------------------


def ident(call: Any) -> Any:
    return call.call if call.instance is None else [call.call, call.instance]


def outcomes(result: RunResult) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"executed": [], "skipped": [], "failed": []}
    for call in result.calls:
        out.setdefault(call.outcome, []).append(ident(call))
    return out


def errors(result: RunResult) -> list[Any]:
    """(call, type) per error message, or (call, instance, type), in context order."""
    out = []
    for message in result.errors:
        index = next(i for i, c in enumerate(result.plan.calls) if thaw(c) == message["data"]["call"])
        error = message["data"]["error"]["type"]
        out.append((index, message["_instance"], error) if "_instance" in message else (index, error))
    return out


def val(result: RunResult, ref: str, instance: str | None = None) -> Any:
    return resolve(result.context, ref, instance)


def check(result: RunResult, expect: Mapping[str, Any]) -> None:
    """Check a result against a table entry's expectations (CONFORMANCE.md's fields)."""
    got = outcomes(result)
    for key in ("executed", "skipped", "failed"):
        if key in expect:
            assert sorted(map(str, got[key])) == sorted(map(str, expect[key])), (key, got)
    if "errors" in expect:
        assert errors(result) == [tuple(e) for e in expect["errors"]]
    for ref, want in expect.get("values", {}).items():
        instance = None
        if isinstance(want, tuple) and len(want) == 2 and want[0] == "@":
            raise AssertionError("use 'ref@instance' keys")
        if "@" in ref:
            ref, instance = ref.split("@")
        assert val(result, ref, instance) == want, (ref, instance)
    assert result.status == "completed"


# -- scenarios --------------------------------------------------------------------------

PAYMENT_PLAN = [
    {"_tool": "processPayment", "amount": "†input.amount",
     "_outputPath": "†state.receipt || †state.error"},
    {"_tool": "confirmOrder", "receipt": "†state.receipt", "_outputPath": "†state.confirmation"},
    {"_tool": "reportFailure", "error": "†state.error", "_outputPath": "†state.report"},
]
WEATHER_PLAN = [
    {"_tool": "getWeather", "city": "†input.city",
     "_outputPath": "†state.sunny || †state.notSunny || †state.weatherError"},
    {"_tool": "findPark", "weather": "†state.sunny", "_outputPath": "†state.suggestion"},
    {"_tool": "findMovie", "weather": "†state.notSunny", "_outputPath": "†state.suggestion"},
    {"_tool": "present", "suggestion": "†state.suggestion", "_outputPath": "†state.answer"},
]
OUTPUT_TOOL = {"type": "object", "properties": {
    "_tool": {"const": "t"}, "_output": {"type": "object", "required": ["id"],
                                         "properties": {"id": {"type": "integer"}}}}}
COMMENTS = [
    {"type": "input", "input": {"guidelines": "be kind"}},
    {"type": "input", "_instance": "①", "comment": "This is a great post!"},
    {"type": "input", "_instance": "②", "comment": "I disagree with this..."},
    {"type": "input", "_instance": "③", "comment": "This is spam."},
]

# id -> (plan, context, mocks, tools, instances, expectations)
SCENARIOS: dict[str, tuple[list[Any], list[Any], dict[str, Any], list[Any], bool, dict[str, Any]]] = {
    "chain": (
        [{"_tool": "fetchUserProfile", "userName": "†input.userName",
          "_outputPath": "†state.userProfileData"},
         {"_tool": "summarizeProfile", "profile": "†state.userProfileData",
          "_outputPath": "†state.profileSummary"}],
        [{"type": "input", "input": {"userName": "Alice"}}],
        {"fetchUserProfile": {"echo": True}, "summarizeProfile": {"echo": True}}, [], False,
        {"executed": [0, 1], "errors": [],
         "values": {"†state.profileSummary": {"profile": {"userName": "Alice"}}}},
    ),
    "chain-reversed-in-the-list": (
        [{"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
         {"_tool": "a", "_outputPath": "†state.a"}],
        [], {"a": {"return": 1}, "b": {"echo": True}}, [], False,
        {"executed": [0, 1], "values": {"†state.b": {"x": 1}}},
    ),
    "fan-out": (
        [{"_tool": "load", "_outputPath": "†state.user"},
         {"_tool": "greet", "name": "†state.user.name", "_outputPath": "†state.greeting"},
         {"_tool": "bill", "id": "†state.user.id", "_outputPath": "†state.bill"},
         {"_tool": "tag", "tags": "†state.user.tags", "_outputPath": "†state.tagged"}],
        [], {"load": {"return": {"name": "Alex", "id": 7, "tags": ["vip"]}},
             "greet": {"echo": True}, "bill": {"echo": True, "delay_ms": 5},
             "tag": {"echo": True}}, [], False,
        {"executed": [0, 1, 2, 3],
         "values": {"†state.greeting.name": "Alex", "†state.bill.id": 7,
                    "†state.tagged.tags": ["vip"]}},
    ),
    "fan-in": (
        [{"_tool": "p", "_outputPath": "†state.profile"},
         {"_tool": "q", "_outputPath": "†state.permissions"},
         {"_tool": "renderDashboard", "permissions": "†state.profile && †state.permissions",
          "both": ["†state.profile", "†state.permissions"], "_outputPath": "†state.dashboard"}],
        [], {"p": {"return": {"name": "A"}, "delay_ms": 10}, "q": {"return": ["read"]},
             "renderDashboard": {"echo": True}}, [], False,
        {"executed": [0, 1, 2],
         "values": {"†state.dashboard": {"permissions": ["read"],
                                         "both": [{"name": "A"}, ["read"]]}}},
    ),
    "fan-in-waits-for-a-skipped-writer": (
        [{"_tool": "p", "_outputPath": "†state.a || †state.aErr"},
         {"_tool": "q", "_outputPath": "†state.b"},
         {"_tool": "r", "x": "†state.a && †state.b", "_outputPath": "†state.r"}],
        [], {"p": {"raise": {"type": "E", "message": "e"}}, "q": {"return": 1}, "r": {"echo": True}},
        [], False,
        {"executed": [0, 1], "skipped": [2], "errors": [], "values": {"†state.r": MISSING}},
    ),
    "fan-out-output": (
        [{"_tool": "generateSummary", "text": "Long body of text here...",
          "_outputPath": "†data.user.summary && †data.audit.summary"},
         {"_tool": "read", "s": "†data.audit.summary", "_outputPath": "†state.seen"}],
        [], {"generateSummary": {"return": "short"}, "read": {"echo": True}}, [], False,
        {"executed": [0, 1],
         "values": {"†data.user.summary": "short", "†data.audit.summary": "short",
                    "†state.seen": {"s": "short"}}},
    ),
    "payment-succeeds": (
        PAYMENT_PLAN, [{"type": "input", "input": {"amount": 50}}],
        {"processPayment": {"return": {"id": "r-1"}}, "confirmOrder": {"echo": True},
         "reportFailure": {"echo": True}}, [], False,
        {"executed": [0, 1], "skipped": [2], "errors": [],
         "values": {"†state.receipt.id": "r-1", "†state.error": MISSING,
                    "†state.confirmation": {"receipt": {"id": "r-1"}}}},
    ),
    "payment-fails-to-error-branch": (
        PAYMENT_PLAN, [{"type": "input", "input": {"amount": 50}}],
        {"processPayment": {"raise": {"type": "CardDeclined", "message": "declined",
                                      "data": {"code": 51}}},
         "confirmOrder": {"echo": True}, "reportFailure": {"echo": True}}, [], False,
        {"executed": [0, 2], "skipped": [1], "errors": [],
         "values": {"†state.error": {"type": "CardDeclined", "message": "declined",
                                     "data": {"code": 51}},
                    "†state.receipt": MISSING, "†state.report.error.type": "CardDeclined"}},
    ),
    "payment-explicitly-chooses-the-error-branch": (
        PAYMENT_PLAN, [{"type": "input", "input": {"amount": 50}}],
        {"processPayment": {"branch": "†state.error", "value": {"code": "card_declined"}},
         "confirmOrder": {"echo": True}, "reportFailure": {"echo": True}}, [], False,
        {"executed": [0, 2], "skipped": [1], "errors": [],
         "values": {"†state.error": {"code": "card_declined"}}},
    ),
    "weather-sunny": (
        WEATHER_PLAN, [{"type": "input", "input": {"city": "Lisbon"}}],
        {"getWeather": {"return": {"sky": "clear"}}, "findPark": {"return": "a park"},
         "findMovie": {"return": "a movie"}, "present": {"echo": True}}, [], False,
        {"executed": [0, 1, 3], "skipped": [2], "errors": [],
         "values": {"†state.answer": {"suggestion": "a park"}}},
    ),
    "weather-middle-branch": (
        WEATHER_PLAN, [{"type": "input", "input": {"city": "London"}}],
        {"getWeather": {"branch": "†state.notSunny", "value": {"sky": "rain"}},
         "findPark": {"return": "a park"}, "findMovie": {"return": "a movie"},
         "present": {"echo": True}}, [], False,
        {"executed": [0, 2, 3], "skipped": [1], "errors": [],
         "values": {"†state.answer": {"suggestion": "a movie"}, "†state.notSunny.sky": "rain"}},
    ),
    "weather-error": (
        WEATHER_PLAN, [{"type": "input", "input": {"city": "Atlantis"}}],
        {"getWeather": {"raise": {"type": "NotFound", "message": "no such city"}},
         "findPark": {"return": "a park"}, "findMovie": {"return": "a movie"},
         "present": {"echo": True}}, [], False,
        {"executed": [0], "skipped": [1, 2, 3], "errors": [],
         "values": {"†state.weatherError": {"type": "NotFound", "message": "no such city"}}},
    ),
    "five-methods": (
        [{"_tool": "s", "_outputPath": "†state.a", "_outputMethod": "set"},
         {"_tool": "m", "_outputPath": "†state.m", "_outputMethod": "merge"},
         {"_tool": "as", "_outputPath": "†state.s", "_outputMethod": "assign"},
         {"_tool": "p", "_outputPath": "†state.p", "_outputMethod": "push"},
         {"_tool": "c", "_outputPath": "†state.c", "_outputMethod": "concat"}],
        [{"type": "state", "a": 1, "m": {"x": {"y": 1, "z": 1}, "k": 1},
          "s": {"x": {"y": 1, "z": 1}, "k": 1}, "p": [1], "c": [1]}],
        {"s": {"return": 2}, "m": {"return": {"x": {"y": 2}}}, "as": {"return": {"x": {"y": 2}}},
         "p": {"return": [2]}, "c": {"return": [2, 3]}}, [], False,
        {"executed": [0, 1, 2, 3, 4],
         "values": {"†state.a": 2, "†state.m": {"x": {"y": 2, "z": 1}, "k": 1},
                    "†state.s": {"x": {"y": 2}, "k": 1}, "†state.p": [1, [2]],
                    "†state.c": [1, 2, 3]}},
    ),
    "push-chain": (
        [{"_tool": "first", "_outputPath": "†state.log && †state.s1", "_outputMethod": "push"},
         {"_tool": "second", "after": "†state.s1", "_outputPath": "†state.log && †state.s2",
          "_outputMethod": "push"},
         {"_tool": "third", "after": "†state.s2", "_outputPath": "†state.log",
          "_outputMethod": "push"}],
        [], {"first": {"return": "a", "delay_ms": 10}, "second": {"return": "b"},
             "third": {"return": "c"}}, [], False,
        {"executed": [0, 1, 2], "values": {"†state.log": ["a", "b", "c"]}},
    ),
    "merge-into-a-missing-path-creates-it": (
        [{"_tool": "t", "_outputPath": "†state.user.profile", "_outputMethod": "merge"}],
        [], {"t": {"return": {"age": 3}}}, [], False,
        {"executed": [0], "values": {"†state.user": {"profile": {"age": 3}}}},
    ),
    "instances": (
        [{"_tool": "moderateComment", "comment": "†input.comment",
          "rules": "†input.guidelines", "_outputPath": "†state.decision"}],
        COMMENTS,
        {"moderateComment": {"by_instance": {"①": {"return": "approve"},
                                             "②": {"return": "approve", "delay_ms": 5},
                                             "③": {"return": "reject"}}}}, [], True,
        {"executed": [[0, "①"], [0, "②"], [0, "③"]], "errors": [],
         "values": {"†state.decision@①": "approve", "†state.decision@②": "approve",
                    "†state.decision@③": "reject", "†state.decision": MISSING}},
    ),
    "instances-echo-sees-its-own-input-over-global": (
        [{"_tool": "t", "comment": "†input.comment", "rules": "†input.guidelines",
          "_outputPath": "†state.seen"}],
        COMMENTS, {"t": {"echo": True}}, [], True,
        {"values": {"†state.seen@②": {"comment": "I disagree with this...",
                                      "rules": "be kind"}}},
    ),
    "instances-with-a-chain-and-a-branch": (
        [{"_tool": "analyse", "comment": "†input.comment",
          "_outputPath": "†state.clean || †state.flagged"},
         {"_tool": "publish", "c": "†state.clean", "_outputPath": "†state.published"},
         {"_tool": "review", "c": "†state.flagged", "_outputPath": "†state.queued"}],
        COMMENTS,
        {"analyse": {"by_instance": {"①": {"return": "ok"}, "②": {"return": "ok"},
                                     "③": {"branch": "†state.flagged", "value": "spam"}}},
         "publish": {"return": True}, "review": {"return": True}}, [], True,
        {"executed": [[0, "①"], [0, "②"], [0, "③"], [1, "①"], [1, "②"], [2, "③"]],
         "skipped": [[1, "③"], [2, "①"], [2, "②"]], "errors": [],
         "values": {"†state.published@①": True, "†state.queued@③": True,
                    "†state.published@③": MISSING}},
    ),
    "explicit-instance-runs-once": (
        [{"_tool": "t", "_instance": "②", "c": "†input.comment", "_outputPath": "†state.only"},
         {"_tool": "u", "c": "†input.comment", "_outputPath": "†state.all"}],
        COMMENTS, {"t": {"echo": True}, "u": {"return": 1}}, [], True,
        {"executed": [[0, "②"], [1, "①"], [1, "②"], [1, "③"]],
         "values": {"†state.only@②": {"c": "I disagree with this..."},
                    "†state.only@①": MISSING}},
    ),
    "explicit-instance-without-instancing": (
        [{"_tool": "updateTask", "_instance": "employee_B",
          "newTask": "Finalize the quarterly report", "_outputPath": "†state.task"}],
        [{"type": "state", "_instance": "employee_A", "task": "Draft initial proposal"},
         {"type": "state", "_instance": "employee_B", "task": "Review team submissions"}],
        {"updateTask": {"echo": True}}, [], False,
        {"executed": [[0, "employee_B"]],
         "values": {"†state.task@employee_B": {"newTask": "Finalize the quarterly report"},
                    "†state.task@employee_A": "Draft initial proposal"}},
    ),
    "scopes": (
        [{"_tool": "logEvent", "_scopes": ["state", "input"], "eventName": "user_login",
          "_outputPath": "†data.logged"},
         {"_tool": "noScopes", "_outputPath": "†data.none"}],
        [{"type": "state", "userId": "u-1"}, {"type": "input", "input": {"x": 1}},
         {"type": "data", "data": {"hidden": True}}, {"type": "text", "text": "hi"}],
        {"logEvent": {"echo_scopes": True}, "noScopes": {"echo_scopes": True}}, [], False,
        {"executed": [0, 1],
         "values": {"†data.logged": {"state": {"userId": "u-1"}, "input": {"x": 1}},
                    "†data.none": {}}},
    ),
    "scopes-per-instance": (
        [{"_tool": "translate", "_scopes": ["state"], "_outputPath": "†data.seen"}],
        [{"type": "state", "_instance": "①", "text": "Hello"},
         {"type": "state", "_instance": "②", "text": "Bonjour"},
         {"type": "state", "lang": "en"}],
        {"translate": {"echo_scopes": True}}, [], True,
        {"values": {"†data.seen@①": {"state": {"text": "Hello", "lang": "en"}},
                    "†data.seen@②": {"state": {"text": "Bonjour", "lang": "en"}}}},
    ),
    "fire-and-forget": (
        [{"_tool": "logEvent", "eventName": "†input.event"},
         {"_tool": "t", "_outputPath": "†state.r"}],
        [{"type": "input", "input": {"event": "login"}}],
        {"logEvent": {"return": {"ignored": True}}, "t": {"return": 1}}, [], False,
        {"executed": [0, 1], "errors": [], "values": {"†state": {"r": 1}}},
    ),
    "fire-and-forget-failure-is-recorded": (
        [{"_tool": "notify"}], [], {"notify": {"raise": {"type": "SMTPError", "message": "down"}}},
        [], False, {"failed": [0], "errors": [(0, "SMTPError")]},
    ),
    "latent-output": (
        [{"_tool": "think", "_output": {"plan": "check billing"}, "_outputPath": "†state.thought"},
         {"_tool": "act", "thought": "†state.thought.plan", "_outputPath": "†state.done"}],
        [], {"act": {"echo": True}}, [], False,
        {"executed": [0, 1], "values": {"†state.done": {"thought": "check billing"}}},
    ),
    "latent-output-without-output-path": (
        [{"_tool": "think", "_output": "a thought"}], [], {}, [], False,
        {"executed": [0], "errors": []},
    ),
    "latent-output-with-a-tool-schema": (
        [{"_tool": "t", "_output": {"id": 3}, "_outputPath": "†state.r"}],
        [], {}, [OUTPUT_TOOL], False,
        {"executed": [0], "errors": [], "values": {"†state.r": {"id": 3}}},
    ),
    "missing-input-is-an-error": (
        [{"_tool": "t", "amount": "†input.amount", "_outputPath": "†state.r"},
         {"_tool": "u", "r": "†state.r", "_outputPath": "†state.s"}],
        [], {"t": {"return": 1}, "u": {"return": 2}}, [], False,
        {"skipped": [0, 1], "errors": [(0, "MissingValue")]},
    ),
    "null-input-is-missing": (
        [{"_tool": "t", "amount": "†input.amount", "_outputPath": "†state.r"}],
        # The schema declares the path, so the plan is valid (a null alone does not
        # provide it) and the run meets the null.
        [{"type": "input", "input": {"amount": None},
          "schema": {"properties": {"amount": {"type": ["number", "null"]}}}}],
        {"t": {"return": 1}}, [], False,
        {"skipped": [0], "errors": [(0, "MissingValue")]},
    ),
    "or-fallback-literal": (
        [{"_tool": "t", "x": "†input.maybe || 'default'", "_outputPath": "†state.r"}],
        [], {"t": {"echo": True}}, [], False,
        {"executed": [0], "values": {"†state.r": {"x": "default"}}},
    ),
    "escaped-dagger-is-literal": (
        [{"_tool": "t", "x": "\\†state.not.a.reference", "_outputPath": "†state.r"}],
        [], {"t": {"echo": True}}, [], False,
        {"executed": [0], "values": {"†state.r": {"x": "†state.not.a.reference"}}},
    ),
    "value-to-first-alternative-checked-against-output-schema": (
        [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}],
        [], {"t": {"return": {"id": "x"}}}, [OUTPUT_TOOL], False,
        {"failed": [0], "errors": [(0, "OutputSchema")], "values": {"†state": MISSING}},
    ),
    "schema-is-not-checked-on-other-alternatives": (
        [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}],
        [], {"t": {"branch": "†state.err", "value": {"id": "x"}}}, [OUTPUT_TOOL], False,
        {"executed": [0], "errors": [], "values": {"†state.err": {"id": "x"}}},
    ),
    "schema-is-checked-when-choosing-the-first": (
        [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}],
        [], {"t": {"branch": "†state.ok", "value": {"id": "x"}}}, [OUTPUT_TOOL], False,
        {"failed": [0], "errors": [(0, "OutputSchema")]},
    ),
    "valid-output": (
        [{"_tool": "t", "_outputPath": "†state.ok"}],
        [], {"t": {"return": {"id": 3}}}, [OUTPUT_TOOL], False,
        {"executed": [0], "values": {"†state.ok.id": 3}},
    ),
    "undeclared-branch-is-a-broken-contract": (
        [{"_tool": "t", "_outputPath": "†state.ok || †state.err"},
         {"_tool": "u", "e": "†state.err", "_outputPath": "†state.u"}],
        [], {"t": {"branch": "†state.elsewhere", "value": 1}, "u": {"return": 1}}, [], False,
        {"failed": [0], "skipped": [1], "errors": [(0, "BranchContract")],
         "values": {"†state": MISSING}},
    ),
    "branch-without-output-path-is-a-broken-contract": (
        [{"_tool": "t"}], [], {"t": {"branch": "†state.a", "value": 1}}, [], False,
        {"failed": [0], "errors": [(0, "BranchContract")]},
    ),
    "exception-without-alternatives-is-an-error-message": (
        [{"_tool": "t", "_outputPath": "†state.r"},
         {"_tool": "u", "r": "†state.r", "_outputPath": "†state.s"}],
        [], {"t": {"raise": {"type": "Boom", "message": "it broke", "data": [1]}},
             "u": {"return": 1}}, [], False,
        {"failed": [0], "skipped": [1], "errors": [(0, "Boom")], "values": {"†state": MISSING}},
    ),
    "exception-goes-to-the-last-of-three": (
        [{"_tool": "t", "_outputPath": "†state.a || †state.b || (†state.err && †data.audit)"}],
        [], {"t": {"raise": {"type": "Boom", "message": "m"}}}, [], False,
        {"executed": [0], "errors": [],
         "values": {"†state.err": {"type": "Boom", "message": "m"},
                    "†data.audit.type": "Boom", "†state.a": MISSING}},
    ),
    "write-error-never-goes-to-a-branch": (
        [{"_tool": "t", "_outputPath": "†state.obj || †state.err", "_outputMethod": "push"}],
        [{"type": "state", "obj": {"not": "a list"}}], {"t": {"return": 1}}, [], False,
        {"failed": [0], "errors": [(0, "WriteError")], "values": {"†state.err": MISSING}},
    ),
    "concat-of-a-non-array-is-a-write-error": (
        [{"_tool": "t", "_outputPath": "†state.list", "_outputMethod": "concat"}],
        [{"type": "state", "list": [1]}], {"t": {"return": "x"}}, [], False,
        {"failed": [0], "errors": [(0, "WriteError")], "values": {"†state.list": [1]}},
    ),
    "resolved-parameters-fail-the-schema": (
        [{"_tool": "p", "_outputPath": "†state.n"},
         {"_tool": "t", "n": "†state.n", "_outputPath": "†state.r"}],
        [], {"p": {"return": "seven"}, "t": {"echo": True}},
        [{"type": "object", "properties": {"_tool": {"const": "p"}}},
         {"type": "object", "properties": {"_tool": {"const": "t"}, "n": {"type": "integer"}}}],
        False,
        {"executed": [0], "failed": [1], "errors": [(1, "ParamSchema")],
         "values": {"†state.r": MISSING}},
    ),
    "errors-are-ordered-by-call-then-instance": (
        [{"_tool": "late", "c": "†input.comment", "_outputPath": "†state.a"},
         {"_tool": "early", "c": "†input.comment", "_outputPath": "†state.b"}],
        COMMENTS,
        {"late": {"by_instance": {"①": {"raise": {"type": "L1"}, "delay_ms": 20},
                                  "②": {"raise": {"type": "L2"}},
                                  "③": {"return": 1}}},
         "early": {"by_instance": {"①": {"return": 1}, "②": {"raise": {"type": "E2"}},
                                   "③": {"raise": {"type": "E3"}, "delay_ms": 5}}}},
        [], True,
        {"errors": [(0, "①", "L1"), (0, "②", "L2"), (1, "②", "E2"), (1, "③", "E3")]},
    ),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario(run: Runner, scenario: str) -> None:
    plan, context, mocks, tools, instances, expect = SCENARIOS[scenario]
    result = run(plan, context, mocks=mocks, tools=tools, instances=instances)
    check(result, expect)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_interpreter_gives_the_same_result(scenario: str,
                                               request: pytest.FixtureRequest) -> None:
    plan, context, mocks, tools, instances, _ = SCENARIOS[scenario]
    results = [Runner(name, request.getfixturevalue("dask_cluster")
                      if name.startswith("dask") else None)(
                   plan, context, mocks=mocks, tools=tools, instances=instances)
               for name in INTERPRETERS]
    first = results[0]
    for name, result in zip(INTERPRETERS, results, strict=True):
        assert result.calls == first.calls, name
        assert result.errors == first.errors, name
        assert views(result.context) == views(first.context), name


# -- messages ---------------------------------------------------------------------------


def test_a_sequential_run_appends_the_same_messages_everywhere(run: Runner) -> None:
    plan, context, mocks, *_ = SCENARIOS["chain"]
    result = run(plan, context, mocks=mocks)
    assert result.context.to_json()[1:] == [
        {"type": "data", "kind": "state", "data": {"userProfileData": {"userName": "Alice"}},
         "_outputPath": "†state.userProfileData", "_outputMethod": "set",
         "_call": plan[0], "_date": DRY_RUN_DATE},
        {"type": "data", "kind": "state",
         "data": {"profileSummary": {"profile": {"userName": "Alice"}}},
         "_outputPath": "†state.profileSummary", "_outputMethod": "set",
         "_call": plan[1], "_date": DRY_RUN_DATE},
    ]


def test_instance_messages_are_tagged(run: Runner) -> None:
    plan, context, mocks, tools, instances, _ = SCENARIOS["instances"]
    result = run(plan, context, mocks=mocks, instances=True)
    written = [m for m in result.context.to_json() if "_outputPath" in m]
    assert sorted(m["_instance"] for m in written) == ["①", "②", "③"]
    assert all(m["_call"] == plan[0] for m in written)  # the call as written, untagged


def test_error_messages_have_the_documented_shape(run: Runner) -> None:
    plan = [{"_tool": "t", "x": "†input.x", "_outputPath": "†state.r"}]
    context = [{"type": "input", "_instance": "①", "x": 1}]
    result = run(plan, context, mocks={"t": {"raise": {"type": "Boom", "message": "m",
                                                       "data": {"k": 1}}}}, instances=True)
    assert result.context.to_json()[-1] == {
        "type": "error", "_instance": "①",
        "data": {"call": plan[0], "error": {"type": "Boom", "message": "m", "data": {"k": 1}}}}


def test_a_dead_branch_adds_no_message(run: Runner) -> None:
    plan, context, mocks, *_ = SCENARIOS["payment-succeeds"]
    result = run(plan, context, mocks=mocks)
    assert [m["type"] for m in result.context.to_json()] == ["input", "data", "data"]
    reason = next(c.reason for c in result.calls if c.call == 2)
    assert reason == ("dead branch: †state.error was not written (call 0 (processPayment) took "
                      "†state.receipt instead)")


# -- results that are not JSON ----------------------------------------------------------


class NotJson:
    pass


@pytest.mark.parametrize("bad", [{1, 2}, b"bytes", float("nan"), NotJson(), {"k": float("inf")},
                                 {1: "int key"}, [1, {2}]], ids=repr)
def test_a_result_that_is_not_json_fails_and_never_goes_to_a_branch(run: Runner, bad: Any) -> None:
    plan = [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}]
    result = run(plan, mocks={"t": lambda call, tool, context: bad})
    check(result, {"failed": [0], "errors": [(0, "NotJSON")], "values": {"†state": MISSING}})


def test_a_branch_value_that_is_not_json_fails(run: Runner) -> None:
    plan = [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}]
    result = run(plan, mocks={"t": lambda call, tool, context: Branch("†state.err", {1})})
    check(result, {"failed": [0], "errors": [(0, "NotJSON")]})


def test_a_tuple_is_an_array(run: Runner) -> None:
    result = run([{"_tool": "t", "_outputPath": "†state.r"}],
                 mocks={"t": lambda call, tool, context: (1, "two")})
    assert val(result, "†state.r") == [1, "two"]


# -- exceptions from functions ----------------------------------------------------------


def raising(exc: BaseException) -> Callable[..., Any]:
    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        raise exc
    return activity


def test_a_plain_exception_is_named_by_its_class(run: Runner) -> None:
    plan = [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}]
    result = run(plan, mocks={"t": raising(ValueError("bad value"))})
    assert val(result, "†state.err") == {"type": "ValueError", "message": "bad value"}


def test_an_exception_without_a_message_uses_its_class_name(run: Runner) -> None:
    result = run([{"_tool": "t", "_outputPath": "†state.r"}], mocks={"t": raising(KeyError())})
    assert result.errors[0]["data"]["error"] == {"type": "KeyError", "message": "KeyError"}


def test_activity_error_sets_type_message_and_data(run: Runner) -> None:
    plan = [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}]
    result = run(plan, mocks={"t": raising(ActivityError("Declined", "no funds", {"left": 0}))})
    assert val(result, "†state.err") == {"type": "Declined", "message": "no funds",
                                        "data": {"left": 0}}


def test_activity_error_data_that_is_not_json_becomes_text(run: Runner) -> None:
    result = run([{"_tool": "t", "_outputPath": "†state.r"}],
                 mocks={"t": raising(ActivityError("Odd", "odd data", {1, 2}))})
    assert result.errors[0]["data"]["error"]["data"] == "{1, 2}"


def test_routed_error_data_that_is_not_json_becomes_text_too(run: Runner) -> None:
    result = run([{"_tool": "t", "_outputPath": "†state.ok || †state.err"}],
                 mocks={"t": raising(ActivityError("Odd", "odd data", {1, 2}))})
    assert val(result, "†state.err") == {"type": "Odd", "message": "odd data", "data": "{1, 2}"}
    assert result.errors == ()


# -- approval ---------------------------------------------------------------------------

APPROVAL_PLAN = [
    {"_tool": "refund", "customerId": "†input.customerId", "amount": "†input.amount",
     "_outputPath": "†state.refund"},
    {"_tool": "notify", "refund": "†state.refund", "_outputPath": "†state.notified"},
]
APPROVAL_CONTEXT = [{"type": "input", "input": {"customerId": "cust_123", "amount": 50.0}}]
APPROVAL_MOCKS = {"refund": {"echo": True}, "notify": {"return": "sent"}}


def hook(answer: Callable[[dict[str, Any]], Any], asynchronous: bool,
         seen: list[dict[str, Any]]) -> Callable[..., Any]:
    if asynchronous:
        async def ask_async(call: dict[str, Any]) -> Any:
            await asyncio.sleep(0)
            seen.append(call)
            return answer(call)
        return ask_async

    def ask(call: dict[str, Any]) -> Any:
        seen.append(call)
        return answer(call)
    return ask


def refunds_only(answer: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda call: answer if call["_tool"] == "refund" else True


@pytest.mark.parametrize("asynchronous", [False, True], ids=["plain-hook", "async-hook"])
@pytest.mark.parametrize("answer", [True, None, Approve()], ids=["True", "None", "Approve"])
def test_approve_runs_the_call(run: Runner, asynchronous: bool, answer: Any) -> None:
    seen: list[dict[str, Any]] = []
    result = run(APPROVAL_PLAN, APPROVAL_CONTEXT, mocks=APPROVAL_MOCKS,
                 approve=hook(refunds_only(answer), asynchronous, seen))
    check(result, {"executed": [0, 1], "errors": [],
                   "values": {"†state.refund": {"customerId": "cust_123", "amount": 50.0}}})
    # asked with the resolved call, meta-properties included, once per ready call
    assert seen[0] == {"_tool": "refund", "customerId": "cust_123", "amount": 50.0,
                       "_outputPath": "†state.refund"}
    assert [c["_tool"] for c in seen] == ["refund", "notify"]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["plain-hook", "async-hook"])
@pytest.mark.parametrize(("answer", "reason"), [
    (False, "denied"), ("amount too large", "amount too large"), (Deny("policy"), "policy")])
def test_deny_fails_the_call_with_denied(run: Runner, asynchronous: bool, answer: Any,
                                         reason: str) -> None:
    seen: list[dict[str, Any]] = []
    result = run(APPROVAL_PLAN, APPROVAL_CONTEXT, mocks=APPROVAL_MOCKS,
                 approve=hook(refunds_only(answer), asynchronous, seen))
    check(result, {"failed": [0], "skipped": [1], "errors": [(0, "Denied")],
                   "values": {"†state": MISSING}})
    assert result.errors[0]["data"]["error"]["message"] == reason
    assert [c["_tool"] for c in seen] == ["refund"]  # a skipped call is never asked


@pytest.mark.parametrize("asynchronous", [False, True], ids=["plain-hook", "async-hook"])
@pytest.mark.parametrize("answer", [
    {"customerId": "cust_123", "amount": 20.0},
    Replace({"customerId": "cust_123", "amount": 20.0, "_outputPath": "†state.elsewhere"}),
], ids=["dict", "Replace"])
def test_replace_swaps_the_parameters(run: Runner, asynchronous: bool, answer: Any) -> None:
    result = run(APPROVAL_PLAN, APPROVAL_CONTEXT, mocks=APPROVAL_MOCKS,
                 approve=hook(refunds_only(answer), asynchronous, []))
    check(result, {"executed": [0, 1], "errors": [],
                   "values": {"†state.refund": {"customerId": "cust_123", "amount": 20.0},
                              "†state.elsewhere": MISSING}})
    written = [m for m in result.context.to_json() if m.get("_outputPath") == "†state.refund"]
    assert written[0]["_call"] == APPROVAL_PLAN[0]  # _call stays the call as written


def test_a_replacement_is_checked_against_the_tool_schema(run: Runner) -> None:
    tools = [{"type": "object", "properties": {
        "_tool": {"const": "refund"}, "customerId": {"type": "string"},
        "amount": {"type": "number", "maximum": 100}}},
        {"type": "object", "properties": {"_tool": {"const": "notify"}}}]
    result = run(APPROVAL_PLAN, APPROVAL_CONTEXT, mocks=APPROVAL_MOCKS, tools=tools,
                 approve=refunds_only({"customerId": "cust_123", "amount": 1000}))
    check(result, {"failed": [0], "skipped": [1], "errors": [(0, "ParamSchema")]})


def test_approval_for_instances_sees_the_instance(run: Runner) -> None:
    seen: list[dict[str, Any]] = []
    plan, context, mocks, *_ = SCENARIOS["instances"]
    result = run(plan, context, mocks=mocks, instances=True,
                 approve=hook(lambda call: call["_instance"] != "③", False, seen))
    assert sorted(c["_instance"] for c in seen) == ["①", "②", "③"]
    check(result, {"executed": [[0, "①"], [0, "②"]], "failed": [[0, "③"]],
                   "errors": [(0, "③", "Denied")]})


def test_approval_of_a_latent_call(run: Runner) -> None:
    plan = [{"_tool": "think", "_output": "idea", "_outputPath": "†state.idea"}]
    seen: list[dict[str, Any]] = []
    result = run(plan, approve=hook(lambda call: True, False, seen))
    assert seen == [plan[0]] and val(result, "†state.idea") == "idea"


# -- activities and executors (real interpreters only) ---------------------------------


def test_an_activity_receives_call_tool_and_scoped_context(real: Runner) -> None:
    got: list[Any] = []

    def weather_check(call: dict[str, Any], tool: Any, context: Context) -> Any:
        got.append((call, tool, context.to_json()))
        return {"temperature": 21.5, "conditions": "sunny"}

    tool = {"type": "object", "description": "Current weather for a place.", "properties": {
        "_tool": {"type": "string", "const": "weatherCheck"}, "location": {"type": "string"},
        "_output": {"type": "object", "properties": {"temperature": {"type": "number"},
                                                     "conditions": {"type": "string"}},
                    "required": ["temperature", "conditions"]}}, "required": ["location"]}
    plan = [{"_tool": "weatherCheck", "location": "†input.city", "_scopes": ["input"],
             "_outputPath": "†state.weather"}]
    context = [{"type": "input", "input": {"city": "Lisbon"}}, {"type": "state", "secret": 1}]
    result = real(plan, context, mocks={"weatherCheck": weather_check}, tools=[tool])
    assert val(result, "†state.weather.conditions") == "sunny"
    call, tool_seen, scoped = got[0]
    assert call == {"_tool": "weatherCheck", "location": "Lisbon", "_scopes": ["input"],
                    "_outputPath": "†state.weather"}
    assert tool_seen == tool
    assert scoped == [{"type": "input", "input": {"city": "Lisbon"}}]


def test_tool_activity_field_names_the_executor(real: Runner) -> None:
    tools = [{"type": "object", "_activity": "sharedImpl", "properties": {"_tool": {"const": "a"}}},
             {"type": "object", "_activity": "sharedImpl", "properties": {"_tool": {"const": "b"}}}]
    plan = [{"_tool": "a", "_outputPath": "†state.a"}, {"_tool": "b", "_outputPath": "†state.b"}]
    impl = lambda call, tool, context: call["_tool"]  # noqa: E731
    result = real(plan, mocks={"sharedImpl": impl, "a": {"return": "not me"}}, tools=tools)
    assert val(result, "†state") == {"a": "a", "b": "b"}


def test_an_unregistered_explicit_activity_is_no_activity(real: Runner) -> None:
    tools = [{"type": "object", "_activity": "missingImpl", "properties": {"_tool": {"const": "a"}}}]
    result = real([{"_tool": "a", "_outputPath": "†state.a || †state.err"}], tools=tools)
    check(result, {"failed": [0], "errors": [(0, "NoActivity")], "values": {"†state": MISSING}})


def test_a_latent_call_without_output_or_executor_is_no_activity(real: Runner) -> None:
    result = real([{"_tool": "think", "_outputPath": "†state.a || †state.err"}])
    check(result, {"failed": [0], "errors": [(0, "NoActivity")]})
    assert "latent" in result.errors[0]["data"]["error"]["message"]


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_latent_executor_runs_latent_calls_without_output(interpreter: str,
                                                              asynchronous: bool) -> None:
    seen: list[Any] = []

    def llm(call: dict[str, Any], tool: Any, context: Context) -> Any:
        seen.append(call["_tool"])
        return f"an answer for {call['question']}"

    async def allm(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return llm(call, tool, context)

    plan = [{"_tool": "ask", "question": "why", "_outputPath": "†state.a"},
            {"_tool": "ask", "question": "how", "_output": "own output", "_outputPath": "†state.b"},
            {"_tool": "real", "_outputPath": "†state.c"}]
    kw: dict[str, Any] = dict(activities={"real": lambda c, t, x: "real"},
                              latent=allm if asynchronous else llm)
    result = (run_sync(plan, **kw) if interpreter == "sync"
              else asyncio.run(run_async(plan, **kw)))
    assert val(result, "†state") == {"a": "an answer for why", "b": "own output", "c": "real"}
    assert seen == ["ask"]


def test_the_activity_error_of_a_real_activity_routes_like_a_mock(real: Runner) -> None:
    async def pay(call: dict[str, Any], tool: Any, context: Context) -> Any:
        await asyncio.sleep(0)
        raise ActivityError("CardDeclined", "Your card was declined.", {"code": "card_declined"})

    plan, context, *_ = SCENARIOS["payment-fails-to-error-branch"]
    result = real(plan, context, mocks={"processPayment": pay, "confirmOrder": {"echo": True},
                                        "reportFailure": {"echo": True}})
    assert val(result, "†state.error.data.code") == "card_declined"
    assert outcomes(result)["executed"] == [0, 2]


def test_an_activity_that_returns_a_coroutine_from_a_plain_function(real: Runner) -> None:
    async def later() -> str:
        return "awaited"

    result = real([{"_tool": "t", "_outputPath": "†state.r"}],
                  mocks={"t": lambda call, tool, context: later()})
    assert val(result, "†state.r") == "awaited"


def test_the_run_does_not_mutate_the_plan_or_the_context(run: Runner) -> None:
    plan, context, mocks, *_ = SCENARIOS["payment-fails-to-error-branch"]
    plan_copy, context_copy = copy.deepcopy(plan), copy.deepcopy(context)

    def meddle(call: dict[str, Any], tool: Any, context: Context) -> Any:
        call["amount"] = -1
        call["_outputPath"] = "†state.hacked"
        return call["amount"]

    run(plan, context, mocks={**mocks, "processPayment": meddle})
    assert plan == plan_copy and context == context_copy


def test_a_latent_output_that_breaks_the_schema_is_refused_before_running(run: Runner) -> None:
    from obelisk import PlanRefused

    with pytest.raises(PlanRefused, match="param-schema"):
        run([{"_tool": "t", "_output": {"id": "x"}, "_outputPath": "†state.r"}], tools=[OUTPUT_TOOL])


def test_a_plan_with_errors_is_refused(run: Runner) -> None:
    from obelisk import PlanRefused

    with pytest.raises(PlanRefused):
        run([{"_tool": "t", "x": "†state.nowhere"}])


@pytest.mark.parametrize("millis", [0, 999, 1_000, 1_764_000_000_001, 1_764_000_059_999,
                                    1_764_000_060_000, 1_764_000_060_000, 4_102_444_799_999])
def test_the_default_clock_formats_each_millisecond_as_datetime_does(
        millis: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime

    from obelisk.interpreters import common

    monkeypatch.setattr(common.time, "time_ns", lambda: millis * 1_000_000 + 123)
    at = datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc)
    expected = at.replace(microsecond=millis % 1000 * 1000).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")
    assert common.utc_now() == expected


def test_the_default_clock_is_utc_text_to_the_millisecond_shared_within_one() -> None:
    import datetime
    import re

    from obelisk.interpreters.common import utc_now

    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    first, second = utc_now(), utc_now()
    after = datetime.datetime.now(datetime.timezone.utc)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first)
    read = datetime.datetime.fromisoformat(first.replace("Z", "+00:00"))
    assert before <= read <= after
    if second == first:
        assert second is first  # one string per millisecond: the messages share it


@pytest.mark.parametrize("style", ["sync", "asyncio"])
def test_what_an_activity_changes_in_its_call_nobody_else_sees(style: str) -> None:
    # Every party is handed a call of its own: what the activity changes, the approval
    # hook and the next invocation of the same node (a plan run again, whose template is
    # then kept) never see.
    from obelisk import compile_plan

    compiled = compile_plan([
        {"_tool": "t", "x": {"deep": [1]}, "y": "†input.v", "_outputPath": "†state.a"},
        {"_tool": "u", "x": {"deep": [1]}, "_outputPath": "†state.b"},
    ], context=[{"type": "input", "input": {"v": {"list": [1]}}}])
    shown: list[dict[str, Any]] = []
    kept: dict[str, Any] = {"x": {"deep": ["mine"]}}

    def approve(call: dict[str, Any]) -> Any:
        shown.append(call)
        return Replace(kept) if call["_tool"] == "u" else Approve()

    def meddle(call: dict[str, Any], tool: Any, context: Any) -> Any:
        received.append(copy.deepcopy(call))
        call["x"]["deep"].append("changed")
        if "y" in call:
            call["y"]["list"].append("changed")
        call["_tool"] = "hacked"
        return 1

    for _ in range(3):  # the first run builds each call, later ones copy a kept template
        shown.clear()
        received: list[dict[str, Any]] = []
        kw: dict[str, Any] = dict(activities={"t": meddle, "u": meddle}, approve=approve)
        result = (run_sync(compiled, **kw) if style == "sync"
                  else asyncio.run(run_async(compiled, **kw)))
        assert result.status == "completed" and not result.errors
        assert received == [
            {"_tool": "t", "x": {"deep": [1]}, "y": {"list": [1]}, "_outputPath": "†state.a"},
            {"_tool": "u", "x": {"deep": ["mine"]}, "_outputPath": "†state.b"}]
        assert shown == [
            {"_tool": "t", "x": {"deep": [1]}, "y": {"list": [1]}, "_outputPath": "†state.a"},
            {"_tool": "u", "x": {"deep": [1]}, "_outputPath": "†state.b"}]
        assert kept == {"x": {"deep": ["mine"]}}  # the hook's replacement is its own
        assert resolve(result.context, "†input.v") == {"list": [1]}
