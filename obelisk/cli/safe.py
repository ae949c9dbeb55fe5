"""Text from input, made safe to show on a terminal: visible and inert.

A plan file, a mock, an activity's result or error can hold any string. Printed raw, an
escape sequence can erase a ``failed`` row, a carriage return can overwrite a line with
``status: completed``, a bidi override can reverse what a reader sees. Every string the
command line prints that came from input goes through :func:`inert` (text) or
:func:`json_text` (JSON), and nothing else prints input.

What is escaped: every character Python does not call printable (``str.isprintable``):
C0 and C1 controls (escape, carriage return, newline, tab, ...), DEL, format characters
(bidi overrides and isolates U+202A-U+202E and U+2066-U+2069, zero-width characters,
the byte order mark, soft hyphen, tag characters), lone surrogates, private-use and
unassigned code points, and separators other than the space (U+2028, no-break spaces).
Letters of every script, combining marks and emoji are kept.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any, TextIO

__all__ = ["inert", "inert_lines", "json_text"]

# Candidates: anything but printable ASCII. Most text is ASCII, so most calls find none.
_CANDIDATES = re.compile(r"[^\x20-\x7e]+")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _visible(match: re.Match[str]) -> str:
    return "".join(c if c.isprintable() else _escape(c) for c in match.group())


def inert(text: str) -> str:
    """``text`` with every non-printable character written as a visible escape.

    ``"a\\x1b[2K\\rb\\u202e"`` becomes ``a\\x1b[2K\\rb\\u202e`` written out with
    backslashes: the escape and carriage return no longer act on the terminal. Backslashes
    themselves are kept, so ``inert(inert(t)) == inert(t)``.
    """
    return _CANDIDATES.sub(_visible, text)


def inert_lines(text: str) -> str:
    """:func:`inert` line by line: for multi-line text that obelisk composed itself (an
    error with an excerpt), whose line breaks are its own."""
    return "\n".join(inert(line) for line in text.split("\n"))


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a JSON escape holds 16 bits: write a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _json_visible(match: re.Match[str]) -> str:
    return "".join(c if c.isprintable() else _json_escape(c) for c in match.group())


def _is_unicode(stream: TextIO | None) -> bool:
    encoding = getattr(stream, "encoding", None)
    if not isinstance(encoding, str):  # io.StringIO: holds any text
        return True
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def json_text(value: Any, *, indent: int | None = 2, stream: TextIO | None = None) -> str:
    """JSON text for output, to a terminal or a file: the same value, always writable.

    UTF-8 characters (†, Cyrillic) are kept, except those :func:`inert` escapes: those
    are written as JSON escapes (``\\u202e``), which any JSON reader reads back to the
    same string, lone surrogates included. To a ``stream`` whose encoding is not a UTF
    the whole text is ASCII. An integer too long for Python's string conversion limit is
    written in full.
    """
    ascii_only = not _is_unicode(stream)
    try:
        text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
        text = _dumps_long_integers(value, ascii_only, indent)
    if ascii_only:
        return text
    # Outside strings json.dumps writes only printable ASCII and line breaks: every
    # character matched here is inside a string, where a JSON escape means the same.
    return "\n".join(_CANDIDATES.sub(_json_visible, line) for line in text.split("\n"))


def _dumps_long_integers(value: Any, ascii_only: bool, indent: int | None,
                         depth: int = 0) -> str:
    # Python refuses str() of an int over 4,300 digits (the conversion is quadratic).
    # Input refuses them too, but an activity can return one: print it whole, through
    # decimal, whose conversion has no such limit. The layout is json.dumps's.
    if isinstance(value, int) and not isinstance(value, bool):
        import decimal  # only for an integer too long for str(): not at start-up

        return format(decimal.Decimal(value), "f")
    if isinstance(value, (dict, list, tuple)) and value:
        if isinstance(value, dict):
            items = [f"{json.dumps(k, ensure_ascii=ascii_only)}: "
                     f"{_dumps_long_integers(v, ascii_only, indent, depth + 1)}"
                     for k, v in value.items()]
            ends = "{}"
        else:
            items = [_dumps_long_integers(v, ascii_only, indent, depth + 1) for v in value]
            ends = "[]"
        if indent is None:
            return ends[0] + ", ".join(items) + ends[1]
        inner, outer = "\n" + " " * (indent * (depth + 1)), "\n" + " " * (indent * depth)
        return ends[0] + inner + ("," + inner).join(items) + outer + ends[1]
    return json.dumps(value, ensure_ascii=ascii_only)
