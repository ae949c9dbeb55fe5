"""The expression grammar's parser (lark): imported only when an expression is not a
plain reference (see :mod:`obelisk.compiler.plainref`), so that reading plans of plain
references, and the commands that only do that, do not import lark at all.

:func:`parse_built` parses and builds AST nodes; :func:`parse_tree` and :func:`build` are
the two steps apart (the depth check needs the tree). lark's exceptions never escape.
"""

from __future__ import annotations

import functools
import json
import math
import re
from importlib import resources
from typing import Any

from attrs import frozen
from lark import Lark, Token, Transformer, Tree
from lark.exceptions import UnexpectedInput, VisitError

from obelisk.compiler.limits import MAX_DEPTH, SPACE, check_text
from obelisk.compiler.plainref import INDEX
from obelisk.compiler.syntaxerrors import syntax_error
from obelisk.core.ast import And, Expr, Literal, Or, Reference, Span
from obelisk.core.errors import ExpressionSyntaxError
from obelisk.core.paths import Path


@functools.cache
def parser(inline: bool) -> Lark:
    """The LALR parser of ``grammar.lark``, built on first use and kept for the process.

    Built lazily because most expressions never reach it (see :mod:`obelisk.compiler.plainref`) and
    building it costs about 15 ms, which every ``import obelisk`` used to pay (and importing
    lark about as much again: this module is imported on first use too). With
    ``inline`` the builder runs inside the parser (lark's ``transformer=``): no parse tree
    is made, which roughly halves the cost of a parse; the tree form is kept for the
    depth check and for exact error precedence (see :func:`parse_built`).
    """
    return Lark(
        resources.files("obelisk.compiler").joinpath("grammar.lark").read_text(encoding="utf-8"),
        parser="lalr",
        start=["input", "output", "ref"],
        maybe_placeholders=False,
        transformer=_BUILD if inline else None,
    )


def parse_built(text: str, start: str) -> object:
    """``text`` parsed by the grammar from rule ``start`` and built into AST nodes."""
    check_text(text)
    source = text.rstrip(SPACE)
    # With the builder inside the parser there is no tree for the depth check, so that
    # path is taken only when the depth cannot exceed the limit: each nesting level
    # opens with its own "(".
    if source.count("(") <= MAX_DEPTH:
        try:
            return parser(True).parse(source, start=start)
        except UnexpectedInput as exc:
            raise syntax_error(exc, text, start) from None
        except _LiteralError:
            # A bad literal found mid-parse: a syntax error further on comes first in
            # the tree path (parse, then depth, then build), so let it decide.
            pass
    return build(text, parse_tree(text, start))


def build(text: str, tree: Tree[Token]) -> object:
    """AST nodes built from a parse tree (a bad literal is a syntax error)."""
    try:
        return _BUILD.transform(tree)
    except VisitError as exc:
        error = exc.orig_exc
        if isinstance(error, _LiteralError):
            raise ExpressionSyntaxError(error.reason, text, error.start + 1,
                                        end=error.end + 1) from None
        raise


def parse_tree(text: str, start: str) -> Tree[Token]:
    check_text(text)
    source = text.rstrip(SPACE)  # trailing whitespace is harmless; leading is not allowed
    try:
        tree = parser(False).parse(source, start=start)
    except UnexpectedInput as exc:
        raise syntax_error(exc, text, start) from None
    _check_depth(tree, text)
    return tree


def _check_depth(tree: Tree[Token], text: str) -> None:
    # Parenthesis nesting shows as nested or-nodes; walked with an explicit stack.
    stack: list[tuple[Tree[Token], int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.data in ("or_expr", "out_or"):
            depth += 1
            if depth > MAX_DEPTH + 1:  # the outermost or-node is not a parenthesis
                # The caret goes under the "(" opening this level (whitespace may follow it).
                column = text.rfind("(", 0, _first_position(node)) + 1 or 1
                raise ExpressionSyntaxError(
                    f"parentheses nest deeper than the limit of {MAX_DEPTH}",
                    text, column, end=column + 1,
                    hint="remove redundant parentheses",
                )
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth))


