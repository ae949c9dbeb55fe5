"""core/pmaps.py, the kernel room: each operation on PMap's buckets makes what its
public-API definition makes (the same map: equal, hashing and iterating alike), and the
switch to the public API binds every operation to its definition."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import PMap, pmap

from obelisk.core import pmaps
from obelisk.core.pmaps import TWINS, OpenMap

KEYS = st.text(max_size=3)
ENTRIES = st.dictionaries(KEYS, st.integers(0, 3) | st.text(max_size=2), max_size=40)
FAST = {name: twins[0] for name, twins in TWINS.items()}
PUBLIC = {name: twins[1] for name, twins in TWINS.items()}


def alike(ours: Any, theirs: Any) -> bool:
    """The same map: equal, hashing alike, iterating (laid out) alike."""
    return (type(ours) is PMap and ours == theirs and hash(ours) == hash(theirs)
            and list(ours.items()) == list(theirs.items()))


def test_the_installed_pyrsistent_is_laid_out_as_checked() -> None:
    # Else every operation takes the public API (everything works, more slowly).
    assert pmaps.LAYOUT_HOLDS


def test_each_name_is_bound_to_one_twin_as_the_switch_says() -> None:
    chosen = FAST if pmaps.FAST else PUBLIC
    assert all(getattr(pmaps, name) is chosen[name] for name in TWINS)
    assert (pmaps.LAYOUT_HOLDS
                          and os.environ.get("OBELISK_PYRSISTENT") != "public") == pmaps.FAST


def test_the_switch_is_refused_once_obelisk_is_imported() -> None:
    # Modules take the operations when they are imported: a late switch would leave
    # them on the fast ones, so it says so instead.
    import obelisk.core.values  # noqa: F401 - imported: too late to switch

    with pytest.raises(RuntimeError, match="before importing"):
        pmaps.use_public_api()


@pytest.mark.slow
def test_switched_before_importing_a_run_takes_the_public_api() -> None:
    code = ("from obelisk.core import pmaps; pmaps.use_public_api(); import obelisk; "
            "r = obelisk.run_sync([{'_tool': 't', '_outputPath': '†state.a.b'}], "
            "activities={'t': lambda c, t, x: {'v': 1}}); "
            "assert not pmaps.FAST and pmaps.get is pmaps.TWINS['get'][1]; "
            "print(obelisk.resolve(r.context, '†state.a.b.v'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0 and done.stdout == "1\n", done.stderr


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(ENTRIES, st.lists(st.tuples(KEYS, st.integers(0, 3)), min_size=1, max_size=40))
def test_set_key_and_get_make_and_read_what_set_and_get_do(
        start: dict[str, Any], sets: list[tuple[str, int]]) -> None:
    ours = theirs = pmap(start)
    for key, number in sets:
        ours, theirs = FAST["set_key"](ours, key, number), theirs.set(key, number)
        assert alike(ours, theirs)
        assert FAST["get"](ours, key, None) == number
        assert FAST["get"](ours, key + "four", "absent") == "absent"  # longer than any key
        assert FAST["items"](ours) == list(theirs.items())
    assert FAST["set_key"](ours, sets[0][0], ours[sets[0][0]]) is ours  # the same value


@pytest.mark.slow
def test_a_map_grown_key_by_key_is_laid_out_as_pmap_lays_it_out() -> None:
    # Growing (twice the buckets, entries rehashed) is done without PMap's evolvers;
    # through every growth up to 5,000 keys the map must be PMap's own, order included.
    ours = theirs = pmap()
    for number in range(5_000):
        key = f"s{number}"
        ours, theirs = FAST["set_key"](ours, key, number), theirs.set(key, number)
        if number & (number - 1) == 0 or number % 997 == 0:  # around each growth
            assert alike(ours, theirs)
    assert alike(ours, theirs) and pmaps.bucket_count(ours) == pmaps.bucket_count(theirs)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(ENTRIES, KEYS)
def test_maps_made_from_entries_are_the_maps_pmap_makes(entries: dict[str, Any],
                                                        key: str) -> None:
    made = FAST["from_dict"](entries)
    assert alike(made, pmap(entries)) and alike(PUBLIC["from_dict"](entries), pmap(entries))
    assert alike(made.set(key, -1), pmap(entries).set(key, -1))
    assert alike(FAST["single"](key, 1), pmap({key: 1}))
    pairs = sorted(entries.items())
    compact = FAST["compact"](list(pairs))
    assert alike(compact, PUBLIC["compact"](list(pairs)))
    assert list(compact.items()) == pairs and pmaps.bucket_count(compact) == 1
    assert compact.set(key, -1) == pmap(entries).set(key, -1)


OPEN_KEYS = [f"k{i}" for i in range(60)] + ["", "a b", "0"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPEN_KEYS), st.integers(0, 3), st.booleans()),
                max_size=120),
       st.sampled_from([0, 1, 5, 30]))
def test_an_open_map_closes_into_the_map_setting_key_by_key_makes(
        sets: list[tuple[str, int, bool]], start: int) -> None:
    base = pmap({f"k{i}": i for i in range(start)})
    opened = OpenMap(base)
    expected = base
    for key, value, close in sets:
        opened.set(key, value)
        expected = expected.set(key, value)
        assert opened.get(key, None) == value
        if close:  # closing mid-way leaves the open map usable
            assert alike(opened.close(), expected)
    assert alike(opened.close(), expected)
    assert alike(base, pmap({f"k{i}": i for i in range(start)}))  # untouched


def test_an_open_child_reaches_its_parent_when_it_closes() -> None:
    root = OpenMap(pmap({"a": pmap({"b": 1}), "n": 2}))
    child = root.open_child("a", root.get("a", None))
    child.set("c", 3)
    assert root.child("a") is child and root.get("a", None) == pmap({"b": 1})
    assert alike(root.close(), pmap({"a": pmap({"b": 1}).set("c", 3), "n": 2}))
    root.set("a", 0)  # a set drops what was opened there
    assert root.child("a") is None and root.close()["a"] == 0
