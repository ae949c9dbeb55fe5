"""How a failed parse is put to the user: lark's exceptions become an
:class:`ExpressionSyntaxError` with the column, what was expected, and a hint."""

from __future__ import annotations

import re

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from obelisk.compiler.limits import SPACE
from obelisk.core.errors import ExpressionSyntaxError

#: How terminals are named to a user in "expected ..." lists.
_TERMINALS = {
    "DAGGER": "† (a reference)",
    "KIND": "a kind name (state, input, data, ...)",
    "WORD": "a key or an index",
    "STRING": "a quoted string",
    "NUMBER": "a number",
    "_OR": "||",
    "_AND": "&&",
    "_LPAR": "(",
    "_RPAR": ")",
    "DOT": ".",
    "TRUE": "true",
    "FALSE": "false",
    "NULL": "null",
    "$END": "the end of the expression",
}
_ORDER = list(_TERMINALS)


def syntax_error(exc: UnexpectedInput, text: str, start: str) -> ExpressionSyntaxError:
    """lark's failure to parse ``text`` from rule ``start``, as the error a user reads:
    the column, what was expected there, a caret and a hint."""
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        expected = _describe(exc.allowed)
        if text[pos] in " \t\r\n":
            # Point at what follows the space: "†a | †b" is about the "|", not the space.
            after = len(text) - len(text[pos:].lstrip())
            if after < len(text) and text[after] in "|&":
                pos = after
        found = text[pos]
        reason = f"unexpected character {found!r}"
        bad_escape = _BAD_ESCAPE.match(text, pos) if found in "'\"" else None
        if bad_escape is not None:
            pos = bad_escape.start(1)
            found = text[pos]
            reason = f"unknown escape {bad_escape.group(1)} in a string"
            expected = ()
            hint: str | None = "strings use JSON's escapes: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX (and \\' in single quotes)"
        elif found == "|" or found == "&":
            hint = f"operators are written twice: {found * 2}"
        elif found == " " or found == "\t":
            hint = ("two operands need || or && between them; a key with spaces is "
                    "quoted: †state.\"my key\"")
        elif found == "." and pos > 0 and text[pos - 1] == ".":
            hint = "two dots in a row: a key is missing between them"
        else:
            hint = None
        end = pos + 1
    elif isinstance(exc, UnexpectedToken):
        token = exc.token
        pos = len(text.rstrip(SPACE)) if token.type == "$END" else (token.start_pos or 0)
        expected = _describe(exc.expected)
        if token.type == "$END":
            reason = "the expression ends too early"
            end = pos + 1
        else:
            reason = f"unexpected {str(token).strip(SPACE)!r}"
            if token.type in ("STRING", "NUMBER", "TRUE", "FALSE", "NULL") and start != "input":
                reason = "an output path cannot hold a literal"
            end = token.end_pos or pos + 1
        hint = _hint_for_token(text, pos, start)
    elif isinstance(exc, UnexpectedEOF):
        pos = len(text.rstrip(SPACE))
        expected = _describe(exc.expected)
        reason = "the expression ends too early"
        end = pos + 1
        hint = None
    else:  # pragma: no cover - lark has no other UnexpectedInput
        pos, expected, reason, end, hint = 0, (), str(exc), 1, None
    if pos == 0 and not text.startswith("†") and not text[:1] in "'\"(-0123456789tfn":
        hint = "an expression starts with †, as in †state.user.id"
    return ExpressionSyntaxError(reason, text, pos + 1, expected, end=end + 1, hint=hint)


def _hint_for_token(text: str, pos: int, start: str) -> str | None:
    before = text[:pos].rstrip()
    if before.endswith("."):
        return "a '.' must be followed by a key or an index"
    if before.endswith("†"):
        return "a † must be followed by a kind, as in †state"
    if start == "ref":
        return "this must be a single reference such as †state.user.status, without || or &&"
    return None


def _describe(names: object) -> tuple[str, ...]:
    assert isinstance(names, (set, frozenset, list, tuple))
    known = sorted({n for n in names if isinstance(n, str)}, key=lambda n: (
        _ORDER.index(n) if n in _TERMINALS else len(_ORDER), n))
    return tuple(_TERMINALS.get(n, n.strip('"').lower()) for n in known)


#: A quoted string up to its first escape JSON does not have (\q, a short \u12).
_BAD_ESCAPE = re.compile(r"""(?:'(?:[^'\\]|\\['"\\/bfnrt]|\\u[0-9a-fA-F]{4})*|"(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*)(\\(?:u[0-9a-fA-F]{0,3}|[^u]?))""")


