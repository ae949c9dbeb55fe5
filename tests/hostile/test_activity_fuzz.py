"""A hypothesis fuzzer over activity behaviours, under every interpreter.

Generated plans (a few calls, each reading the context or earlier results, some with an
error branch, some scoped) run with activities that raise anything (any ``Exception``
subclass, ``StopIteration``, ``GeneratorExit``, a ``CancelledError`` of their own), return
anything (JSON, sets, NaN, huge or self-referential values, pyrsistent containers with
bad insides, non-string ``Branch`` paths), hang past the timeout, or cancel the run.

Whatever they do, each run must:
- return a result: no internal error, never an exception (but the ``KeyboardInterrupt``
  an activity raised, which stops the run on purpose);
- end, bounded by a timeout (``GUARD``);
- give every call exactly one outcome, every failed call exactly one error message, and
  a final context that is valid JSON all the way down;
- leave unchanged every context it handed out (the initial context, the scoped contexts
  the activities saw, the result's), even after the activities and the test change
  everything they were given.

To extend it, add a behaviour to ``RETURNS`` or ``RAISES`` (a name and a function making
the value or exception), or an interpreter to ``INTERPRETERS``.
"""

from __future__ import annotations

import asyncio
import copy
import enum
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyrsistent import pmap, pset, pvector

from obelisk import ActivityError, Branch, Context, RunResult, dry_run, run_async, run_sync

GUARD = 30.0  # seconds: no run may take longer
TIMEOUT = 0.05  # per call, under asyncio: a hang past it is a Timeout
LIMIT = 2_000  # max_value_nodes for the fuzzed runs, so "huge" stays cheap


class Broken(Exception):
    """An exception whose str() raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


class Color(enum.IntEnum):
    RED = 1


class Reader(Mapping[str, Any]):
    """A mapping whose iteration raises."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("cannot iterate")

    def __len__(self) -> int:
        return 1


def _self_list() -> Any:
    value: list[Any] = [1]
    value.append(value)
    return value


def _self_dict() -> Any:
    value: dict[str, Any] = {}
    value["me"] = value
    return value


async def _coroutine() -> int:
    return 1


#: Returned values that are not plain JSON (each made fresh for every call).
RETURNS: dict[str, Callable[[], Any]] = {
    "set": lambda: {"a": {1, 2}},
    "nan": lambda: [math.nan],
    "inf": lambda: {"x": -math.inf},
    "big-int": lambda: 10 ** 5000,
    "bytes": lambda: b"\x00",
    "object": object,
    "self-list": _self_list,
    "self-dict": _self_dict,
    "surrogate": lambda: {"s": "a\udc80"},
    "surrogate-key": lambda: {"\ud800": 1},
    "non-string-key": lambda: {1: 2},
    "pmap-set": lambda: pmap({"a": pset([1])}),
    "pmap-list": lambda: pmap({"a": [1, {"b": [2]}]}),
    "pvector-dict": lambda: pvector([{"a": 1}]),
    "pmap-int-key": lambda: pmap({(1,): 1}),
    "huge": lambda: list(range(LIMIT * 2)),
    "deep": lambda: json.loads("[" * 600 + "]" * 600),
    "enum": lambda: {"c": Color.RED},
    "reader": Reader,
    "coroutine": _coroutine,
    "branch-none": lambda: Branch(None, 1),  # type: ignore[arg-type]
    "branch-int": lambda: Branch(3, 1),  # type: ignore[arg-type]
    "branch-unknown": lambda: Branch("†state.nowhere", 1),
    "branch-bad-value": lambda: Branch("†state.err", {1, 2}),
    "branch-syntax": lambda: Branch("†††", 1),
}

#: Exceptions an activity raises (each made fresh for every call).
RAISES: dict[str, Callable[[], BaseException]] = {
    "value-error": lambda: ValueError("bad"),
    "stop-iteration": StopIteration,
    "stop-async-iteration": StopAsyncIteration,
    "generator-exit": GeneratorExit,
    "cancelled": asyncio.CancelledError,
    "broken-str": Broken,
    "memory": MemoryError,
    "recursion": RecursionError,
    "activity-error": lambda: ActivityError("Declined", "card", {"set": {1}}),
    "activity-error-odd": lambda: ActivityError(None, None, float("nan")),  # type: ignore[arg-type]
    "surrogate-message": lambda: ValueError("x\ud800"),
}

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=8,
)

BEHAVIOUR = st.one_of(
    st.tuples(st.just("json"), JSON),
    st.tuples(st.just("return"), st.sampled_from(sorted(RETURNS))),
    st.tuples(st.just("raise"), st.sampled_from(sorted(RAISES))),
    st.tuples(st.just("hang"), st.none()),
    st.tuples(st.just("cancel"), st.none()),
    st.tuples(st.just("mutate"), st.none()),
)


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[str, Any]]]:
    """A plan of 1-4 calls (each reads the context or earlier results) and a behaviour per
    tool."""
    size = draw(st.integers(1, 4))
    calls = []
    for i in range(size):
        sources = ["†state.seed", "†state.list", *[f"†state.v{j}" for j in range(i)]]
        call: dict[str, Any] = {"_tool": f"t{i}", "x": draw(st.sampled_from(sources))}
        if draw(st.booleans()):
            call["_outputPath"] = f"†state.v{i} || †state.err{i}"
        else:
            call["_outputPath"] = f"†state.v{i}"
        if draw(st.booleans()):
            call["_scopes"] = ["state"]
        calls.append(call)
    return calls, [draw(BEHAVIOUR) for _ in range(size)]


