"""Parsing ``†`` expressions into the frozen AST of :mod:`obelisk.core.ast`.

Three entry points share one LALR parser built from ``grammar.lark``:
:func:`parse_input` (parameters), :func:`parse_output` (``_outputPath``) and
:func:`parse_reference` (exactly one reference). Every failure is an
:class:`ExpressionSyntaxError` with the column, what was expected, and a caret; lark's own
exceptions never escape. Length and nesting are limited, and the limits give the same error.
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

from obelisk.compiler.plainref import INDEX, plain_reference
from obelisk.compiler.syntaxerrors import SPACE, syntax_error
from obelisk.core.ast import And, Expr, FanOut, Literal, Or, OutputExpr, Reference, Span
from obelisk.core.errors import ExpressionSyntaxError
from obelisk.core.messages import use_reference_parser
from obelisk.core.paths import Path

_SPACE = SPACE
#: Longest expression accepted, in characters.
MAX_LENGTH = 4096
#: Deepest parenthesis nesting accepted.
MAX_DEPTH = 64



@functools.cache
def _parser(inline: bool) -> Lark:
    """The LALR parser of ``grammar.lark``, built on first use and kept for the process.

    Built lazily because most expressions never reach it (see :mod:`obelisk.compiler.plainref`) and
    building it costs about 15 ms, which every ``import obelisk`` used to pay. With
    ``inline`` the builder runs inside the parser (lark's ``transformer=``): no parse tree
    is made, which roughly halves the cost of a parse; the tree form is kept for the
    depth check and for exact error precedence (see :func:`_parse_tree_or_inline`).
    """
    return Lark(
        resources.files("obelisk.compiler").joinpath("grammar.lark").read_text(encoding="utf-8"),
        parser="lalr",
        start=["input", "output", "ref"],
        maybe_placeholders=False,
        transformer=_BUILD if inline else None,
    )

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
    result = _parse_built(text, "input")
    assert isinstance(result, (Reference, Literal, Or, And))
    return result


@functools.lru_cache(maxsize=8192)
def _parse_output(text: str) -> OutputExpr:
    plain = _plain(text)
    if plain is not None:  # what _to_output makes of a lone reference
        return OutputExpr((FanOut((plain,), plain.span),), plain.span)
    return _to_output(_parse_built(text, "output"), text)


@functools.lru_cache(maxsize=8192)
def _parse_reference(text: str) -> Reference:
    plain = _plain(text)
    if plain is not None:
        return plain
    result = _parse_built(text, "ref")
    assert isinstance(result, Reference)
    return result


def _parse_built(text: str, start: str) -> object:
    """``text`` parsed by the grammar from rule ``start`` and built into AST nodes."""
    _check_text(text)
    source = text.rstrip(_SPACE)
    # With the builder inside the parser there is no tree for the depth check, so that
    # path is taken only when the depth cannot exceed the limit: each nesting level
    # opens with its own "(".
    if source.count("(") <= MAX_DEPTH:
        try:
            return _parser(True).parse(source, start=start)
        except UnexpectedInput as exc:
            raise _reported(exc, text, start) from None
        except _LiteralError:
            # A bad literal found mid-parse: a syntax error further on comes first in
            # the tree path (parse, then depth, then build), so let it decide.
            pass
    return _build(text, _parse(text, start))


def _build(text: str, tree: Tree[Token]) -> object:
    try:
        return _BUILD.transform(tree)
    except VisitError as exc:
        error = exc.orig_exc
        if isinstance(error, _LiteralError):
            raise ExpressionSyntaxError(error.reason, text, error.start + 1,
                                        end=error.end + 1) from None
        raise


def _reported(exc: UnexpectedInput, text: str, start: str) -> ExpressionSyntaxError:
    """Our error for lark's, and lark's let go of: its traceback's frames refer back to
    it (a reference cycle per error), which would wait for the collector, and a compile
    runs with the collector off."""
    error = syntax_error(exc, text, start)
    exc.__traceback__ = None
    exc.__context__ = None
    if hasattr(exc, "interactive_parser"):
        exc.interactive_parser = None  # type: ignore[assignment]
    return error


def _check_text(text: str) -> None:
    """The checks before parsing: a str, not longer than the limit."""
    if not isinstance(text, str):
        raise TypeError(f"an expression is a str, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionSyntaxError(
            f"expression is {len(text)} characters long, over the limit of {MAX_LENGTH}",
            text, MAX_LENGTH + 1, end=len(text) + 1,
            hint="split the work across calls, or keep large values in the context",
        )


def _parse(text: str, start: str) -> Tree[Token]:
    _check_text(text)
    source = text.rstrip(_SPACE)  # trailing whitespace is harmless; leading is not allowed
    try:
        tree = _parser(False).parse(source, start=start)
    except UnexpectedInput as exc:
        raise _reported(exc, text, start) from None
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
