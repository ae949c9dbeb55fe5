"""The context's Appender and the open maps under it: many writes appended in one go make
exactly the context appending them one by one makes (messages, views and their layout,
versions, errors, the index of describing messages)."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings
from pyrsistent import PMap, PVector

from obelisk.core.appender import Appender
from obelisk.core.context import Context
from obelisk.core.errors import WriteError
from obelisk.core.messages import Write, output_message
from obelisk.core.methods import Method, set_in_open
from obelisk.core.pathtext import render_reference
from obelisk.core.pmaps import OpenMap
from obelisk.core.values import freeze


def layout(value: Any) -> Any:
    """A value with every map's entries in the order its buckets keep them: two maps with
    the same layout give the same ``layout``; equal maps laid out differently do not."""
    if isinstance(value, PMap):
        return ("map", [(key, layout(v)) for key, v in value.items()])
    if isinstance(value, PVector):
        return ("array", [layout(v) for v in value])
    return value


def state_of(context: Context) -> Any:
    """Everything a context holds that a reader can tell apart."""
    views = {}
    for kind in context.kinds:
        for instance in (None, *context.instances):
            value, error = context.view(kind, instance)
            views[kind, instance] = (layout(value), str(error) if error else None)
    return (context.to_json(), views, context.kinds, context.instances,
            [m for m in context.described()],
            {kind: context._globals[kind][1] for kind in context.kinds if kind in context._globals})


def test_set_in_open_takes_only_sets_through_objects() -> None:
    root = OpenMap(freeze({"a": {"b": 1}, "n": 2, "arr": [1]}))  # type: ignore[arg-type]
    assert set_in_open(root, ("a", "c"), 3)
    assert set_in_open(root, ("a", "new", "x"), 4)  # the last container is created
    assert not set_in_open(root, ("n", "x"), 5)  # through a number
    assert not set_in_open(root, ("arr", 0), 5)  # an index
    assert not set_in_open(root, ("missing", "deep", "x"), 5)  # two levels missing
    assert not set_in_open(root, (), 5)  # the root itself
    assert root.close() == freeze({"a": {"b": 1, "c": 3, "new": {"x": 4}}, "n": 2,
                                   "arr": [1]})


# -- the appender against Context.append_write --------------------------------------------

SEGMENTS = st.sampled_from(["a", "b", "c", 0, 1, -1])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["x", "y"]),
    lambda inner: st.lists(inner, max_size=2)
    | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=6)
WRITES = st.builds(
    lambda kind, instance, path, method, value: (kind, instance, tuple(path), method, value),
    st.sampled_from(["state", "input", "other"]),
    st.sampled_from([None, None, None, "i1"]),
    st.lists(SEGMENTS, max_size=3),
    st.sampled_from([Method.SET, Method.SET, Method.SET, Method.MERGE, Method.PUSH,
                     Method.ASSIGN, Method.CONCAT]),
    VALUES)
#: One step: a group of writes appended all or nothing, then maybe the context read.
STEPS = st.lists(st.tuples(st.lists(WRITES, min_size=1, max_size=3), st.booleans()),
                 max_size=25)


def message_and_write(kind: str, instance: str | None, path: tuple[Any, ...], method: Method,
                      value: Any, number: int) -> tuple[Any, Write]:
    frozen = freeze(value)
    message = output_message(kind, path, render_reference(kind, path), method, instance,
                             freeze({"_tool": "t", "n": number}), frozen, "2026-01-01")
    return message, Write(kind, instance, path, method, frozen)


def start_context(seed: Any) -> Context:
    context = Context.of([{"type": "data", "kind": "state", "data": seed}])
    return context


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(STEPS, st.sampled_from([{}, {"a": {"b": 1}}, {"a": 1, "c": [1, 2]}]), st.booleans())
def test_appending_in_one_go_makes_the_context_appending_one_by_one_makes(
        steps: list[tuple[list[Any], bool]], seed: Any, fast: bool) -> None:
    # ``fast`` False: a pyrsistent whose maps the import check refused (every write
    # then takes Context.append_write's route).
    one_by_one = start_context(seed)
    appender = Appender(start_context(seed))
    appender._fast = fast
    # A single call's output appended by the context's own shortcut (the engine's route
    # when one call completes alone), every other group by Context.append_writes.
    by_output = start_context(seed)
    number = 0
    for group, read in steps:
        pairs = []
        for write in group:
            pairs.append(message_and_write(*write, number))
            number += 1
        # One by one, all or nothing: the engine's rule for a call's fan-out.
        context: Context = one_by_one
        expected: WriteError | None = None
        for message, write in pairs:
            context, expected = context.append_write(message, write, output=True)
            if expected is not None:
                break
        else:
            one_by_one = context
        if len(pairs) == 1 and number % 2:  # the engine's own route for one write
            message, write = pairs[0]
            error = appender.append_output(message, write.kind, write.instance, write.path,
                                           write.method, write.value)
        else:
            error = appender.append_writes(pairs, output=True)
        assert str(error) == str(expected)
        if len(pairs) == 1:
            message, write = pairs[0]
            got, error = by_output.append_output(message, write.kind, write.instance,
                                                 write.path, write.method, write.value)
        else:
            got, error = by_output.append_writes(pairs, output=True)
        assert str(error) == str(expected)
        assert (got is by_output) == (expected is not None)  # nothing of a failure kept
        by_output = got
        if read:
            assert state_of(appender.context()) == state_of(one_by_one)
            assert state_of(by_output) == state_of(one_by_one)
    made = appender.context()
    assert state_of(made) == state_of(one_by_one)
    assert made == one_by_one
    assert state_of(by_output) == state_of(one_by_one)
    # The contexts it made are ordinary ones: appending goes on as on any other.
    more = message_and_write("state", None, ("a",), Method.SET, 1, number)
    assert state_of(made.append_write(*more)[0]) == state_of(one_by_one.append_write(*more)[0])


def test_a_write_that_takes_the_general_route_keeps_the_writes_before_it() -> None:
    appender = Appender(start_context({"a": {}}))
    one_by_one = start_context({"a": {}})
    writes = [("state", None, ("a", "x"), Method.SET, 1),
              ("state", None, ("a",), Method.MERGE, {"y": 2}),  # general: not a set
              ("state", None, ("a", "z"), Method.SET, 3),
              ("state", None, ("a", "x", "deeper"), Method.SET, 4)]  # through a number
    for number, write in enumerate(writes):
        message, w = message_and_write(*write, number)
        got = appender.append_write(message, w, output=True)
        one_by_one, expected = one_by_one.append_write(message, w, output=True)
        assert str(got) == str(expected)
    assert state_of(appender.context()) == state_of(one_by_one)
    assert appender.context().value("state", ("a",)) == freeze({"x": 1, "y": 2, "z": 3})


def test_the_described_index_keeps_input_messages() -> None:
    appender = Appender(Context.of([{"type": "data", "kind": "input", "data": {}}]))
    for number in range(3):
        appender.append_write(*message_and_write("input", None, (f"k{number}",), Method.SET,
                                                 number, number), output=True)
    made = appender.context()
    assert [m["kind"] for m in made.described()] == ["input"] * 4
    assert list(made.described()) == [m for m in made if m.get("kind") == "input"]


def test_a_single_output_keeps_the_described_index_and_counts_the_write() -> None:
    # Context.append_output's shortcut does what append_write's route does for it: an
    # input message is indexed, and the kind's version counts the write.
    context = Context.of([{"type": "data", "kind": "input", "data": {}}])
    one_by_one = context
    for number in range(3):
        message, write = message_and_write("input", None, (f"k{number}",), Method.SET,
                                           number, number)
        context, error = context.append_output(message, "input", None, write.path,
                                               Method.SET, write.value)
        assert error is None
        one_by_one = one_by_one.append_write(message, write, output=True)[0]
    assert [m["kind"] for m in context.described()] == ["input"] * 4
    assert context._globals["input"][1] == 4
    assert state_of(context) == state_of(one_by_one)
