"""The compiler: the expression grammar and parser (and, later, the plan compiler)."""

from obelisk.compiler.parse import (
    MAX_DEPTH,
    MAX_LENGTH,
    is_expression,
    parse_input,
    parse_output,
    parse_reference,
    unescape_literal,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "is_expression",
    "parse_input",
    "parse_output",
    "parse_reference",
    "unescape_literal",
]
