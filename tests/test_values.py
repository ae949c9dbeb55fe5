"""core/values.py: MISSING, freeze, thaw, present (SEMANTICS §2: MISSING is not null)."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import PMap, PVector, pmap, pvector

from obelisk.core import pmaps
from obelisk.core.errors import NotJSONError, ValueTooLarge
from obelisk.core.plain import thaw, thaw_counted
from obelisk.core.values import MISSING, UNLIMITED, freeze, present


def _count(value: Any) -> int:
    """The JSON values a plain value holds (each object, array and scalar counts one)."""
    if isinstance(value, dict):
        return 1 + sum(_count(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_count(v) for v in value)
    return 1


def strict(value: Any) -> str:
    """JSON text that tells true from 1 and 1 from 1.0 (``==`` does not)."""
    return json.dumps(value, sort_keys=True)


# -- MISSING ---------------------------------------------------------------------------


def test_missing_is_a_falsy_singleton_distinct_from_null() -> None:
    assert MISSING is not None
    assert MISSING != None  # noqa: E711 - the point is that null and MISSING differ
    assert not MISSING
    assert repr(MISSING) == "MISSING"
    assert copy.deepcopy(MISSING) is MISSING
    assert pickle.loads(pickle.dumps(MISSING)) is MISSING


def test_missing_is_exported_once() -> None:
    import obelisk
    import obelisk.core

    assert obelisk.MISSING is MISSING
    assert obelisk.core.MISSING is MISSING


# -- present: the test of || and && ----------------------------------------------------

PRESENT: list[tuple[Any, bool]] = [
    (MISSING, False),
    (None, False),
    (0, True),
    (0.0, True),
    ("", True),
    (False, True),
    (pvector(), True),
    (pmap(), True),
    ("†x", True),
]


@pytest.mark.parametrize(("value", "expected"), PRESENT)
def test_present(value: Any, expected: bool) -> None:
    assert present(value) is expected


# -- freeze ------------------------------------------------------------------------------

FREEZE = [
    (None, None),
    (True, True),
    (False, False),
    (0, 0),
    (-7, -7),
    (1.5, 1.5),
    ("", ""),
    ("†state.x", "†state.x"),
    ([], pvector()),
    ({}, pmap()),
    ([1, [2, [3]]], pvector([1, pvector([2, pvector([3])])])),
    ({"a": {"b": [1, {"c": None}]}}, pmap({"a": pmap({"b": pvector([1, pmap({"c": None})])})})),
    ({"имя": "Алекс"}, pmap({"имя": "Алекс"})),
    ((1, 2), pvector([1, 2])),  # a tuple is an array
]


@pytest.mark.parametrize(("plain", "frozen"), FREEZE)
def test_freeze(plain: Any, frozen: Any) -> None:
    result = freeze(plain)
    assert result == frozen
    assert type(result) is type(frozen)


def test_freeze_makes_nested_containers_persistent() -> None:
    result = freeze({"a": [{"b": []}]})
    assert isinstance(result, PMap)
    assert isinstance(result["a"], PVector)
    assert isinstance(result["a"][0], PMap)
    assert isinstance(result["a"][0]["b"], PVector)


def test_freeze_does_not_alias_the_input() -> None:
    plain: dict[str, Any] = {"a": [1]}
    frozen = freeze(plain)
    plain["a"].append(2)
    plain["b"] = 3
    assert thaw(frozen) == {"a": [1]}


def test_freeze_shared_but_acyclic_containers() -> None:
    shared = [1, {"x": 2}]
    assert thaw(freeze({"a": shared, "b": shared, "c": [shared, shared]})) == {
        "a": shared, "b": shared, "c": [shared, shared],
    }


def test_freeze_is_idempotent() -> None:
    once = freeze({"a": [1, {"b": 2}]})
    assert freeze(once) == once


def _cycle_in_list() -> Any:
    a: list[Any] = []
    a.append(a)
    return a


def _cycle_in_dict() -> Any:
    d: dict[str, Any] = {}
    d["x"] = [1, {"y": d}]
    return d


NOT_JSON = [
    # (value, a JSON Pointer the error points at, a word the reason contains)
    (float("nan"), "", "nan"),
    (float("inf"), "", "inf"),
    (float("-inf"), "", "inf"),
    ({"a": [1, float("nan")]}, "/a/1", "nan"),
    ({1: "x"}, "", "key"),
    ({"a": {None: 1}}, "/a", "key"),
    ({1, 2}, "", "set"),
    ({"a": {1}}, "/a", "set"),
    (b"bytes", "", "bytes"),
    ({"a": [b"x"]}, "/a/0", "bytes"),
    (object(), "", "object"),
    ({"a/b": {"c~d": float("nan")}}, "/a~1b/c~0d", "nan"),  # RFC 6901 escaping
]


@pytest.mark.parametrize(("value", "pointer", "word"), NOT_JSON)
def test_freeze_rejects_non_json(value: Any, pointer: str, word: str) -> None:
    with pytest.raises(NotJSONError) as info:
        freeze(value)
    assert info.value.pointer == pointer
    assert word in info.value.reason.lower()


@pytest.mark.parametrize("make", [_cycle_in_list, _cycle_in_dict])
def test_freeze_rejects_a_container_that_contains_itself(make: Any) -> None:
    with pytest.raises(NotJSONError):
        freeze(make())


def test_freeze_prefixes_the_given_pointer() -> None:
    with pytest.raises(NotJSONError) as info:
        freeze({"a": float("nan")}, "/state")
    assert info.value.pointer == "/state/a"


@pytest.mark.slow
def test_freeze_of_a_very_deep_value_never_overflows_the_stack() -> None:
    # 100,000 levels: either frozen (iteratively) or refused with NotJSONError, never a
    # RecursionError.
    value: Any = 1
    for _ in range(100_000):
        value = {"a": value}
    try:
        frozen = freeze(value)
    except NotJSONError:
        return
    depth = 0
    while isinstance(frozen, PMap):
        frozen = frozen["a"]
        depth += 1
    assert depth == 100_000


def test_freeze_and_thaw_a_moderately_deep_value() -> None:
    value: Any = [1]
    for _ in range(200):  # 400 levels of containers
        value = {"a": [value]}
    assert thaw(freeze(value)) == value


# -- thaw --------------------------------------------------------------------------------

THAW: list[tuple[Any, Any]] = [
    (None, None),
    (3, 3),
    ("x", "x"),
    (pvector(), []),
    (pmap(), {}),
    (pmap({"a": pvector([1, pmap({"b": True})])}), {"a": [1, {"b": True}]}),
]


@pytest.mark.parametrize(("frozen", "plain"), THAW)
def test_thaw(frozen: Any, plain: Any) -> None:
    result = thaw(frozen)
    assert strict(result) == strict(plain)
    assert type(result) is type(plain)


def test_thaw_gives_plain_containers_all_the_way_down() -> None:
    result = thaw(freeze({"a": [{"b": [1]}]}))
    assert type(result) is dict
    assert type(result["a"]) is list
    assert type(result["a"][0]) is dict
    assert type(result["a"][0]["b"]) is list


def test_thaw_sorts_object_keys() -> None:
    keys = [f"k{i:03}" for i in range(200)]
    frozen = freeze({k: {k2: 0 for k2 in reversed(keys[:5])} for k in reversed(keys)})
    plain: Any = thaw(frozen)
    assert list(plain) == sorted(keys)
    assert all(list(inner) == sorted(keys[:5]) for inner in plain.values())


@pytest.mark.slow
def test_thaw_of_a_deep_value_is_iterative() -> None:
    from pyrsistent import pmap as pm

    frozen: Any = 1
    for _ in range(20_000):  # built directly, beyond any freeze limit
        frozen = pm({"a": frozen})
    plain = thaw(frozen)
    depth = 0
    while isinstance(plain, dict):
        plain = plain["a"]
        depth += 1
    assert depth == 20_000


ROUND_TRIP: list[Any] = [
    {"user": {"name": "Alex", "tags": ["new", "vip"], "age": 3, "ratio": 0.5, "ok": True}},
    [None, False, 0, 0.0, "", [], {}],
    {"пользователь": {"имя": "Алекс", "my key": {"0": [1]}}},
]


@pytest.mark.parametrize("plain", ROUND_TRIP)
def test_thaw_freeze_round_trip(plain: Any) -> None:
    assert strict(thaw(freeze(plain))) == strict(plain)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=12),
    max_leaves=30)


@pytest.mark.slow
@settings(deadline=None, max_examples=200)
@given(JSON)
def test_thaw_gives_the_plain_value_its_keys_sorted_and_its_count(plain: Any) -> None:
    # (Run with the bucket reads and, OBELISK_PYRSISTENT=public, with PMap's own items.)
    thawed, count = thaw_counted(freeze(plain))
    assert strict(thawed) == strict(plain)
    assert json.dumps(thawed) == json.dumps(plain, sort_keys=True)  # keys in sorted order
    assert count == _count(plain)


ANY_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
    | st.sampled_from([10 ** 700, -(10 ** 600), "\ud800", 1.5, float("nan")]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.one_of(st.text(max_size=3), st.integers(), st.none()), inner, max_size=5),
    max_leaves=12)


@pytest.mark.slow
@settings(deadline=None, max_examples=300)
@given(ANY_VALUE)
def test_a_plainly_json_value_is_one_freeze_accepts(value: Any) -> None:
    # The journal's shortcut before freezing a result to check it: it may say "ask
    # freeze" of a JSON value, never "JSON" of one freeze refuses.
    from obelisk.core.values import plainly_json

    if plainly_json(value):
        freeze(value)


SCALARS = (st.none() | st.booleans() | st.integers() | st.text(max_size=4)
           | st.integers(min_value=10 ** 599, max_value=10 ** 700).map(lambda n: n * (-1) ** n)
           | st.sampled_from([10 ** 600, -(10 ** 600), 10 ** 600 - 1, 10 ** 4300, "\ud800",
                              "é\udfff", "é", True, 2 ** 63]))


@pytest.mark.slow
@settings(deadline=None, max_examples=400)
@given(SCALARS, st.sampled_from([1, 7, UNLIMITED]))
def test_freezing_a_scalar_takes_the_shortcut_only_where_the_walk_agrees(
        value: Any, max_nodes: int) -> None:
    # freeze returns the commonest scalars before the walk: the walk must give the same
    # value, and a scalar it refuses (too long to print, a lone surrogate) must still be
    # refused. The walk is what freeze did before the shortcut.
    from obelisk.core.values import _freeze, _int_bound

    try:
        walked: Any = _freeze(value, 0, [max_nodes - 1], _int_bound())
    except NotJSONError as exc:
        walked = ("refused", exc.reason)
    try:
        got: Any = freeze(value, max_nodes=max_nodes)
    except NotJSONError as exc:
        got = ("refused", exc.reason)
    assert got == walked and type(got) is type(walked)


@pytest.mark.slow
@settings(deadline=None, max_examples=400)
@given(SCALARS | st.text(max_size=4).map(lambda tail: "\u2020state." + tail))
def test_an_object_member_takes_the_shortcut_only_where_the_walk_agrees(value: Any) -> None:
    # The walk takes an object's commonest members (strings, references with their
    # non-ASCII dagger included, ints, bools, null) without a call: each must come out as
    # its own walk gives it, and one the walk refuses (a lone surrogate, an int too long
    # to print) must be refused with the same reason, at the member's pointer.
    from obelisk.core.values import _freeze, _int_bound

    try:
        walked: Any = ("kept", _freeze(value, 1, [10 ** 9], _int_bound()))
    except NotJSONError as exc:
        walked = ("refused", exc.reason, "/k" + exc.pointer)
    try:
        got: Any = ("kept", freeze({"k": value, "n": 1})["k"])
    except NotJSONError as exc:
        got = ("refused", exc.reason, exc.pointer)
    assert got == walked and type(got[1]) is type(walked[1])


@pytest.mark.parametrize(("value", "plain"), [
    ({"n": 1, "ok": True, "s": "text", "none": None}, True),
    ("ascii", True), (7, True), (None, True), (False, True),
    ({"n": 1.5}, False),  # floats: ask freeze (NaN and infinities are refused)
    ({"s": "é"}, False), ({"é": 1}, False), ("\ud800", False),
    ({1: "a"}, False),  # json.dumps would write the key as "1": freeze refuses it
    ({"a": {"b": 1}}, False), ({"a": [1]}, False), (10 ** 700, False),
    ({f"k{i}": i for i in range(65)}, False),
])
def test_plainly_json(value: Any, plain: bool) -> None:
    from obelisk.core.values import plainly_json

    assert plainly_json(value) is plain


@pytest.mark.parametrize("size", [0, 1, 3, 40])
def test_thawing_an_object_of_scalars_counts_and_bounds_like_any_value(size: int) -> None:
    flat = freeze({f"k{i}": (i if i % 3 else f"s{i}") for i in range(size)})
    nested = freeze({"n": {f"k{i}": i for i in range(size)}})  # the general route
    plain, count = thaw_counted(flat, size + 1)
    assert count == size + 1 and list(plain) == sorted(plain)  # keys sorted, as always
    assert plain == {f"k{i}": (i if i % 3 else f"s{i}") for i in range(size)}
    with pytest.raises(ValueTooLarge):
        thaw_counted(flat, size)
    assert thaw_counted(nested, size + 2)[1] == size + 2
    with pytest.raises(ValueTooLarge):
        thaw_counted(nested, size + 1)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=2), max_size=40))
def test_a_frozen_object_is_laid_out_as_pmap_lays_it_out(entries: dict[str, Any]) -> None:
    frozen = freeze(entries)
    assert type(frozen) is PMap and frozen == pmap(entries)
    assert list(frozen.items()) == list(pmap(entries).items())
    assert hash(frozen) == hash(pmap(entries))


@given(st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=3) | st.none(),
                       min_size=1, max_size=8))
def test_a_compact_object_is_the_map_pmap_makes_in_one_bucket_in_key_order(
        members: dict[str, Any]) -> None:
    from obelisk.core.plain import sorted_items
    from obelisk.core.values import COMPACT_MAX, compact_object

    made = compact_object(members)
    assert made == pmap(members) and hash(made) == hash(pmap(members))
    assert list(made.items()) == sorted(members.items())  # iterates in key order
    assert list(made.items()) == list(pmap(dict(sorted(members.items())), pre_size=1).items())
    assert pmaps.bucket_count(made) == 1 and len(members) <= COMPACT_MAX
    assert sorted_items(made) == sorted(members.items())
    assert all(made[key] == value for key, value in members.items())
    assert made.set("extra key", 1) == pmap(members).set("extra key", 1)


@given(st.dictionaries(st.text(max_size=3), st.integers() | st.lists(st.integers(), max_size=2),
                       max_size=12))
def test_freezing_compact_lays_out_small_objects_only_and_changes_no_value(
        raw: dict[str, Any]) -> None:
    from obelisk.core.values import COMPACT_MAX

    compact, plain = freeze(raw, compact=True), freeze(raw)
    assert compact == plain and thaw(compact) == thaw(plain)
    assert (pmaps.bucket_count(compact) == 1) == (0 < len(raw) <= COMPACT_MAX)
    assert freeze(plain, compact=True) is plain  # a frozen object is kept as it is


def test_a_compiled_call_is_compact_when_small() -> None:
    from obelisk import compile_plan

    small = {"_tool": "t", "x": 1, "_outputPath": "†state.a"}
    large = {"_tool": "t", **{f"p{i}": i for i in range(10)}}
    plan = compile_plan([small, large])
    assert pmaps.bucket_count(plan.nodes[0].call) == 1  # type: ignore[arg-type]
    assert list(plan.nodes[0].call) == sorted(small)  # type: ignore[call-overload]
    assert pmaps.bucket_count(plan.nodes[1].call) > 1  # type: ignore[arg-type]
