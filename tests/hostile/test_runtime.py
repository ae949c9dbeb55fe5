"""Hostile activities and values at run time (issue 14: items 1, 2, 5 and three of 9).

Every test here failed on the code before its fix. Each behaviour is checked under every
interpreter that can meet it: ``run_sync``, ``run_async`` (plain activities run in a worker
thread, async ones on the loop), and ``dry_run`` with function mocks under both loops.

- every ``Exception`` an activity or a function mock raises (``StopIteration`` and
  ``GeneratorExit`` included) is the call's outcome, never a hang or a false ``Timeout``;
- a value entering the context is checked all the way down, even when it is already a
  pyrsistent map or vector; nothing handed out can change what is inside a context;
- results, written values and resolved calls have a size limit (``max_value_nodes``):
  past it the call fails with ``ValueTooLarge``, never routed to an error branch;
- ``Branch`` with a non-string path is a ``BranchContract`` failure; a second cancel
  during the clean-up still returns the cancelled result; ``Deny(None)`` writes a reason.
"""

from __future__ import annotations

import asyncio
import math
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from pyrsistent import pmap, pset, pvector

from obelisk import (
    MISSING,
    Branch,
    Context,
    Deny,
    MessageError,
    Replace,
    RunResult,
    dry_run,
    resolve,
    run_async,
    run_sync,
)
from obelisk.core.plain import thaw
from obelisk.core.values import MAX_VALUE_NODES, freeze
from obelisk.interpreters.reporting import views

#: A guard against hangs: no run in this file may take longer (the bug was a hang).
GUARD = 30.0

PLAIN = [{"_tool": "t", "_outputPath": "†state.ok"}]
BRANCHED = [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}]


def guarded_async(plan: Any, context: Any = None, **kw: Any) -> RunResult:
    """``run_async`` under a guard: a hang comes back as a cancelled run, not a stuck test."""
    async def go() -> RunResult:
        return await asyncio.wait_for(run_async(plan, context, **kw), GUARD)
    return asyncio.run(go())


def as_async(fn: Callable[..., Any]) -> Callable[..., Any]:
    async def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return fn(call, tool, context)
    return activity


#: Every interpreter, running a plan whose tools behave like the given functions.
Interpreter = Callable[..., RunResult]


def _sync(plan: Any, fns: dict[str, Any], context: Any = None, **kw: Any) -> RunResult:
    return run_sync(plan, context, activities=fns, **kw)


def _sync_async(plan: Any, fns: dict[str, Any], context: Any = None, **kw: Any) -> RunResult:
    return run_sync(plan, context, activities={k: as_async(f) for k, f in fns.items()}, **kw)


def _asyncio_plain(plan: Any, fns: dict[str, Any], context: Any = None, **kw: Any) -> RunResult:
    return guarded_async(plan, context, activities=fns, **kw)


def _asyncio_async(plan: Any, fns: dict[str, Any], context: Any = None, **kw: Any) -> RunResult:
    return guarded_async(plan, context, activities={k: as_async(f) for k, f in fns.items()},
                         **kw)


def _dry_sync(plan: Any, fns: dict[str, Any], context: Any = None, **kw: Any) -> RunResult:
    return dry_run(plan, context, mocks=fns, interpreter="sync", **kw).run


def _dry_asyncio(plan: Any, fns: dict[str, Any], context: Any = None, **kw: Any) -> RunResult:
    return dry_run(plan, context, mocks=fns, interpreter="asyncio", **kw).run


INTERPRETERS: dict[str, Interpreter] = {
    "sync-plain": _sync, "sync-async": _sync_async, "asyncio-plain": _asyncio_plain,
    "asyncio-async": _asyncio_async, "dry-sync": _dry_sync, "dry-asyncio": _dry_asyncio,
}


@pytest.fixture(params=list(INTERPRETERS))
def run(request: pytest.FixtureRequest) -> Interpreter:
    return INTERPRETERS[request.param]


def raising(exc: BaseException) -> Callable[..., Any]:
    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        raise exc
    return activity


def returning(value: Any) -> Callable[..., Any]:
    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return value
    return activity


def error_of(result: RunResult) -> dict[str, Any]:
    assert len(result.errors) == 1, result.errors
    error: dict[str, Any] = result.errors[0]["data"]["error"]  # type: ignore[index, call-overload]
    return error


