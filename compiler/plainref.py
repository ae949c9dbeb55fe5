"""The fast path of expression parsing: one plain reference, read without the parser.

Nearly every expression in real plans is one reference of plain keys and indexes
(``†state.user.id``, ``†data.items.0``). For those, a regular expression built from the
grammar's own KIND and WORD terminals gives the same :class:`Reference` the parser would:
the contextual lexer allows only KIND after ``†`` and only WORD (or a quoted STRING, not
taken here) after a dot, and a word never holds a dot, so splitting at the dots yields
exactly the lexer's tokens. Anything else (quotes, operators, parentheses, literals, any
error at all) goes to the parser (:mod:`obelisk.compiler.parse`), so the grammar stays
the one definition of the language and of every error message; a property test checks,
on generated and mutated texts, that both give identical ASTs and identical errors.
"""

from __future__ import annotations

import functools
import re
import sys

from obelisk.core.ast import Reference, Span
from obelisk.core.paths import Path

#: The grammar's KIND terminal (grammar.lark), verbatim.
KIND_PATTERN = r"[^\W\d][\w$-]*|\$[\w$-]*"
#: The grammar's WORD terminal (grammar.lark), verbatim.
WORD_PATTERN = r"-?(?:0|[1-9][0-9]*)(?![\w$-])|[\w$][\w$-]*"
#: An index: an optionally negative run of ASCII digits without leading zeros.
INDEX = re.compile(r"-?(?:0|[1-9][0-9]*)")

# Trailing whitespace is trimmed before parsing; leading whitespace is an error.
_PLAIN = re.compile(f"†({KIND_PATTERN})((?:\\.(?:{WORD_PATTERN}))*)" r"[ \t\r\n]*")

_INDEX_START = frozenset("-0123456789")
#: A word of a dotted path that starts as an index may (a dot, then one of _INDEX_START).
_MAY_INDEX = re.compile("\\.[" + "".join(sorted(re.escape(c) for c in _INDEX_START)) + "]")

#: One copy of each kind name and key across a plan's references (they repeat a lot).
_intern = sys.intern



def plain_reference(text: object, max_length: int) -> Reference | None:
    """The Reference a plain ``†kind.key.0`` text parses to, or None to use the parser
    (also for a text over ``max_length``, whose error the parser gives)."""
    if not isinstance(text, str) or len(text) > max_length:
        return None
    match = _PLAIN.fullmatch(text)
    if match is None:
        return None
    dotted = match.group(2)
    if not dotted:
        path: Path = ()
    elif _MAY_INDEX.search(dotted) is None:  # names only (most paths): made in C
        path = tuple(map(_intern, dotted[1:].split(".")))
    else:
        path = tuple(
            int(word) if word[0] in _INDEX_START and INDEX.fullmatch(word) else _intern(word)
            for word in dotted[1:].split("."))
    return Reference(_intern(match.group(1)), path, _span(match.end(2)))


@functools.cache  # at most one per length up to the longest expression
def _span(end: int) -> Span:
    """The span of a plain reference ``end`` characters long, shared by all of them."""
    return Span(0, end)