CONTEXT = [{"type": "state", "state": {"seed": {"a": [1, {"b": 2}]}, "list": [1, 2, 3]}}]


def mutate(value: Any) -> None:
    """Change every plain container inside ``value``."""
    if isinstance(value, dict):
        for child in list(value.values()):
            mutate(child)
        value["mutated"] = True
    elif isinstance(value, list):
        for child in list(value):
            mutate(child)
        value.append("mutated")


class World:
    """The activities of one run and what they saw."""

    def __init__(self, behaviours: list[tuple[str, Any]], style: str) -> None:
        self.behaviours = behaviours
        self.style = style
        self.seen: list[tuple[Context, Any]] = []  # each scoped context and its JSON then
        self.given: list[Any] = []  # every call dict handed out
        self.run_task: asyncio.Task[Any] | None = None
        self.event_loop: asyncio.AbstractEventLoop | None = None
        self.loop = ""  # the dry run's loop

    def act(self, index: int, call: dict[str, Any], context: Context) -> Any:
        kind, arg = self.behaviours[index]
        self.seen.append((context, copy.deepcopy(context.to_json())))
        self.given.append(call)
        if kind == "json":
            return copy.deepcopy(arg)
        if kind == "return":
            return RETURNS[arg]()
        if kind == "raise":
            raise RAISES[arg]()
        if kind == "mutate":
            mutate(call)
            mutate(context.to_json())
            return call
        if kind == "cancel" and self.run_task is not None and self.event_loop is not None:
            # From the loop or from a worker thread alike: cancel the whole run.
            self.event_loop.call_soon_threadsafe(self.run_task.cancel)
        return {"ok": index}

    def activities(self) -> dict[str, Callable[..., Any]]:
        out: dict[str, Callable[..., Any]] = {}
        for index, (kind, _) in enumerate(self.behaviours):
            out[f"t{index}"] = self._activity(index, kind)
        return out

    def _activity(self, index: int, kind: str) -> Callable[..., Any]:
        if self.style == "async":
            async def activity(call: dict[str, Any], tool: Any, context: Context) -> Any:
                if kind == "hang":
                    await asyncio.sleep(5)  # past the timeout: cancelled there
                return self.act(index, call, context)
            return activity

        def plain(call: dict[str, Any], tool: Any, context: Context) -> Any:
            if kind == "hang":
                time.sleep(0.2)  # a thread cannot be interrupted: it ends on its own
            return self.act(index, call, context)
        return plain


def run_under(name: str, plan: list[dict[str, Any]], world: World, context: Context) -> RunResult:
    kind, _ = name.split("-")
    if kind == "sync":
        return run_sync(plan, context, activities=world.activities(), max_value_nodes=LIMIT)
    if kind == "dry":
        return dry_run(plan, context, mocks=world.activities(), interpreter=world.loop,
                       max_value_nodes=LIMIT).run

    async def go() -> RunResult:
        task = asyncio.create_task(run_async(plan, context, activities=world.activities(),
                                             timeout=TIMEOUT, max_value_nodes=LIMIT))
        world.run_task, world.event_loop = task, asyncio.get_running_loop()
        return await asyncio.wait_for(task, GUARD)
    return asyncio.run(go())


#: (name, activity style, dry run loop)
INTERPRETERS = {
    "sync-plain": ("plain", ""), "sync-async": ("async", ""),
    "asyncio-plain": ("plain", ""), "asyncio-async": ("async", ""),
    "dry-sync": ("plain", "sync"), "dry-asyncio": ("async", "asyncio"),
}


@pytest.mark.slow
@settings(max_examples=120, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.sampled_from(sorted(INTERPRETERS)))
def test_no_activity_behaviour_breaks_a_run(drawn: tuple[list[Any], list[Any]],
                                            name: str) -> None:
    plan, behaviours = drawn
    style, loop = INTERPRETERS[name]
    if not name.startswith("asyncio"):  # a hang is bounded only by run_async's timeout
        behaviours = [("json", 1) if b[0] in ("hang", "cancel") else b for b in behaviours]
    world = World(behaviours, style)
    world.loop = loop
    context = Context.of(CONTEXT)
    initial = copy.deepcopy(context.to_json())

    started = time.monotonic()
    result = run_under(name, plan, world, context)
    assert time.monotonic() - started < GUARD

    # Every call ends with exactly one outcome; every failed call with one error message.
    assert len(result.calls) == len(plan)
    assert sorted(c.call for c in result.calls) == list(range(len(plan)))
    final = {"executed", "skipped", "failed"}
    if result.status == "completed":
        assert {c.outcome for c in result.calls} <= final, result.calls
    else:
        assert any(b[0] in ("cancel", "hang") for b in behaviours)
    failed = [c for c in result.calls if c.outcome == "failed"]
    assert all(c.error is not None for c in failed)
    assert len(result.errors) == sum(1 for c in result.calls if c.error is not None)

    # The final context is JSON all the way down, and can be written as UTF-8.
    text = json.dumps(result.context.to_json(), allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")

    # Nothing handed out changes a context: change all of it, then look again.
    after = copy.deepcopy(result.context.to_json())
    mutate(world.given)
    mutate(result.context.to_json())
    mutate(list(result.errors))
    for seen, _ in world.seen:
        mutate(seen.to_json())
    assert context.to_json() == initial
    assert result.context.to_json() == after
    for seen, then in world.seen:
        assert seen.to_json() == then
