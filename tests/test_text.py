"""core/text.py: the caret under a span and the indefinite article."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from obelisk.core.text import article, caret_line


@pytest.mark.parametrize(
    ("text", "start", "end", "expected"),
    [
        ("†state.recipt", 7, 13, "†state.recipt\n       ^^^^^^"),
        ("abc", 1, 1, "abc\n ^"),  # an empty span still gets one caret
        ("abc", 3, 4, "abc\n   ^"),  # just past the end (end of input)
        ("a\tb", 2, 3, "a b\n  ^"),  # tabs become spaces so the caret lines up
    ],
)
def test_caret_line_table(text: str, start: int, end: int, expected: str) -> None:
    assert caret_line(text, start, end) == expected


def test_caret_line_indents_both_lines() -> None:
    assert caret_line("x", 0, 1, indent="    ") == "    x\n    ^"


@given(st.text(alphabet="ab|( ", min_size=1, max_size=400), st.data())
def test_caret_stands_under_the_span_of_a_long_text(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text) - 1))
    shown, carets = caret_line(text, start, start + 1).split("\n")
    column = carets.index("^")
    assert shown[column] == text[start]
    assert len(shown) <= 102  # the window and its two ellipses


@pytest.mark.parametrize(
    ("word", "expected"),
    [("object", "an object"), ("array", "an array"), ("string", "a string"),
     ("integer", "an integer"), ("null", "a null"), ("", "a ")],
)
def test_article_table(word: str, expected: str) -> None:
    assert article(word) == expected
