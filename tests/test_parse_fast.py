"""compiler/parse.py's fast paths give exactly what the grammar gives.

Two shortcuts sit in front of the tree-building LALR parser: a regular expression for
plain references (``†state.user.id``) and the builder running inside the parser. The
grammar stays the single definition of the language: on generated and mutated texts, the
public entry points and the grammar alone give identical ASTs (spans included) and
identical errors (class, reason, column, end, expected, hint, message).
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from obelisk.compiler import parse, plainref
from obelisk.compiler.parse import MAX_DEPTH, MAX_LENGTH, parse_input, parse_output, parse_reference
from obelisk.core.ast import Reference, Span
from obelisk.core.errors import ExpressionSyntaxError

ENTRY: dict[str, Callable[[str], object]] = {
    "input": parse_input, "output": parse_output, "ref": parse_reference,
}


def by_grammar(text: str, start: str) -> object:
    """What the tree-building parser alone makes of ``text`` (the pre-fast-path pipeline)."""
    built = parse._build(text, parse._parse(text, start))  # noqa: SLF001
    return parse._to_output(built, text) if start == "output" else built  # noqa: SLF001


def outcome(run: Callable[[], object]) -> tuple[Any, ...]:
    try:
        return ("ok", run())
    except ExpressionSyntaxError as exc:
        return ("error", type(exc), exc.reason, exc.column, exc.end, exc.expected, exc.hint,
                str(exc))


def fresh(start: str, text: str) -> tuple[Any, ...]:
    # The entry points memoise; clear them so the path under test really runs.
    for cached in (parse._plain, parse._parse_input, parse._parse_output,  # noqa: SLF001
                   parse._parse_reference):  # noqa: SLF001
        cached.cache_clear()
    return outcome(lambda: ENTRY[start](text))


def assert_same(text: str) -> None:
    for start in ENTRY:
        assert fresh(start, text) == outcome(lambda s=start: by_grammar(text, s)), (start, text)


# -- generated texts --------------------------------------------------------------------

LETTERS = string.ascii_letters + "_$-" + "éßΩж٣一"
kind = st.text(alphabet=LETTERS + string.digits, min_size=0, max_size=6)
word = st.one_of(
    st.text(alphabet=LETTERS + string.digits, min_size=0, max_size=6),
    st.integers(-20, 20).map(str),
    st.sampled_from(["0", "-0", "01", "-01", "007", "true", "false", "null", "1e5", "1.5",
                     "٣", "1٣", "-", "$", "-x", "9" * 25]),
)
quoted = st.sampled_from(['"a b"', "'x'", '"\\u00e9"', "'\\''", '"\\q"', '"', "'a", '"\\ud800"'])
segment = st.one_of(word, word, word, quoted)
space = st.sampled_from(["", "", "", " ", "  ", "\t", "\n", "\r\n", "\u00a0"])


@st.composite
def reference(draw: st.DrawFn) -> str:
    text = "†" + draw(kind)
    for seg in draw(st.lists(segment, max_size=5)):
        text += draw(st.sampled_from([".", ".", ".", "..", ""])) + seg
    return text + draw(space)


operator = st.sampled_from([" || ", "||", " && ", "&&", "|", "&", " ", "."])
literal = st.sampled_from(["1", "-2.5", "true", "null", "'s'", '"t"', "1e999", "'\\ud800'"])


@st.composite
def expression(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(reference(), reference(), literal), min_size=1, max_size=4))
    text = parts[0]
    for part in parts[1:]:
        text += draw(operator) + part
    if draw(st.booleans()):
        text = "(" * draw(st.integers(1, 3)) + text + ")" * draw(st.integers(0, 3))
    return text


MUTATION_ALPHABET = "†.\"'|&() \t-0a$\\\u00a0"


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.one_of(reference(), expression()))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        match draw(st.sampled_from(["insert", "delete", "replace"])):
            case "insert":
                text = text[:at] + draw(st.sampled_from(MUTATION_ALPHABET)) + text[at:]
            case "delete":
                text = text[:at] + text[at + 1:]
            case _:
                text = text[:at] + draw(st.sampled_from(MUTATION_ALPHABET)) + text[at + 1:]
    return text


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(reference())
def test_plain_references_match_the_grammar(text: str) -> None:
    assert_same(text)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(expression())
def test_expressions_match_the_grammar(text: str) -> None:
    assert_same(text)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(mutated())
@example("†state.a.-5x")
@example("†state..a")
@example("†a.b'")
def test_mutated_texts_match_the_grammar(text: str) -> None:
    assert_same(text)


# -- edge cases, as a table ------------------------------------------------------------

EDGES = [
    "†state", "†state.user.id", "†state.user.id   ", "†state.user.id\r\n", " †state.x",
    "†state.x\u00a0", "†state.", "†state..x", "†.x", "†", "†1a", "†$", "†$.$", "†_.-",
    "†a-b.c-d", "†state.-1", "†state.-0", "†state.0", "†state.01", "†state.-01", "†state.-5x",
    "†state.1e5", "†state.1.5", "†state.true", "†state.null.x", "†true", "†state.٣",
    "†state.1٣", "†ståte.ключ.值", "†state.\"my key\"", "†state.'k'.x", "†state.\"a.b\".0",
    "†state.\"\\q\"", "†state.\"\\ud800\"", "†a || †b", "†a||†b", "†a | †b", "†a && †b",
    "†a & †b", "(†a)", "(†a || †b) && †c", "†a.b c", "†a.b†c", "state.x", "", "   ",
    "'literal'", "12", "†a || 'x'", "(" * (MAX_DEPTH + 1) + "†a" + ")" * (MAX_DEPTH + 1),
    "(" * MAX_DEPTH + "†a" + ")" * MAX_DEPTH, "(" * (MAX_DEPTH + 2) + "†a" + ")" * (MAX_DEPTH + 2),
    "†a.'x(('" + " || (†b)" * 3, "1e999 || †a", "'\\ud800' || ", "'\\ud800' || †a",
    "(1e999 || (†a)", "†a." + "b" * (MAX_LENGTH - 3), "†a." + "b" * (MAX_LENGTH - 2),
]


@pytest.mark.parametrize("text", EDGES)
def test_edge_cases_match_the_grammar(text: str) -> None:
    assert_same(text)


def test_the_fast_path_uses_the_grammars_terminals() -> None:
    # The regular expression is built from KIND and WORD copied from grammar.lark.
    grammar = parse._parser(False)  # noqa: SLF001
    assert grammar.get_terminal("KIND").pattern.value == plainref.KIND_PATTERN
    assert grammar.get_terminal("WORD").pattern.value == plainref.WORD_PATTERN


@pytest.mark.parametrize(("text", "expected"), [
    ("†state.user.id", Reference("state", ("user", "id"), Span(0, 14))),
    ("†data.items.-1.0  ", Reference("data", ("items", -1, 0), Span(0, 16))),
    ("†state.01", Reference("state", ("01",), Span(0, 9))),
    ("†$", Reference("$", (), Span(0, 2))),
])
def test_the_fast_path_takes_plain_references(text: str, expected: Reference) -> None:
    assert plainref.plain_reference(text, MAX_LENGTH) == expected
    assert parse_reference(text) == expected


@pytest.mark.parametrize("text", [
    "†state.\"k\"", "†a || †b", "(†a)", "†a.", " †a", "†a.b\u00a0", "x", "†a." + "b" * MAX_LENGTH,
])
def test_the_fast_path_leaves_the_rest_to_the_grammar(text: str) -> None:
    assert plainref.plain_reference(text, MAX_LENGTH) is None