def _first_position(node: Tree[Token]) -> int:
    """Where the first token under ``node`` starts (its leftmost leaf)."""
    current: Tree[Token] | Token = node
    while isinstance(current, Tree):
        if not current.children:
            return 0
        current = current.children[0]
    return current.start_pos or 0


class _LiteralError(Exception):
    """A token the grammar accepts but whose value is not JSON (raised in the builder)."""

    def __init__(self, reason: str, start: int, end: int) -> None:
        self.reason, self.start, self.end = reason, start, end


def _unquote(token: Token) -> str:
    # The grammar admits exactly JSON's escapes (and \' in single quotes), so after
    # turning a single-quoted body into a double-quoted one, json.loads decodes it,
    # pairing \ud83d\ude00 into one character.
    text = str(token)
    if text[0] == "'":
        body = re.sub(r"\\(.)|\"", lambda m: "\\\"" if m.group(0) == '"' else (
            "'" if m.group(1) == "'" else m.group(0)), text[1:-1])
        text = f'"{body}"'
    value: str = json.loads(text, strict=False)  # raw control characters are kept as they are
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _LiteralError("a \\u escape names half of a surrogate pair",
                            token.start_pos or 0, token.end_pos or 0) from None
    return value


def _token_span(token: Token) -> Span:
    return Span(token.start_pos or 0, token.end_pos or 0)


def _around(first: Expr, last: Expr) -> Span:
    return Span(first.span.start, last.span.end)


@frozen
class _Segment:
    value: str | int
    end: int


class _Build(Transformer[Token, object]):
    """Builds AST nodes from the parse tree, and does nothing else (no evaluation).

    Every node's span comes from its tokens: a reference from its † to the end of its
    last segment, an operator node from its first operand to its last.
    """

    def input(self, children: list[object]) -> object:
        return children[0]

    output = input
    ref = input

    def or_expr(self, children: list[Expr]) -> Expr:
        return children[0] if len(children) == 1 else Or(tuple(children), _around(children[0], children[-1]))

    def and_expr(self, children: list[Expr]) -> Expr:
        return children[0] if len(children) == 1 else And(tuple(children), _around(children[0], children[-1]))

    out_or = or_expr
    out_and = and_expr

    def reference(self, children: list[Any]) -> Reference:
        dagger, kind, *segments = children
        end = segments[-1].end if segments else (kind.end_pos or 0)
        path: Path = tuple(s.value for s in segments)
        return Reference(str(kind), path, Span(dagger.start_pos or 0, end))

    def word_segment(self, children: list[Token]) -> _Segment:
        word = str(children[0])
        value: str | int = int(word) if INDEX.fullmatch(word) else word
        return _Segment(value, children[0].end_pos or 0)

    def quoted_segment(self, children: list[Token]) -> _Segment:
        return _Segment(_unquote(children[0]), children[0].end_pos or 0)

    def string_literal(self, children: list[Token]) -> Literal:
        return Literal(_unquote(children[0]), _token_span(children[0]))

    def number_literal(self, children: list[Token]) -> Literal:
        value = json.loads(str(children[0]))
        if isinstance(value, float) and math.isinf(value):
            token = children[0]
            raise _LiteralError("the number is too large for JSON", token.start_pos or 0,
                                token.end_pos or 0)
        return Literal(value, _token_span(children[0]))

    def true_literal(self, children: list[Token]) -> Literal:
        return Literal(True, _token_span(children[0]))

    def false_literal(self, children: list[Token]) -> Literal:
        return Literal(False, _token_span(children[0]))

    def null_literal(self, children: list[Token]) -> Literal:
        return Literal(None, _token_span(children[0]))


_BUILD = _Build()
