"""Activities that misbehave: every way they can fail is an outcome, never a crash or a
leak (SEMANTICS §7, docs/running.md "Faults").

- any ``Exception`` (even one whose ``str()`` fails) is an outcome, routed like any other;
- a ``CancelledError`` an activity raises itself (the run is not being cancelled) is an
  outcome too, of type ``CancelledError``;
- every other ``BaseException`` (``KeyboardInterrupt``, ``SystemExit``, a custom one) is a
  request to stop: the run cancels and awaits what is running and re-raises it;
- results that are not JSON fail with ``NotJSON``; a hang past ``timeout`` is ``Timeout``;
- cancelling the task that runs ``run_async`` returns a ``cancelled`` result that keeps
  what finished, with no task left behind;
- no coroutine is ever left unawaited (pytest turns that warning into an error).
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from obelisk import (
    MISSING,
    ActivityError,
    Context,
    RunResult,
    dry_run,
    resolve,
    run_async,
    run_sync,
)

BRANCHED = [{"_tool": "t", "_outputPath": "†state.ok || †state.err"}]
PLAIN = [{"_tool": "t", "_outputPath": "†state.ok"}]


def run_both(plan: list[Any], activities: dict[str, Any], **kw: Any) -> list[RunResult]:
    return [run_sync(plan, activities=activities, **kw),
            asyncio.run(run_async(plan, activities=activities, **kw))]


def raising(exc: BaseException) -> Callable[..., Any]:
    def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        raise exc
    return activity


def araising(exc: BaseException) -> Callable[..., Any]:
    async def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
        await asyncio.sleep(0)
        raise exc
    return activity


def no_tasks_left() -> None:
    assert asyncio.all_tasks() == {asyncio.current_task()}


def cancelled_after(seconds: float, plan: list[Any], activities: dict[str, Any],
                    **kw: Any) -> RunResult:
    """Run ``plan`` under asyncio, cancel the run after ``seconds``, check that no task is
    left, and return the result."""
    async def main() -> RunResult:
        task = asyncio.create_task(run_async(plan, activities=activities, **kw))
        await asyncio.sleep(seconds)
        task.cancel()
        result = await task
        no_tasks_left()
        return result

    return asyncio.run(main())


# -- exceptions -------------------------------------------------------------------------


class CustomError(Exception):
    pass


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


EXCEPTIONS = [
    (ValueError("bad value"), "ValueError", "bad value"),
    (RuntimeError(), "RuntimeError", "RuntimeError"),
    (CustomError("custom"), "CustomError", "custom"),
    (ZeroDivisionError("division by zero"), "ZeroDivisionError", "division by zero"),
    (TimeoutError("socket timed out"), "TimeoutError", "socket timed out"),
    (RecursionError("too deep"), "RecursionError", "too deep"),
    (MemoryError(), "MemoryError", "MemoryError"),
    (BadStr(), "BadStr", "BadStr"),
    (ActivityError("CardDeclined", "declined", {"code": 51}), "CardDeclined", "declined"),
    (ActivityError("Empty", ""), "Empty", "Empty"),
    (ActivityError(5, None), "5", "5"),  # type: ignore[arg-type]
]
if sys.version_info >= (3, 11):  # ExceptionGroup is a builtin from Python 3.11
    EXCEPTIONS.append((ExceptionGroup("several", [ValueError("a"), KeyError("b")]),  # noqa: F821
                       "ExceptionGroup", "several (2 sub-exceptions)"))


@pytest.mark.parametrize(("exc", "etype", "message"), EXCEPTIONS, ids=lambda x: type(x).__name__)
@pytest.mark.parametrize("make", [raising, araising], ids=["plain", "async"])
def test_any_exception_routes_to_the_error_branch(make: Any, exc: BaseException, etype: str,
                                                  message: str) -> None:
    for result in run_both(BRANCHED, {"t": make(exc)}):
        error = resolve(result.context, "†state.err")
        assert isinstance(error, dict)
        assert (error["type"], error["message"]) == (etype, message)
        assert result.errors == () and result.calls[0].outcome == "executed"


@pytest.mark.parametrize(("exc", "etype", "message"), EXCEPTIONS, ids=lambda x: type(x).__name__)
def test_any_exception_without_a_branch_is_an_error_message(exc: BaseException, etype: str,
                                                            message: str) -> None:
    for result in run_both(PLAIN, {"t": raising(exc)}):
        assert result.calls[0].outcome == "failed"
        assert result.errors[0]["data"]["error"]["type"] == etype
        assert result.errors[0]["data"]["error"]["message"] == message


def test_a_cancelled_error_raised_by_the_activity_is_a_failure() -> None:
    async def awaits_a_cancelled_task(call: dict[str, Any], tool: Any, context: Context) -> Any:
        inner = asyncio.ensure_future(asyncio.sleep(10))
        inner.cancel()
        return await inner  # raises CancelledError, though nobody cancelled the run

    for result in run_both(BRANCHED, {"t": awaits_a_cancelled_task}):
        assert resolve(result.context, "†state.err.type") == "CancelledError"
        assert result.status == "completed"


class Stop(BaseException):
    """A BaseException that is not an Exception: a request to stop, like a test failure."""


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3), Stop("halt")],
                         ids=lambda x: type(x).__name__)
@pytest.mark.parametrize("make", [raising, araising], ids=["plain", "async"])
def test_other_base_exceptions_stop_the_sync_run(make: Any, exc: BaseException) -> None:
    ran: list[str] = []
    plan = [{"_tool": "t", "_outputPath": "†state.ok || †state.err"},
            {"_tool": "after", "x": "†state.err", "_outputPath": "†state.after"}]
    with pytest.raises(type(exc)):
        run_sync(plan, activities={"t": make(exc), "after": lambda c, t, x: ran.append("after")})
    assert ran == []


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3), Stop("halt")],
                         ids=lambda x: type(x).__name__)
@pytest.mark.parametrize("make", [raising, araising], ids=["plain", "async"])
def test_other_base_exceptions_stop_the_asyncio_run_and_leave_no_task(make: Any,
                                                                      exc: BaseException) -> None:
    cancelled: list[str] = []

    async def slow(call: dict[str, Any], tool: Any, context: Context) -> Any:
        try:
            await asyncio.sleep(10)
        finally:
            cancelled.append("slow")

    plan = [{"_tool": "t", "_outputPath": "†state.ok || †state.err"},
            {"_tool": "slow", "_outputPath": "†state.slow"}]

    async def main() -> None:
        started = time.monotonic()
        with pytest.raises(type(exc)):
            await run_async(plan, activities={"t": make(exc), "slow": slow})
        assert time.monotonic() - started < 5
        no_tasks_left()

    asyncio.run(main())
    assert cancelled == ["slow"]


def test_an_approval_hook_that_raises_stops_the_run_and_leaves_no_task() -> None:
    cancelled: list[str] = []

    async def slow(call: dict[str, Any], tool: Any, context: Context) -> Any:
        try:
            await asyncio.sleep(10)
        finally:
            cancelled.append(call["_tool"])

    def approve(call: dict[str, Any]) -> Any:
        if call["_tool"] == "second":
            raise RuntimeError("the hook broke")
        return True

    plan = [{"_tool": "first", "_outputPath": "†state.a"},
            {"_tool": "gate", "_outputPath": "†state.g"},
            {"_tool": "second", "g": "†state.g", "_outputPath": "†state.b"}]

    async def main() -> None:
        with pytest.raises(RuntimeError, match="the hook broke"):
            await run_async(plan, activities={"first": slow, "gate": lambda c, t, x: 1,
                                              "second": slow}, approve=approve)
        no_tasks_left()

    asyncio.run(main())
    assert cancelled == ["first"]
    with pytest.raises(RuntimeError, match="the hook broke"):
        run_sync(plan, activities={"first": lambda c, t, x: 1, "gate": lambda c, t, x: 1,
                                   "second": lambda c, t, x: 1}, approve=approve)


@pytest.mark.parametrize("answer", [1, ["yes"], object()])
def test_an_approval_hook_with_a_meaningless_answer_is_a_type_error(answer: Any) -> None:
    with pytest.raises(TypeError, match="approval hook"):
        run_sync(PLAIN, activities={"t": lambda c, t, x: 1}, approve=lambda call: answer)
    with pytest.raises(TypeError, match="approval hook"):
        asyncio.run(run_async(PLAIN, activities={"t": lambda c, t, x: 1},
                              approve=lambda call: answer))


# -- results that are not JSON ----------------------------------------------------------


class Opaque:
    pass


def self_referencing() -> Any:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def very_deep() -> Any:
    value: Any = 0
    for _ in range(100_000):
        value = [value]
    return value


NOT_JSON = [{1, 2}, frozenset(), b"bytes", bytearray(b"x"), float("nan"), float("-inf"),
            Opaque(), {"k": Opaque()}, {1: "int key"}, {(1, 2): "tuple key"}, [1, {2}],
            complex(1, 2), self_referencing(), very_deep(), range(3), Ellipsis]


@pytest.mark.parametrize("bad", NOT_JSON, ids=lambda v: type(v).__name__)
def test_a_result_that_is_not_json_is_notjson_everywhere(bad: Any) -> None:
    async def async_bad(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return bad

    results = run_both(BRANCHED, {"t": lambda c, t, x: bad})
    results.append(asyncio.run(run_async(BRANCHED, activities={"t": async_bad})))
    results.append(dry_run(BRANCHED, mocks={"t": lambda c, t, x: bad}).run)
    for result in results:
        assert result.calls[0].error == "NotJSON"
        assert resolve(result.context, "†state") is MISSING


# -- timeouts ---------------------------------------------------------------------------


async def hangs(call: dict[str, Any], tool: Any, context: Context) -> Any:
    await asyncio.sleep(60)


def test_a_hang_past_the_timeout_routes_to_the_error_branch() -> None:
    plan = [{"_tool": "hangs", "_outputPath": "†state.ok || †state.err"},
            {"_tool": "quick", "_outputPath": "†state.quick"},
            {"_tool": "report", "e": "†state.err", "_outputPath": "†state.reported"}]

    async def main() -> RunResult:
        started = time.monotonic()
        result = await run_async(plan, activities={"hangs": hangs, "quick": lambda c, t, x: 1,
                                                   "report": lambda c, t, x: c["e"]["type"]},
                                 timeout=0.05)
        assert time.monotonic() - started < 5
        no_tasks_left()
        return result

    result = asyncio.run(main())
    assert resolve(result.context, "†state.err.type") == "Timeout"
    assert resolve(result.context, "†state.reported") == "Timeout"
    assert resolve(result.context, "†state.quick") == 1
    assert result.errors == () and result.status == "completed"


def test_a_hang_without_a_branch_is_a_timeout_error() -> None:
    result = asyncio.run(run_async(PLAIN, activities={"t": hangs}, timeout=0.05))
    assert result.calls[0].outcome == "failed"
    assert result.errors[0]["data"]["error"] == {"type": "Timeout",
                                                 "message": "no result within 0.05 s"}


@pytest.mark.slow
def test_a_plain_activity_past_the_timeout_times_out_and_its_thread_finishes_later() -> None:
    finished = threading.Event()

    def sleepy(call: dict[str, Any], tool: Any, context: Context) -> Any:
        time.sleep(0.3)
        finished.set()
        return "too late"

    result = asyncio.run(run_async(BRANCHED, activities={"t": sleepy}, timeout=0.05))
    assert resolve(result.context, "†state.err.type") == "Timeout"
    assert resolve(result.context, "†state.ok") is MISSING  # the late result is dropped
    assert finished.wait(5)


def test_the_timeout_is_per_call() -> None:
    async def pause(call: dict[str, Any], tool: Any, context: Context) -> Any:
        await asyncio.sleep(0.02)
        return call["n"]

    plan = [{"_tool": "p", "n": i, "after": f"†state.s{i - 1}" if i else "start",
             "_outputPath": f"†state.s{i}"} for i in range(6)]
    result = asyncio.run(run_async(plan, activities={"p": pause}, timeout=0.5))
    assert resolve(result.context, "†state.s5") == 5  # 6 x 20 ms in a chain, each under 0.5 s


def test_dry_run_delays_apply_under_asyncio_only() -> None:
    mocks = {"t": {"return": 1, "delay_ms": 200}}
    started = time.monotonic()
    dry_run(PLAIN, mocks=mocks)
    assert time.monotonic() - started < 0.15
    started = time.monotonic()
    dry_run(PLAIN, mocks=mocks, interpreter="asyncio")
    assert time.monotonic() - started >= 0.19


# -- cancellation -----------------------------------------------------------------------


def test_cancelling_the_run_keeps_finished_results_and_leaves_no_task() -> None:
    events: list[str] = []

    async def quick(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return call["_tool"]

    async def fails(call: dict[str, Any], tool: Any, context: Context) -> Any:
        raise ActivityError("Broken", "broken")

    async def slow(call: dict[str, Any], tool: Any, context: Context) -> Any:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append(f"cancelled {call['_tool']}")
            raise

    plan = [{"_tool": "quick", "_outputPath": "†state.quick"},
            {"_tool": "fails", "_outputPath": "†state.fails"},
            {"_tool": "slow", "_outputPath": "†state.slow"},
            {"_tool": "slow2", "_outputPath": "†state.slow2"},
            {"_tool": "later", "x": "†state.slow", "_outputPath": "†state.later"}]

    result = cancelled_after(0.05, plan, {"quick": quick, "fails": fails, "slow": slow,
                                          "slow2": slow, "later": quick}, trace=True)
    assert result.status == "cancelled"
    assert [c.outcome for c in result.calls] == ["executed", "failed", "cancelled", "cancelled",
                                                 "pending"]
    assert resolve(result.context, "†state.quick") == "quick"
    assert [e["data"]["error"]["type"] for e in result.errors] == ["Broken"]
    assert sorted(events) == ["cancelled slow", "cancelled slow2"]
    assert {"event": "cancelled", "call": 2} in result.trace


def test_cancelling_before_anything_finished() -> None:
    result = cancelled_after(0, PLAIN, {"t": hangs})
    assert result.status == "cancelled" and result.calls[0].outcome in ("cancelled", "pending")
    assert len(result.context) == 0


def test_cancelling_while_the_approval_hook_waits() -> None:
    async def approve(call: dict[str, Any]) -> Any:
        await asyncio.sleep(60)

    async def main() -> RunResult:
        task = asyncio.create_task(run_async(PLAIN, activities={"t": lambda c, t, x: 1},
                                             approve=approve))
        await asyncio.sleep(0.02)
        task.cancel()
        result = await task
        no_tasks_left()
        return result

    result = asyncio.run(main())
    assert result.status == "cancelled" and result.calls[0].outcome == "cancelled"


def _cancelled_plain(cancels: int) -> tuple[RunResult, list[Any]]:
    """Run PLAIN's blocked plain activity on asyncio, cancel the run ``cancels`` times,
    then let the activity finish; the result and the events the observer saw."""
    release = threading.Event()
    events: list[Any] = []

    def blocked(call: dict[str, Any], tool: Any, context: Context) -> Any:
        release.wait(5)
        return "finished while cancelling"

    async def main() -> RunResult:
        task = asyncio.create_task(run_async(PLAIN, activities={"t": blocked},
                                             observer=events.append))
        for _ in range(cancels):
            await asyncio.sleep(0.05)
            task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # a plain activity cannot be interrupted: the run waits
        release.set()
        result = await task
        no_tasks_left()
        return result

    return asyncio.run(main()), events


def test_cancelling_waits_for_plain_activities_and_keeps_their_results() -> None:
    # Issue 25 item 1: the work a plain activity did while the run was being cancelled
    # happened; its outcome is kept, written and reported (it was dropped before).
    result, events = _cancelled_plain(1)
    assert result.status == "cancelled" and result.calls[0].outcome == "executed"
    assert resolve(result.context, "†state.ok") == "finished while cancelling"
    assert [type(e).__name__ for e in events] == ["Started", "Waiting", "Finished",
                                                  "Cancelled"]
    assert events[1].nodes == (0,)


def test_cancelling_twice_abandons_the_plain_activities_still_running() -> None:
    async def main() -> RunResult:
        stuck = threading.Event()

        def blocked(call: dict[str, Any], tool: Any, context: Context) -> Any:
            stuck.wait(5)
            return "too late"

        task = asyncio.create_task(run_async(PLAIN, activities={"t": blocked}))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.05)
        task.cancel()  # the second cancel: the run stops waiting
        result = await task
        no_tasks_left()
        stuck.set()
        return result

    result = asyncio.run(main())
    assert result.status == "cancelled" and result.calls[0].outcome == "cancelled"
    assert resolve(result.context, "†state.ok") is MISSING


def test_a_wait_for_timeout_around_the_run_gives_the_cancelled_result() -> None:
    async def main() -> Any:
        return await asyncio.wait_for(run_async(PLAIN, activities={"t": hangs}), 0.05)

    result = asyncio.run(main())
    assert result.status == "cancelled"


# -- one call at a time ------------------------------------------------------------------
# When a call is the only one that can run, the asyncio loop awaits it itself instead of
# starting a task for it. It must behave as a task would: a context of its own, and the
# same cancellation, timeout and failure rules.

SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("SEEN", default="unset")
CHAIN = [{"_tool": "first", "_outputPath": "†state.a"},
         {"_tool": "second", "x": "†state.a", "_outputPath": "†state.b"},
         {"_tool": "third", "x": "†state.b", "_outputPath": "†state.c"}]


def test_a_call_run_alone_keeps_its_context_variables_to_itself() -> None:
    async def first(call: dict[str, Any], tool: Any, context: Context) -> Any:
        seen = SEEN.get()
        SEEN.set("set by first")
        await asyncio.sleep(0)
        return [seen, SEEN.get()]  # its own change holds across its awaits

    async def second(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return SEEN.get()

    def third(call: dict[str, Any], tool: Any, context: Context) -> Any:  # a worker thread
        return SEEN.get()

    async def main() -> tuple[RunResult, str]:
        SEEN.set("the caller's")
        result = await run_async(CHAIN, activities={"first": first, "second": second,
                                                    "third": third})
        return result, SEEN.get()

    result, after = asyncio.run(main())
    assert resolve(result.context, "†state.a") == ["the caller's", "set by first"]
    assert resolve(result.context, "†state.b") == "the caller's"
    assert resolve(result.context, "†state.c") == "the caller's"
    assert after == "the caller's"


def test_cancelling_a_chain_while_a_call_runs_alone() -> None:
    events: list[str] = []

    async def quick(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return 1

    async def slow(call: dict[str, Any], tool: Any, context: Context) -> Any:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise

    result = cancelled_after(0.05, CHAIN, {"first": quick, "second": slow, "third": quick})
    assert result.status == "cancelled"
    assert [c.outcome for c in result.calls] == ["executed", "cancelled", "pending"]
    assert resolve(result.context, "†state.a") == 1
    assert events == ["cancelled"]


def test_a_chain_call_past_the_timeout_and_a_raising_one_are_outcomes() -> None:
    async def quick(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return 1

    plan = [{"_tool": "first", "_outputPath": "†state.a"},
            {"_tool": "hangs", "x": "†state.a", "_outputPath": "†state.b || †state.late"},
            {"_tool": "fails", "x": "†state.late", "_outputPath": "†state.c || †state.err"}]
    result = asyncio.run(run_async(plan, activities={
        "first": quick, "hangs": hangs, "fails": araising(ValueError("no"))}, timeout=0.05))
    assert resolve(result.context, "†state.late.type") == "Timeout"
    assert resolve(result.context, "†state.err.type") == "ValueError"
    assert result.status == "completed"


# -- many calls -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_thousand_concurrent_failing_calls() -> None:
    plan = [{"_tool": "fail", "n": i, "_outputPath": f"†state.r{i}"} for i in range(1000)]
    running = peak = 0

    async def fail(call: dict[str, Any], tool: Any, context: Context) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01 * (call["n"] % 3))
        running -= 1
        raise ActivityError("Failed", f"call {call['n']}")

    started = time.monotonic()
    result = asyncio.run(run_async(plan, activities={"fail": fail}))
    assert time.monotonic() - started < 30
    assert peak == 1000  # every ready call starts at once
    assert [c.outcome for c in result.calls] == ["failed"] * 1000
    # error messages come last, ordered by call index whatever the completion order
    assert [e["data"]["error"]["message"] for e in result.errors] == [
        f"call {i}" for i in range(1000)]
    assert all(m["type"] == "error" for m in result.context.to_json())


@pytest.mark.slow
def test_a_thousand_failures_routed_to_branches_under_max_concurrency() -> None:
    plan = [{"_tool": "fail", "n": i, "_outputPath": f"†state.ok{i} || †state.err{i}"}
            for i in range(1000)]
    running = peak = 0

    async def fail(call: dict[str, Any], tool: Any, context: Context) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        running -= 1
        raise ValueError(call["n"])

    result = asyncio.run(run_async(plan, activities={"fail": fail}, max_concurrency=10))
    assert peak == 10
    assert result.errors == ()
    assert resolve(result.context, "†state.err999") == {"type": "ValueError", "message": "999"}
    sync = run_sync(plan, activities={"fail": lambda c, t, x: 1 / 0})
    assert resolve(sync.context, "†state.err0.type") == "ZeroDivisionError"


def test_max_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        asyncio.run(run_async(PLAIN, activities={"t": lambda c, t, x: 1}, max_concurrency=0))


# -- no coroutine is left unawaited -----------------------------------------------------


@pytest.mark.slow
def test_no_coroutine_is_left_unawaited() -> None:
    async def value(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return 1

    async def later() -> int:
        return 2

    async def approve(call: dict[str, Any]) -> Any:
        return call["_tool"] != "denied"

    plan = [{"_tool": "a", "_outputPath": "†state.a"},
            {"_tool": "b", "_outputPath": "†state.b"},
            {"_tool": "denied", "_outputPath": "†state.c"},
            {"_tool": "hangs", "_outputPath": "†state.d || †state.e"}]
    activities = {"a": value, "b": lambda c, t, x: later(), "denied": value, "hangs": hangs}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_sync(plan[:3], activities=activities, approve=approve)
        asyncio.run(run_async(plan, activities=activities, approve=approve, timeout=0.02))
        dry_run(plan[:3], mocks=activities, approve=approve)
        dry_run(plan[:3], mocks=activities, approve=approve, interpreter="asyncio")
        gc.collect()
    assert [str(w.message) for w in caught] == []


# -- calls started at once (their first step runs as they start) -----------------------------


def test_calls_started_together_keep_their_context_variables_to_themselves() -> None:
    async def quick(call: dict[str, Any], tool: Any, context: Context) -> Any:
        seen = SEEN.get()
        SEEN.set("set by quick")  # finishes in its first step
        return seen

    async def waits(call: dict[str, Any], tool: Any, context: Context) -> Any:
        seen = SEEN.get()
        SEEN.set("set by waits")
        await asyncio.sleep(0)
        return [seen, SEEN.get()]  # its own change holds across its awaits

    async def reads(call: dict[str, Any], tool: Any, context: Context) -> Any:
        await asyncio.sleep(0)
        return SEEN.get()

    plan = [{"_tool": "quick", "_outputPath": "†state.a"},
            {"_tool": "waits", "_outputPath": "†state.b"},
            {"_tool": "reads", "_outputPath": "†state.c"},
            {"_tool": "quick", "_outputPath": "†state.d"}]

    async def main() -> tuple[RunResult, str]:
        SEEN.set("the caller's")
        result = await run_async(plan, activities={"quick": quick, "waits": waits,
                                                   "reads": reads})
        return result, SEEN.get()

    result, after = asyncio.run(main())
    assert resolve(result.context, "†state.a") == "the caller's"
    assert resolve(result.context, "†state.b") == ["the caller's", "set by waits"]
    assert resolve(result.context, "†state.c") == "the caller's"
    assert resolve(result.context, "†state.d") == "the caller's"
    assert after == "the caller's"


def test_a_call_that_finishes_in_its_first_step_needs_no_task() -> None:
    tasks: list[int] = []

    async def quick(call: dict[str, Any], tool: Any, context: Context) -> Any:
        tasks.append(len(asyncio.all_tasks()))
        return 1

    async def main() -> RunResult:
        return await run_async([{"_tool": "q", "_outputPath": f"†state.r{i}"}
                                for i in range(5)], activities={"q": quick})

    result = asyncio.run(main())
    assert [c.outcome for c in result.calls] == ["executed"] * 5
    assert tasks == [1] * 5  # only the caller's own task


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), Stop("halt")],
                         ids=lambda x: type(x).__name__)
def test_a_stop_raised_in_a_first_step_cancels_calls_whose_task_has_not_run_yet(
        exc: BaseException) -> None:
    # The slow call starts first and waits; the next one raises at once, as it starts.
    # Its task has not taken a step yet when the run stops: the cancel must still reach
    # the slow call where it waits, and no task may be left.
    events: list[str] = []

    async def slow(call: dict[str, Any], tool: Any, context: Context) -> Any:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        return 1  # pragma: no cover - never woken

    async def stops(call: dict[str, Any], tool: Any, context: Context) -> Any:
        raise exc

    plan = [{"_tool": "slow", "_outputPath": "†state.a"},
            {"_tool": "stops", "_outputPath": "†state.b || †state.err"}]

    async def main() -> None:
        started = time.monotonic()
        with pytest.raises(type(exc)):
            await run_async(plan, activities={"slow": slow, "stops": stops})
        assert time.monotonic() - started < 5
        no_tasks_left()

    asyncio.run(main())
    assert events == ["cancelled"]


def test_calls_that_fail_in_their_first_step_are_outcomes() -> None:
    async def fails(call: dict[str, Any], tool: Any, context: Context) -> Any:
        raise ValueError(f"no {call['n']}")

    async def cancels_itself(call: dict[str, Any], tool: Any, context: Context) -> Any:
        raise asyncio.CancelledError  # not the run's cancel: a failure of this call

    plan = [{"_tool": "fails", "n": 1, "_outputPath": "†state.a || †state.err1"},
            {"_tool": "cancels", "_outputPath": "†state.b || †state.err2"},
            {"_tool": "fails", "n": 3, "_outputPath": "†state.c"}]
    result = asyncio.run(run_async(plan, activities={"fails": fails,
                                                     "cancels": cancels_itself}))
    assert result.status == "completed"
    assert resolve(result.context, "†state.err1") == {"type": "ValueError", "message": "no 1"}
    assert resolve(result.context, "†state.err2.type") == "CancelledError"
    assert [c.outcome for c in result.calls] == ["executed", "executed", "failed"]


@pytest.mark.parametrize("first_step", [True, False], ids=["first step", "later step"])
def test_what_escapes_a_call_run_alone_is_what_escapes_a_call_in_a_task(first_step: bool) -> None:
    # A call that is the only one that can run is stepped by the loop itself, without a
    # wrapping coroutine; what its activity raises must end the same way as for a call in
    # a task of its own: its own CancelledError is a failure routed to its error branch,
    # a KeyboardInterrupt stops the run and is re-raised.
    async def pause() -> None:
        if not first_step:
            await asyncio.sleep(0)

    async def cancels_itself(call: dict[str, Any], tool: Any, context: Context) -> Any:
        await pause()
        raise asyncio.CancelledError

    async def interrupts(call: dict[str, Any], tool: Any, context: Context) -> Any:
        await pause()
        raise KeyboardInterrupt

    chain = [{"_tool": "one", "_outputPath": "†state.a"},
             {"_tool": "two", "x": "†state.a", "_outputPath": "†state.b || †state.err"},
             {"_tool": "one", "x": "†state.err", "_outputPath": "†state.c"}]

    async def one(call: dict[str, Any], tool: Any, context: Context) -> Any:
        return 1

    result = asyncio.run(run_async(chain, activities={"one": one, "two": cancels_itself}))
    assert result.status == "completed"
    assert resolve(result.context, "†state.err.type") == "CancelledError"
    assert resolve(result.context, "†state.c") == 1

    async def main() -> None:
        with pytest.raises(KeyboardInterrupt):
            await run_async(chain, activities={"one": one, "two": interrupts})
        no_tasks_left()

    asyncio.run(main())
