"""core/methods.py: the five write methods and every write error (SEMANTICS §2)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap

from obelisk.core.errors import ObeliskError, WriteError
from obelisk.core.methods import METHODS, Method, apply_write
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING, freeze

SET, MERGE, ASSIGN, PUSH, CONCAT = Method.SET, Method.MERGE, Method.ASSIGN, Method.PUSH, Method.CONCAT
M = MISSING


def strict(value: Any) -> str:
    return "MISSING" if value is MISSING else json.dumps(value, sort_keys=True)


def write(old: Any, path: tuple[Any, ...], method: Method, value: Any) -> Any:
    root = MISSING if old is MISSING else freeze(old)
    return thaw(apply_write(root, path, method, freeze(value)))


def test_the_method_table_is_complete() -> None:
    assert {m.value for m in Method} == {"set", "merge", "assign", "push", "concat"}
    assert set(METHODS) == set(Method)


# (old root, path, method, value, new root)
WRITES: list[tuple[Any, tuple[Any, ...], Method, Any, Any]] = [
    # set: the new value replaces whatever was there.
    (M, (), SET, 1, 1),
    (M, (), SET, None, None),
    (M, ("a",), SET, 1, {"a": 1}),
    (M, ("user", "status"), SET, "x", {"user": {"status": "x"}}),  # objects created on the way
    ({"a": {"x": 1}}, ("a",), SET, 1, {"a": 1}),
    ({"a": {"x": 1}}, ("a", "y"), SET, 2, {"a": {"x": 1, "y": 2}}),
    ({"a": {}}, ("a", "b", "c"), SET, 2, {"a": {"b": {"c": 2}}}),
    ({"a": [1, 2]}, ("a", 0), SET, 9, {"a": [9, 2]}),
    ({"a": [1, 2]}, ("a", -1), SET, 9, {"a": [1, 9]}),
    ({"a": [1, 2]}, ("a", -2), SET, 9, {"a": [9, 2]}),
    ({"a": [1, 2]}, ("a",), SET, [3], {"a": [3]}),
    ({"a": [{"b": 1}]}, ("a", 0, "c"), SET, 2, {"a": [{"b": 1, "c": 2}]}),
    ({"a": {"0": 1}}, ("a", 0), SET, 9, {"a": {"0": 9}}),  # index on an object: decimal key
    ({"a": {}}, ("a", 3), SET, 9, {"a": {"3": 9}}),
    (5, (), SET, {"a": 1}, {"a": 1}),  # a scalar root is replaced
    ({"a": 1}, ("a",), SET, None, {"a": None}),
    ({"a": None}, ("a",), SET, 1, {"a": 1}),
    ([1], (), SET, {"x": 1}, {"x": 1}),
    # merge: deep; arrays and scalars are replaced.
    (M, (), MERGE, {"a": 1}, {"a": 1}),
    (M, (), MERGE, 5, 5),
    (M, ("a", "b"), MERGE, {"c": 1}, {"a": {"b": {"c": 1}}}),
    ({"a": 1, "b": {"c": 1, "d": 2}}, (), MERGE, {"b": {"c": 9}, "e": 3},
     {"a": 1, "b": {"c": 9, "d": 2}, "e": 3}),
    ({"a": {"b": {"c": {"d": 1, "e": 2}}}}, (), MERGE, {"a": {"b": {"c": {"d": 9}}}},
     {"a": {"b": {"c": {"d": 9, "e": 2}}}}),
    ({"a": [1, 2]}, (), MERGE, {"a": [3]}, {"a": [3]}),  # arrays are replaced
    ({"a": {"x": 1}}, (), MERGE, {"a": [3]}, {"a": [3]}),
    ({"a": [1]}, (), MERGE, {"a": {"x": 1}}, {"a": {"x": 1}}),
    ({"a": {"x": 1}}, (), MERGE, {"a": None}, {"a": None}),  # null replaces too
    ({"a": {"x": 1}}, (), MERGE, {"a": "s"}, {"a": "s"}),
    ({"a": {"x": 1}}, (), MERGE, {}, {"a": {"x": 1}}),
    ({"a": 1}, (), MERGE, [1], [1]),
    ([1, 2], (), MERGE, [3], [3]),
    ("s", (), MERGE, {"a": 1}, {"a": 1}),
    ({"a": {"y": 2}}, ("a",), MERGE, {"x": 1}, {"a": {"x": 1, "y": 2}}),
    ({"a": [{"y": 2}]}, ("a", -1), MERGE, {"x": 1}, {"a": [{"x": 1, "y": 2}]}),
    # assign: shallow; nested objects are replaced whole.
    (M, (), ASSIGN, {"a": 1}, {"a": 1}),
    (M, ("a",), ASSIGN, 5, {"a": 5}),
    ({"a": {"x": 1}, "b": 1}, (), ASSIGN, {"a": {"y": 2}}, {"a": {"y": 2}, "b": 1}),
    ({"a": {"x": 1}, "b": 1}, (), ASSIGN, {"c": 3}, {"a": {"x": 1}, "b": 1, "c": 3}),
    ({"a": [1]}, ("a",), ASSIGN, [2], {"a": [2]}),
    ({"a": {"x": 1}}, ("a",), ASSIGN, 7, {"a": 7}),
    (3, (), ASSIGN, {"a": 1}, {"a": 1}),
    # push: one element; MISSING becomes [value].
    (M, (), PUSH, 1, [1]),
    (M, ("a",), PUSH, 1, {"a": [1]}),
    (M, ("a", "b"), PUSH, "x", {"a": {"b": ["x"]}}),
    ({"a": [1]}, ("a",), PUSH, 2, {"a": [1, 2]}),
    ({"a": [1]}, ("a",), PUSH, [2, 3], {"a": [1, [2, 3]]}),  # an array is one element
    ({"a": [1]}, ("a",), PUSH, None, {"a": [1, None]}),
    ({"a": []}, ("a",), PUSH, {"k": 1}, {"a": [{"k": 1}]}),
    ({"a": [[1], [2]]}, ("a", -1), PUSH, 3, {"a": [[1], [2, 3]]}),
    ({"b": 1}, ("a",), PUSH, 1, {"b": 1, "a": [1]}),
    # concat: every element; MISSING becomes the value.
    (M, (), CONCAT, [1, 2], [1, 2]),
    (M, ("a",), CONCAT, [], {"a": []}),
    ({"a": [0]}, ("a",), CONCAT, [1, 2], {"a": [0, 1, 2]}),
    ({"a": [0]}, ("a",), CONCAT, [], {"a": [0]}),
    ({"a": [0]}, ("a",), CONCAT, [[1]], {"a": [0, [1]]}),
    ([0], (), CONCAT, [None], [0, None]),
]


@pytest.mark.parametrize(("old", "path", "method", "value", "new"), WRITES)
def test_apply_write(old: Any, path: tuple[Any, ...], method: Method, value: Any, new: Any) -> None:
    assert strict(write(old, path, method, value)) == strict(new)


@pytest.mark.parametrize(("old", "path", "method", "value", "new"), WRITES)
def test_apply_write_leaves_the_old_root_unchanged(
    old: Any, path: tuple[Any, ...], method: Method, value: Any, new: Any
) -> None:
    if old is MISSING:
        return
    root = freeze(old)
    before = strict(thaw(root))
    apply_write(root, path, method, freeze(value))
    assert strict(thaw(root)) == before


def test_writes_share_untouched_structure() -> None:
    big = freeze({"a": {"x": [1, 2, 3]}, "b": {"y": 1}})
    new = apply_write(big, ("b", "y"), SET, 2)
    assert new["a"] is big["a"]


# (old root, path, method, value, words the error text must contain)
ERRORS = [
    # push onto a non-array
    ({"a": {"x": 1}}, ("a",), PUSH, 1, ["push", "array", "object"]),
    ({"a": "s"}, ("a",), PUSH, 1, ["push", "array", "string"]),
    ({"a": None}, ("a",), PUSH, 1, ["push", "array", "null"]),
    ({"a": 0}, ("a",), PUSH, 1, ["push", "array", "integer"]),
    ({"a": 1.5}, ("a",), PUSH, 1, ["push", "array", "number"]),
    ({"a": False}, ("a",), PUSH, 1, ["push", "array", "boolean"]),
    ({}, (), PUSH, 1, ["push", "array", "object"]),
    # concat of a non-array value, or onto a non-array
    (M, (), CONCAT, 1, ["concat", "array to append", "integer"]),
    (M, ("a",), CONCAT, {"x": 1}, ["concat", "array to append", "object"]),
    ({"a": [1]}, ("a",), CONCAT, "s", ["concat", "array to append", "string"]),
    ({"a": [1]}, ("a",), CONCAT, None, ["concat", "array to append", "null"]),
    ({"a": {}}, ("a",), CONCAT, [1], ["concat", "array there", "object"]),
    ({"a": "s"}, ("a",), CONCAT, [1], ["concat", "array there", "string"]),
    ({"a": None}, ("a",), CONCAT, [1], ["concat", "array there", "null"]),
    # writing through a scalar
    ({"a": 1}, ("a", "b"), SET, 2, ["a holds an integer", "nothing can be written below"]),
    ({"a": "s"}, ("a", 0), SET, 2, ["a holds a string"]),
    ({"a": None}, ("a", "b"), MERGE, {}, ["a holds a null"]),
    ({"a": {"b": True}}, ("a", "b", "c"), PUSH, 1, ["a.b holds a boolean"]),
    (7, ("x",), SET, 1, ["the root holds an integer"]),
    # a string key inside an array
    ({"a": [1]}, ("a", "x"), SET, 2, ["a is an array", "'x'", "integer index"]),
    ({"a": [1]}, ("a", "0"), SET, 2, ["a is an array", "'0'"]),
    ([], ("x",), SET, 2, ["the root is an array"]),
    # an out-of-range index: no auto-append
    ({"a": [1]}, ("a", 1), SET, 2, ["index 1 is out of range", "length 1", "push"]),
    ({"a": []}, ("a", 0), SET, 2, ["index 0 is out of range", "length 0"]),
    ({"a": [1, 2]}, ("a", -3), SET, 2, ["index -3 is out of range"]),
    ({"a": [1]}, ("a", 5, "b"), SET, 2, ["index 5 is out of range"]),
    ({"a": []}, ("a", -1), PUSH, 2, ["index -1 is out of range"]),
    # creating an array element through a MISSING container
    (M, (0,), SET, 1, ["the root does not exist", "element 0 cannot be created"]),
    (M, ("a", 0), PUSH, 1, ["a does not exist", "element 0"]),
    ({"a": {}}, ("a", "b", -1), SET, 1, ["a.b does not exist", "element -1"]),
    ({}, ("items", 0, "id"), SET, 1, ["items does not exist"]),
    # a negative index on an object
    ({"a": {}}, ("a", -1), SET, 1, ["a is an object", "negative index -1"]),
    ({"a": {"-1": 0}}, ("a", -1), SET, 1, ["negative index -1"]),
    ({}, (-2,), MERGE, {}, ["the root is an object", "negative index -2"]),
]


@pytest.mark.parametrize(("old", "path", "method", "value", "words"), ERRORS)
def test_apply_write_errors(
    old: Any, path: tuple[Any, ...], method: Method, value: Any, words: list[str]
) -> None:
    with pytest.raises(WriteError) as info:
        write(old, path, method, value)
    text = str(info.value)
    for word in words:
        assert word in text, text
    assert isinstance(info.value, ObeliskError)


def test_a_write_error_is_located_by_the_caller() -> None:
    with pytest.raises(WriteError) as info:
        apply_write(freeze({"a": 1}), ("a",), PUSH, 2)
    located = info.value.located(
        kind="state", path=("a",), method="push", message_index=3, instance="①"
    )
    assert (located.kind, located.path, located.method) == ("state", ("a",), "push")
    assert (located.message_index, located.instance) == (3, "①")
    assert str(located).startswith("cannot push at †state.a (instance '①') in message 3: ")
    assert located.reason == info.value.reason


@pytest.mark.slow
def test_deep_merge_is_not_recursive() -> None:
    # Two objects sharing 3,000 levels (built with writes, so no freeze limit applies):
    # deep merge must not hit Python's recursion limit.
    depth = 3000
    path = ("a",) * depth
    left = apply_write(MISSING, path, SET, pmap({"x": 1}))
    right = apply_write(MISSING, path, SET, pmap({"y": 2}))
    merged = apply_write(left, (), MERGE, right)
    node = merged
    for _ in range(depth):
        node = node["a"]
    assert thaw(node) == {"x": 1, "y": 2}


@pytest.mark.slow
def test_deep_paths_are_iterative_and_linear() -> None:
    # A write once rendered its location at every step: quadratic, minutes for this path.
    path: tuple[Any, ...] = ("k",) * 20_000
    started = time.perf_counter()
    root = apply_write(MISSING, path, SET, 1)
    root = apply_write(root, path, SET, 2)
    assert time.perf_counter() - started < 5
    node = root
    for _ in range(20_000):
        node = node["k"]
    assert node == 2


def _plain_set(root: Any, path: tuple[str, ...], value: Any) -> Any:
    """``set`` on plain JSON, the obvious way: objects made on the way, a non-object in the
    way refused (the model the write of a key path must agree with)."""
    if not path:
        return value
    if root is MISSING:
        root = {}
    if not isinstance(root, dict):
        raise WriteError("not an object")
    below = root.get(path[0], MISSING)
    return {**root, path[0]: _plain_set(below, path[1:], value)}


_KEYS = st.sampled_from(["a", "b", "c"])
_TREES = st.recursive(
    st.one_of(st.none(), st.integers(0, 3), st.text(max_size=2)),
    lambda inner: st.one_of(st.dictionaries(_KEYS, inner, max_size=3),
                            st.lists(inner, max_size=2)),
    max_leaves=8,
)


@pytest.mark.slow
@settings(deadline=None, max_examples=300)
@given(st.dictionaries(_KEYS, _TREES, max_size=3), st.lists(_KEYS, min_size=1, max_size=4),
       _TREES)
def test_set_of_a_key_path_agrees_with_plain_json(root: Any, path: list[str],
                                                  value: Any) -> None:
    # The write of a key path through objects takes a shorter route in apply_write; it
    # must make exactly what setting the key on plain JSON makes, and refuse the same.
    try:
        expected = _plain_set(root, tuple(path), value)
    except WriteError:
        with pytest.raises(WriteError):
            write(root, tuple(path), SET, value)
        return
    assert strict(write(root, tuple(path), SET, value)) == strict(expected)


