"""compiler/index.py: the trie of written paths answers exactly what a scan with
core.paths.overlaps would (same kind; one path a prefix of the other; an index n and
the key "n" alias; indexes of opposite signs alias)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.compiler.index import PathIndex
from obelisk.core.paths import Path, overlaps

Entry = tuple[str, Path]

# (written, read, overlap)
OVERLAPS = [
    ((), (), True),
    ((), ("a",), True),
    (("a",), (), True),
    (("a", "b"), ("a",), True),
    (("a",), ("a", "b", "c"), True),
    (("a", "b"), ("a", "c"), False),
    (("ab",), ("a",), False),
    (("a", 0), ("a", "0"), True),      # an index n is the key "n" on an object
    (("a", "0"), ("a", 0), True),
    (("a", "00"), ("a", 0), False),    # "00" is a key, never the index 0
    (("a", -1), ("a", 3), True),       # -1 may be element 3
    (("a", 3), ("a", -1), True),
    (("a", -1), ("a", "3"), False),    # a negative index is never an object key
    (("a", -1), ("a", -2), False),
    (("a", 1), ("a", 2), False),
    (("a", -1, "x"), ("a", 0, "x"), True),
    (("a", -1, "x"), ("a", 0, "y"), False),
]


@pytest.mark.parametrize(("written", "read", "overlap"), OVERLAPS)
def test_overlapping_table(written: Path, read: Path, overlap: bool) -> None:
    index: PathIndex[str] = PathIndex()
    index.add("state", written, "w")
    assert list(index.overlapping("state", read)) == (["w"] if overlap else [])
    assert overlaps(written, read) == overlap  # the index agrees with core.paths
    assert list(index.overlapping("data", read)) == []  # other kinds never overlap


def test_entries_at_one_path_all_come_back() -> None:
    index: PathIndex[int] = PathIndex()
    for i in range(3):
        index.add("state", ("x",), i)
    index.add("state", ("x", "y"), 3)
    index.add("state", ("z",), 4)
    assert sorted(index.overlapping("state", ("x",))) == [0, 1, 2, 3]
    assert sorted(index.overlapping("state", ("x", "y", "z"))) == [0, 1, 2, 3]
    assert sorted(index.overlapping("state", ())) == [0, 1, 2, 3, 4]
    assert sorted(index.under_kind("state")) == [0, 1, 2, 3, 4]
    assert list(index.under_kind("input")) == []
    assert list(index.kinds()) == ["state"]


def test_kinds_in_the_order_first_written() -> None:
    index: PathIndex[int] = PathIndex()
    for i, kind in enumerate(["state", "data", "state", "user"]):
        index.add(kind, (), i)
    assert list(index.kinds()) == ["state", "data", "user"]


@pytest.mark.slow
def test_a_deep_path_needs_no_recursion() -> None:
    index: PathIndex[str] = PathIndex()
    deep = tuple(["k"] * 20_000)
    index.add("state", deep, "deep")
    assert list(index.overlapping("state", deep[:5])) == ["deep"]
    assert list(index.overlapping("state", (*deep, "more"))) == ["deep"]
    assert list(index.under_kind("state")) == ["deep"]


segments = st.one_of(
    st.sampled_from(["a", "b", "0", "1", "00", "-1"]),
    st.integers(-3, 3),
)
paths = st.lists(segments, max_size=4).map(tuple)
entries = st.lists(st.tuples(st.sampled_from(["state", "data"]), paths), max_size=25)


@pytest.mark.slow
@given(entries, st.sampled_from(["state", "data", "input"]), paths)
@settings(max_examples=500)
def test_overlapping_equals_a_scan(written: list[Entry], kind: str, read: Path) -> None:
    index: PathIndex[int] = PathIndex()
    for i, (k, path) in enumerate(written):
        index.add(k, path, i)
    found = list(index.overlapping(kind, read))
    assert len(found) == len(set(found))  # each entry once, even through aliases
    assert sorted(found) == [i for i, (k, path) in enumerate(written)
                             if k == kind and overlaps(path, read)]
