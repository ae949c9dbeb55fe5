"""core/paths.py: reading a path, overlap, and rendering references (SEMANTICS §2, §4)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obelisk.compiler.parse import parse_reference
from obelisk.core import paths, pathtext
from obelisk.core.paths import get_in, overlaps, step
from obelisk.core.pathtext import render_reference
from obelisk.core.plain import thaw
from obelisk.core.values import MISSING, freeze

DOC = {
    "user": {"name": "Alex", "status": None, "tags": ["new", "vip", "gold"], "0": "zero"},
    "items": [{"id": 1}, {"id": 2}],
    "n": 5,
    "s": "text",
    "пользователь": {"имя": "Алекс"},
    "my key": {"-1": "minus one", "a.b": "dotted"},
}

# (path, expected value or MISSING)
GET_IN = [
    ((), DOC),
    (("user",), DOC["user"]),
    (("user", "name"), "Alex"),
    (("user", "status"), None),  # null is a value, not MISSING
    (("user", "email"), MISSING),  # absent key
    (("user", "email", "x"), MISSING),  # below an absent key
    (("user", "tags", 0), "new"),
    (("user", "tags", 2), "gold"),
    (("user", "tags", 3), MISSING),  # out of range
    (("user", "tags", -1), "gold"),  # negative counts from the end
    (("user", "tags", -3), "new"),
    (("user", "tags", -4), MISSING),  # out of range from the end
    (("user", "tags", "0"), MISSING),  # a string key on an array
    (("user", "tags", "length"), MISSING),
    (("user", 0), "zero"),  # an index on an object reads the decimal-text key
    (("user", -1), MISSING),  # a negative index on an object is MISSING
    (("my key", -1), MISSING),  # ... even when the key "-1" exists
    (("my key", "-1"), "minus one"),  # that key is read with a string segment
    (("my key", "a.b"), "dotted"),
    (("items", 1, "id"), 2),
    (("items", -2, "id"), 1),
    (("n",), 5),
    (("n", "x"), MISSING),  # through a number
    (("n", 0), MISSING),
    (("s", 0), MISSING),  # through a string: no character indexing
    (("s", "length"), MISSING),
    (("user", "status", "x"), MISSING),  # through null
    (("пользователь", "имя"), "Алекс"),
]


@pytest.mark.parametrize("path", [(), ("a",), (0,), ("a", "b"), (-1, "x")])
def test_get_in_below_missing_is_missing(path: tuple[Any, ...]) -> None:
    # A kind nothing wrote has the view MISSING: every path below it is MISSING too.
    assert get_in(MISSING, path) is MISSING


@pytest.mark.parametrize(("path", "expected"), GET_IN)
def test_get_in(path: tuple[Any, ...], expected: Any) -> None:
    result = get_in(freeze(DOC), path)
    if expected is MISSING:
        assert result is MISSING
    else:
        assert thaw(result) == expected


@pytest.mark.parametrize("path", [(), ("a",), (0,), (-1,), ("a", 0, "b")])
def test_get_in_missing_root(path: tuple[Any, ...]) -> None:
    assert get_in(MISSING, path) is MISSING


@pytest.mark.parametrize("scalar", [None, True, 0, 1.5, "abc"])
@pytest.mark.parametrize("segment", ["a", 0, -1])
def test_step_through_a_scalar_is_missing(scalar: Any, segment: Any) -> None:
    assert step(scalar, segment) is MISSING


def test_get_in_root_of_a_scalar_is_the_scalar() -> None:
    assert get_in(None, ()) is None
    assert get_in(0, ()) == 0


# -- overlaps ----------------------------------------------------------------------------

# (a, b, expected): a write at one path can change what the other reads.
OVERLAPS = [
    ((), (), True),
    ((), ("a",), True),
    (("a",), (), True),
    (("a",), ("a", "b"), True),
    (("a", "b"), ("a",), True),
    (("a", "b"), ("a", "c"), False),
    (("a",), ("b",), False),
    (("a", 0), ("a", 0), True),
    (("a", 0), ("a", 1), False),
    (("a", -1), ("a", -2), False),
    (("a", -1), ("a", 3), True),  # -1 may be element 3
    (("a", 0), ("a", -1), True),
    (("a", 0), ("a", "0"), True),  # on an object, index 0 is the key "0"
    (("a", "0"), ("a", 0, "x"), True),
    (("a", 12), ("a", "12"), True),
    (("a", 1), ("a", "01"), False),  # index 1 is the key "1", never "01"
    (("a", -1), ("a", "-1"), False),  # a negative index never reads a key
    (("a", 0), ("a", "x"), False),
    (("x", "a"), ("y", "a"), False),
]


@pytest.mark.parametrize(("a", "b", "expected"), OVERLAPS)
def test_overlaps(a: tuple[Any, ...], b: tuple[Any, ...], expected: bool) -> None:
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected  # symmetric


def test_index_and_decimal_key_really_alias() -> None:
    # The reason ("a", 0) and ("a", "0") overlap: both read the same value in an object.
    doc = freeze({"a": {"0": "same"}})
    assert get_in(doc, ("a", 0)) == get_in(doc, ("a", "0")) == "same"


# -- render_reference --------------------------------------------------------------------

# (kind, path, text): bare names where the grammar allows them, quotes otherwise.
RENDER = [
    ("state", (), "†state"),
    ("state", ("user", "status"), "†state.user.status"),
    ("state", ("items", 0), "†state.items.0"),
    ("state", ("items", -1), "†state.items.-1"),
    ("state", ("0",), '†state."0"'),  # a digit key is quoted, so it is not an index
    ("state", ("-1",), '†state."-1"'),
    ("state", ("01",), '†state."01"'),
    ("state", ("my key",), '†state."my key"'),
    ("state", ('say "hi"',), '†state."say \\"hi\\""'),
    ("state", ("back\\slash",), '†state."back\\\\slash"'),
    ("state", ("a.b",), '†state."a.b"'),
    ("state", ("",), '†state.""'),
    ("state", ("true",), '†state."true"'),
    ("state", ("null",), '†state."null"'),
    ("state", ("пользователь", "имя"), "†state.пользователь.имя"),
    ("state", ("a-b", "$ref", "_x", "x$"), "†state.a-b.$ref._x.x$"),
    ("state", ("-a",), '†state."-a"'),  # - only inside a name
    ("state", ("5a",), "†state.5a"),
    ("state", ("†",), '†state."†"'),
    ("state", ("a||b",), '†state."a||b"'),
    ("user", ("x",), "†user.x"),
]


@pytest.mark.parametrize(("kind", "path", "text"), RENDER)
def test_render_reference(kind: str, path: tuple[Any, ...], text: str) -> None:
    assert render_reference(kind, path) == text


@pytest.mark.parametrize(("kind", "path", "text"), RENDER)
def test_render_reference_parses_back(kind: str, path: tuple[Any, ...], text: str) -> None:
    ref = parse_reference(text)
    assert (ref.kind, ref.path) == (kind, path)
    assert str(ref) == text


def test_rendering_is_the_same_through_the_key_memo_and_the_memo_stays_bounded() -> None:
    # Rendered keys are memoised (the engine renders a target for every message it
    # writes); the memo empties itself when full, and never changes a result.
    for _ in range(2):  # the second pass reads the memo
        for kind, path, text in RENDER:
            assert render_reference(kind, path) == text
    for number in range(pathtext._RENDERED_MAX + 10):
        assert pathtext.render_segment(f"k {number}") == f'"k {number}"'
        assert len(pathtext._RENDERED) <= pathtext._RENDERED_MAX
    for kind, path, text in RENDER:
        assert render_reference(kind, path) == text


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.recursive(st.integers() | st.text(max_size=2),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["a", "b", "0", "1", ""]), inner, max_size=4),
                    max_leaves=12),
       st.lists(st.sampled_from(["a", "b", "0", "1", "", 0, 1, -1, 5]), max_size=4))
def test_get_in_reads_as_step_reads(value: Any, path: list[Any]) -> None:
    frozen = freeze(value)
    expected: Any = frozen
    for segment in path:  # the definition: one step at a time
        expected = paths.step(expected, segment)
        if expected is MISSING:
            break
    assert paths.get_in(frozen, tuple(path)) == expected