# -- item 1: every Exception an activity raises is its outcome --------------------------


@pytest.mark.parametrize("exc", [StopIteration(), StopIteration("v"), GeneratorExit(),
                                 StopAsyncIteration()], ids=lambda e: type(e).__name__)
def test_stop_iteration_and_generator_exit_are_outcomes(run: Interpreter,
                                                        exc: BaseException) -> None:
    result = run(BRANCHED, {"t": raising(exc)})
    assert result.status == "completed"
    assert resolve(result.context, "†state.err.type") == type(exc).__name__
    result = run(PLAIN, {"t": raising(exc)})
    assert result.status == "completed"
    assert error_of(result)["type"] == type(exc).__name__


def test_stop_iteration_is_not_a_false_timeout() -> None:
    result = guarded_async(BRANCHED, activities={"t": raising(StopIteration())}, timeout=5)
    assert resolve(result.context, "†state.err.type") == "StopIteration"


@pytest.mark.slow
def test_stop_iteration_under_the_cli_asyncio_interpreter(tmp_path: pathlib.Path) -> None:
    (tmp_path / "stopper.py").write_text(
        "def t(call, tool, context):\n    raise StopIteration\n"
        "ACTIVITIES = {'t': t}\n", encoding="utf-8")
    (tmp_path / "plan.json").write_text(
        '{"plan": [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}]}',
        encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "obelisk", "run", str(tmp_path / "plan.json"), "--activities",
         "stopper:ACTIVITIES", "--interpreter", "asyncio", "--out", str(tmp_path / "out.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=GUARD, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "StopIteration" in (tmp_path / "out.json").read_text(encoding="utf-8")


# -- item 2: values entering the context are checked all the way down ------------------

BAD_INSIDE = {
    "set": pmap({"a": {1, 2}}),
    "pset": pmap({"a": pset([1])}),
    "nan": pmap({"a": math.nan}),
    "inf": pvector([1, math.inf]),
    "non-string-key": pmap({1: "a"}),
    "nested-non-string-key": pmap({"a": pmap({(1, 2): "b"})}),
    "lone-surrogate": pmap({"a": "x\ud800"}),
    "lone-surrogate-key": pmap({"\udfff": 1}),
    "plain-lone-surrogate": {"a": ["\udc80"]},
    "big-integer": pmap({"a": 10 ** 5000}),
    "plain-big-integer": [-(10 ** 4400)],
    "object": pvector([object()]),
}


@pytest.mark.parametrize("value", BAD_INSIDE.values(), ids=BAD_INSIDE.keys())
def test_a_result_is_checked_all_the_way_down(run: Interpreter, value: Any) -> None:
    result = run(BRANCHED, {"t": returning(value)})
    assert error_of(result)["type"] == "NotJSON"  # a broken contract: never routed
    assert resolve(result.context, "†state") is MISSING


@pytest.mark.parametrize("value", BAD_INSIDE.values(), ids=BAD_INSIDE.keys())
def test_a_context_message_is_checked_all_the_way_down(value: Any) -> None:
    with pytest.raises(MessageError):
        Context.of([{"type": "state", "data": {"v": 1}}, pmap({"type": "state", "data": value})])


def test_a_lone_surrogate_in_a_message_is_a_clear_error() -> None:
    with pytest.raises(MessageError, match="lone surrogate") as info:
        Context.of([{"type": "state", "a": {"b": "ok\ud83d"}}])
    assert "/a/b" in str(info.value)


def test_a_big_integer_in_a_message_is_a_clear_error() -> None:
    with pytest.raises(MessageError, match="4300 digits"):
        Context.of([{"type": "state", "a": 10 ** 4300}])
    Context.of([{"type": "state", "a": 10 ** 4299}])  # 4300 digits: printable, accepted


def test_a_mutable_list_inside_a_pmap_is_frozen_on_the_way_in(run: Interpreter) -> None:
    inner: list[Any] = [1, {"b": [2]}]
    result = run(PLAIN, {"t": returning(pmap({"a": inner}))})
    inner.append(3)
    inner[1]["b"].append(4)
    assert resolve(result.context, "†state.ok") == {"a": [1, {"b": [2]}]}
    shared: list[Any] = [1]
    context = Context.of([pmap({"type": "state", "a": shared})])
    shared.append(2)
    assert resolve(context, "†state.a") == [1]


def test_a_frozen_value_that_needs_nothing_is_kept_as_it_is() -> None:
    value = pmap({"a": pvector([1, pmap({"b": "c"})])})
    assert freeze(value) is value  # structure sharing: nothing is copied


def test_str_int_and_float_subclasses_are_stored_as_plain_values() -> None:
    class Text(str):
        pass

    class Number(int):
        pass

    frozen = freeze({"a": Text("x"), "b": Number(3), "c": [Text("y")]})
    assert type(frozen["a"]) is str and type(frozen["b"]) is int  # type: ignore[index]
    assert type(frozen["c"][0]) is str  # type: ignore[index]


# -- item 2: nothing handed out can change what is inside a context ---------------------


def mutate(value: Any) -> None:
    """Change every container inside ``value`` that can be changed."""
    if isinstance(value, dict):
        for child in list(value.values()):
            mutate(child)
        value["hacked"] = True
    elif isinstance(value, list):
        for child in value:
            mutate(child)
        value.append("hacked")


CONTEXT = [{"type": "state", "state": {"user": {"name": "ada", "tags": ["a", {"b": [1]}]}}},
           {"type": "data", "kind": "notes", "data": {"list": [1, 2]}}]


def test_nothing_handed_out_changes_the_context(run: Interpreter) -> None:
    seen: list[Any] = []

    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        seen.append(call)  # changed after the run: the result returned shares with it
        mutate(context.to_json())
        for kind in context.kinds:
            mutate(thaw(context.value(kind)))  # type: ignore[arg-type]
        mutate(resolve(context, "†state"))
        return {"copy": call.get("user"), "notes": call.get("notes")}

    def approve(call: dict[str, Any]) -> bool:
        mutate(call)  # the approval hook's copy is its own
        return True

    plan = [{"_tool": "t", "user": "†state.user", "notes": "†notes", "_scopes": ["state"],
             "_outputPath": "†state.out"},
            {"_tool": "t", "user": "†state.user", "notes": "†state.out",
             "_outputPath": "†state.again"}]
    result = run(plan, {"t": activity}, CONTEXT, approve=approve)
    assert result.status == "completed" and not result.errors, result.errors
    before = result.context.to_json()
    mutate(seen)
    mutate(resolve(result.context, "†state"))
    mutate(resolve(result.context, "†notes"))
    mutate(result.context.to_json())
    mutate(views(result.context))
    assert result.context.to_json() == before
    assert resolve(result.context, "†state.user") == CONTEXT[0]["state"]["user"]  # type: ignore[index]
    assert resolve(result.context, "†state.out.copy") == CONTEXT[0]["state"]["user"]  # type: ignore[index]


def test_the_approval_hook_cannot_edit_the_call_in_place() -> None:
    got: list[Any] = []

    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        got.append(call["x"])
        return 1

    def approve(call: dict[str, Any]) -> bool:
        call["x"]["y"].append("edited")  # edits go through Replace, not in place
        return True

    run_sync([{"_tool": "t", "x": {"y": [1]}, "_outputPath": "†state.a"}],
             activities={"t": activity}, approve=approve)
    assert got == [{"y": [1]}]


# -- item 5: a size limit for results, written values and resolved calls ----------------


def test_a_result_over_the_size_limit_fails_the_call_by_name(run: Interpreter) -> None:
    big = list(range(200))
    result = run(BRANCHED, {"t": returning(big)}, max_value_nodes=100)
    error = error_of(result)
    assert error["type"] == "ValueTooLarge"  # a broken contract: never routed
    assert "call 0 (t)" in error["message"] and "100" in error["message"]
    assert resolve(result.context, "†state") is MISSING
    ok = run(PLAIN, {"t": returning(big)}, max_value_nodes=201)
    assert not ok.errors and resolve(ok.context, "†state.ok") == big


def test_the_default_size_limit() -> None:
    assert MAX_VALUE_NODES == 250_000
    result = run_sync(PLAIN, activities={"t": returning([0] * MAX_VALUE_NODES)})
    assert error_of(result)["type"] == "ValueTooLarge"


def test_a_resolved_call_over_the_size_limit_fails_before_the_activity_runs(
        run: Interpreter) -> None:
    ran: list[int] = []

    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        ran.append(1)
        return 1

    context = [{"type": "state", "v": list(range(60))}]
    plan = [{"_tool": "t", "a": "†state.v", "b": "†state.v", "_outputPath": "†state.w"}]
    result = run(plan, {"t": activity}, context, max_value_nodes=100)
    assert error_of(result)["type"] == "ValueTooLarge"
    assert ran == []


def doubling_plan(steps: int) -> list[dict[str, Any]]:
    """The issue's exponential plan: each echo returns the previous value twice."""
    calls = [{"_tool": "echo", "a": "†state.v0", "b": "†state.v0", "_outputPath": "†state.v1"}]
    calls += [{"_tool": "echo", "a": f"†state.v{i}", "b": f"†state.v{i}",
               "_outputPath": f"†state.v{i + 1}"} for i in range(1, steps)]
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_the_echo_doubling_plan_stops_at_the_limit(interpreter: str) -> None:
    result = dry_run(doubling_plan(60), [{"type": "state", "v0": "x"}],
                     mocks={"echo": {"echo": True}}, interpreter=interpreter,
                     max_value_nodes=50_000)
    assert [e["data"]["error"]["type"] for e in result.errors] == ["ValueTooLarge"]  # type: ignore[index, call-overload]
    outcomes = [c.outcome for c in result.calls]
    assert outcomes.count("executed") < 20 and outcomes.count("failed") == 1


# -- item 9: Branch with a non-string path, a second cancel, Deny(None) ------------------


@pytest.mark.parametrize("path", [None, 3, ["†state.ok"], pmap({"a": 1}), b"\xe2\x80\xa0state.ok"],
                         ids=repr)
def test_a_branch_with_a_non_string_path_is_a_branch_contract_failure(run: Interpreter,
                                                                      path: Any) -> None:
    result = run(BRANCHED, {"t": returning(Branch(path, 1))})
    assert result.status == "completed"
    assert error_of(result)["type"] == "BranchContract"


def test_a_second_cancel_during_the_clean_up_returns_the_cancelled_result() -> None:
    cleaned: list[str] = []

    async def slow(call: dict[str, Any], tool: Any, context: Context) -> Any:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # a slow clean-up, during which the run is cancelled again
            cleaned.append("slow")
            raise

    async def quick(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return 1

    async def main() -> RunResult:
        task = asyncio.create_task(run_async(
            [{"_tool": "quick", "_outputPath": "†state.q"},
             {"_tool": "slow", "_outputPath": "†state.s"}],
            activities={"quick": quick, "slow": slow}))
        await asyncio.sleep(0.1)
        task.cancel()
        await asyncio.sleep(0.1)
        task.cancel()
        return await task

    result = asyncio.run(main())
    assert result.status == "cancelled"
    assert [c.outcome for c in result.calls] == ["executed", "cancelled"]


@pytest.mark.parametrize(("reason", "text"), [(None, "denied"), ("", "denied"), (3, "3")],
                         ids=["None", "empty", "int"])
def test_deny_without_a_string_reason_writes_a_reason(run: Interpreter, reason: Any,
                                                      text: str) -> None:
    result = run(PLAIN, {"t": returning(1)}, approve=lambda call: Deny(reason))
    error = error_of(result)
    assert error["type"] == "Denied" and error["message"] == text


def test_a_replacement_call_that_is_not_json_still_reaches_the_activity(run: Interpreter) -> None:
    # The call is deep-copied for the activity; a value a hook put in that JSON cannot copy
    # is copied another way (a guard for that copy, not a regression: it worked before).
    got: list[Any] = []

    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        got.append(call["x"])
        return 1

    result = run([{"_tool": "t", "x": 1, "_outputPath": "†state.a"}], {"t": activity},
                 approve=lambda call: Replace({"x": {1, 2}}))
    assert not result.errors and got == [{1, 2}]


def test_an_observer_cannot_edit_the_call_in_place(run: Interpreter) -> None:
    got: list[Any] = []

    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        got.append(call["x"])
        return 1

    def observer(event: Any) -> None:
        if type(event).__name__ == "Started":
            event.call["x"]["y"].append("edited")

    run([{"_tool": "t", "x": {"y": [1]}, "_outputPath": "†state.a"}], {"t": activity},
        observer=observer)
    assert got == [{"y": [1]}]
