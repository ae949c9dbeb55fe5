"""Parsing ``†`` expressions into the frozen AST of :mod:`obelisk.core.ast`.

Three entry points share one LALR parser built from ``grammar.lark`` (in
:mod:`obelisk.compiler.grammar`, imported only for expressions that are not a plain
reference):
:func:`parse_input` (parameters), :func:`parse_output` (``_outputPath``) and
:func:`parse_reference` (exactly one reference). Every failure is an
:class:`ExpressionSyntaxError` with the column, what was expected, and a caret; lark's own
exceptions never escape. Length and nesting are limited, and the limits give the same error.
"""

from __future__ import annotations

import functools
import re
from types import ModuleType
from typing import TYPE_CHECKING

from obelisk.compiler.limits import MAX_DEPTH, MAX_LENGTH
from obelisk.compiler.plainref import plain_reference
from obelisk.core.ast import And, Expr, FanOut, Literal, Or, OutputExpr, Reference
from obelisk.core.errors import ExpressionSyntaxError
from obelisk.core.messages import use_reference_parser

if TYPE_CHECKING:
    from lark import Lark, Token, Tree

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "is_expression", "parse_input", "parse_output",
           "parse_reference", "unescape_literal"]


def parse_input(text: str) -> Expr:
    """Parse an input expression (a parameter string that starts with ``†``).

    Raises :class:`ExpressionSyntaxError` when it does not parse or exceeds the limits.
    """
    return _parse_input(text)


def parse_output(text: str) -> OutputExpr:
    """Parse an output expression: ``||`` alternatives of ``&&`` fan-out groups of references.

    Raises :class:`ExpressionSyntaxError` for syntax, literals, limits, or an alternative
    nested inside a fan-out (``(†a || †b) && †c``).
    """
    return _parse_output(text)


def parse_reference(text: str) -> Reference:
    """Parse exactly one concrete reference, such as a message's ``_outputPath``."""
    return _parse_reference(text)


def is_expression(value: object) -> bool:
    """True when a parameter value is an expression: a string starting with ``†``."""
    return isinstance(value, str) and value.startswith("†")


_ESCAPED_DAGGER = re.compile(r"\\+†")


def unescape_literal(value: str) -> str:
    """A parameter string that is not an expression, as the call means it.

    A string of one or more backslashes followed by ``†`` loses one backslash: ``\\†x``
    is the literal ``†x`` and ``\\\\†x`` the literal ``\\†x``. Other strings are unchanged.
    """
    if value[:1] != "\\":  # the common case, without the regular expression
        return value
    return value[1:] if _ESCAPED_DAGGER.match(value) else value


@functools.lru_cache(maxsize=8192)
def _plain(text: str) -> Reference | None:
    # One Reference for a text read as a parameter and written as an output (a chain's
    # calls read what the previous one writes): the plan holds it once.
    return plain_reference(text, MAX_LENGTH)


@functools.lru_cache(maxsize=8192)
def _parse_input(text: str) -> Expr:
    plain = _plain(text)
    if plain is not None:
        return plain
    result = _grammar().parse_built(text, "input")
    assert isinstance(result, (Reference, Literal, Or, And))
    return result


@functools.lru_cache(maxsize=8192)
def _parse_output(text: str) -> OutputExpr:
    plain = _plain(text)
    if plain is not None:  # what _to_output makes of a lone reference
        return OutputExpr((FanOut((plain,), plain.span),), plain.span)
    return _to_output(_grammar().parse_built(text, "output"), text)


@functools.lru_cache(maxsize=8192)
def _parse_reference(text: str) -> Reference:
    plain = _plain(text)
    if plain is not None:
        return plain
    result = _grammar().parse_built(text, "ref")
    assert isinstance(result, Reference)
    return result


def _grammar() -> ModuleType:
    """The grammar's parser module, imported on first use (it imports lark)."""
    from obelisk.compiler import grammar
    return grammar


def _parser(inline: bool) -> Lark:
    """The lark parser itself (tests compare the fast paths with it)."""
    parser: Lark = _grammar().parser(inline)
    return parser


def _parse(text: str, start: str) -> Tree[Token]:
    """``text`` parsed by the grammar alone, as a tree (depth checked)."""
    tree: Tree[Token] = _grammar().parse_tree(text, start)
    return tree


def _build(text: str, tree: Tree[Token]) -> object:
    """AST nodes built from a parse tree."""
    return _grammar().build(text, tree)


def _flatten(node: object, kind: type) -> list[object]:
    # (†a || †b) || †c is three alternatives; (†a && †b) && †c one group of three.
    if isinstance(node, kind):
        assert isinstance(node, (Or, And))
        return [leaf for op in node.operands for leaf in _flatten(op, kind)]
    return [node]


def _to_output(expr: object, text: str) -> OutputExpr:
    """Flatten an or/and tree of references into alternatives of fan-out groups."""
    groups = []
    for alt in _flatten(expr, Or):
        targets = _flatten(alt, And)
        for target in targets:
            if isinstance(target, Or):
                raise ExpressionSyntaxError(
                    "an alternative (||) cannot be nested inside a fan-out (&&)",
                    text, target.span.start + 1, end=target.span.end + 1,
                    hint="distribute it: (†a && †c) || (†b && †c)",
                )
        refs = tuple(t for t in targets if isinstance(t, Reference))
        assert len(refs) == len(targets)
        assert isinstance(alt, (And, Reference))
        groups.append(FanOut(refs, alt.span))
    assert isinstance(expr, (Or, And, Reference))
    return OutputExpr(tuple(groups), expr.span)


# core reads a message's _outputPath with this grammar, but core is the lowest layer and
# cannot import it: the compiler plugs its parser in (importing obelisk imports this).
use_reference_parser(parse_reference)
