"""The limits on an expression, checked before any parsing: its type and its length
(and the nesting limit the grammar's parser checks)."""

from __future__ import annotations

from obelisk.core.errors import ExpressionSyntaxError

#: Longest expression accepted, in characters.
MAX_LENGTH = 4096
#: Deepest parenthesis nesting accepted.
MAX_DEPTH = 64
#: Whitespace the grammar ignores (trailing whitespace is harmless; leading is not allowed).
SPACE = " \t\r\n"


def check_text(text: str) -> None:
    """The checks before parsing: a str, not longer than the limit."""
    if not isinstance(text, str):
        raise TypeError(f"an expression is a str, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionSyntaxError(
            f"expression is {len(text)} characters long, over the limit of {MAX_LENGTH}",
            text, MAX_LENGTH + 1, end=len(text) + 1,
            hint="split the work across calls, or keep large values in the context",
        )
