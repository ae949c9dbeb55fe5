"""Where a value is in the JSON text it was read from: JSON Pointer -> line and column.

Positions are found only for what is reported. Reading a file keeps its text; a clean
file is never scanned. When diagnostics are printed, :func:`locate` walks the text once
for all their pointers together: it descends only into the containers on the way to a
wanted pointer and skips every other value with Python's own (C) JSON scanner, so the
cost is about one more parse of the parts of the file that hold reported values.

Lines and columns are 1-based; a column counts characters (Unicode code points), as
SARIF's ``unicodeCodePoints`` column kind does.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import frozen

__all__ = ["Position", "Source", "first_duplicate", "locate", "string_offsets"]

_SPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
# A JSON string's contents, one decoded character at a time: an escaped surrogate pair
# (one character), any other escape, or a character as written.
_CHAR = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}"
                   r"|\\.|.", re.DOTALL)
# The decoder's own scanner (C when built): skips a value at the speed of json.loads.
_SCANNER: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


@frozen
class Position:
    """A value's place in the text: its first character's offset, and its end offset.

    ``key`` is the offset of the member name when the value is an object member.
    """

    start: int
    end: int
    key: int | None = None


def _unescape(step: str) -> str:
    return step.replace("~1", "/").replace("~0", "~")


def _skip(text: str, at: int) -> int:
    """The offset just after the JSON value at ``at``."""
    try:
        return int(_SCANNER(text, at)[1])
    except (StopIteration, ValueError):  # not JSON there: stop looking
        return len(text)


def _walk(text: str, at: int, tree: Mapping[str, Any], prefix: str,
          found: dict[str, Position]) -> int:
    """Record the positions of ``tree``'s pointers inside the value at ``at``; return the
    offset after the value."""
    opening = text[at:at + 1]
    if opening not in ("{", "[") or not tree:
        return _skip(text, at)
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    closing = "}" if opening == "{" else "]"
    index = 0
    while at < len(text) and text[at] != closing:
        key_at: int | None = None
        if opening == "{":
            match = _STRING.match(text, at)
            if match is None:
                return len(text)
            key_at, step = at, json.loads(match.group())
            at = _SPACE.match(text, match.end()).end()  # type: ignore[union-attr]
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]  # the colon
        else:
            step = str(index)
        index += 1
        if step in tree:
            pointer = f"{prefix}/{step.replace('~', '~0').replace('/', '~1')}"
            end = _walk(text, at, tree[step], pointer, found)
            found[pointer] = Position(at, end, key_at)
        else:
            end = _skip(text, at)
        at = _SPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[at:at + 1] == ",":
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    return at + 1


def locate(text: str, pointers: Iterable[str]) -> dict[str, Position]:
    """The position of each pointer's value in ``text`` (one pass for all of them).

    A pointer whose value is not in the text is absent from the result; each of its
    ancestors that is present is there (callers fall back to the nearest one).
    """
    tree: dict[str, Any] = {}
    for pointer in pointers:
        node = tree
        for raw in pointer.split("/")[1:] if pointer else []:
            # The JSON Pointer's unescaped step: "a~1b" names the key "a/b".
            node = node.setdefault(_unescape(raw), {})
    start = _SPACE.match(text, 1 if text.startswith("\ufeff") else 0).end()  # type: ignore[union-attr]
    found: dict[str, Position] = {}
    end = _walk(text, start, tree, "", found)
    found[""] = Position(start, end)
    return found


class _Open:
    """A container being walked by :func:`first_duplicate`."""

    __slots__ = ("closing", "pointer", "names", "index")

    def __init__(self, opening: str, pointer: str) -> None:
        self.closing = "}" if opening == "{" else "]"
        self.pointer = pointer
        self.names: set[str] = set()
        self.index = 0


def first_duplicate(text: str) -> tuple[int, str, str] | None:
    """The first member of an object (in text order) whose name an earlier member of the
    same object has: ``(offset of its name, the name, the object's JSON Pointer)``, or
    None. ``text`` is JSON that parses; it is walked without recursion, every scalar
    skipped by the C scanner. For an error message only: a clean file is never walked."""
    bom = 1 if text.startswith("\ufeff") else 0
    at = _SPACE.match(text, bom).end()  # type: ignore[union-attr]
    frames: list[_Open] = []
    pointer = ""
    while True:
        if text[at:at + 1] in ("{", "["):
            frames.append(_Open(text[at], pointer))
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
            fresh = text[at:at + 1] != frames[-1].closing
        else:
            at, fresh = _skip(text, at), False
        while not fresh:  # a value ended: to the next member, closing what ends here
            if not frames:
                return None
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
            if text[at:at + 1] == ",":
                at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                fresh = True
            else:
                frames.pop()
                at += 1
        frame = frames[-1]
        if frame.closing == "]":
            pointer = f"{frame.pointer}/{frame.index}"
            frame.index += 1
            continue
        match = _STRING.match(text, at)
        if match is None:
            return None
        name = json.loads(match.group())
        if name in frame.names:
            return at, name, frame.pointer
        frame.names.add(name)
        pointer = f"{frame.pointer}/{name.replace('~', '~0').replace('/', '~1')}"
        at = _SPACE.match(text, match.end()).end()  # type: ignore[union-attr]
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]  # the colon


def string_offsets(token: str) -> list[int]:
    """For a JSON string token (with its quotes): the offset in the token of each decoded
    character, plus one past the last, so a span in the decoded string maps to the text."""
    offsets = [m.start() for m in _CHAR.finditer(token, 1, len(token) - 1)]
    offsets.append(len(token) - 1)
    return offsets


@frozen
class Source:
    """A text and its line starts, for turning offsets into lines and columns."""

    text: str
    starts: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> Source:
        """The text, its line starts computed once (only when something is reported)."""
        return cls(text, (0, *(m.end() for m in re.finditer("\n", text))))

    def line_column(self, offset: int) -> tuple[int, int]:
        """1-based line and column of ``offset``."""
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def line(self, number: int) -> str:
        """The text of line ``number`` (1-based), without its line break."""
        start = self.starts[number - 1]
        end = self.starts[number] - 1 if number < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r")


@frozen
class Where:
    """Where a diagnostic points in its plan file: 1-based line and column, and the column
    just after the marked span (on the same line; SARIF's exclusive ``endColumn``)."""

    line: int
    column: int
    end_column: int

    def to_json(self) -> dict[str, int]:
        """``{"line", "column", "endColumn"}``."""
        return {"line": self.line, "column": self.column, "endColumn": self.end_column}


def diagnostic_pointer(call: int | None, pointer: str, plan_pointer: str) -> str:
    """The JSON Pointer, in the file, of what a diagnostic is about."""
    return plan_pointer if call is None else f"{plan_pointer}/{call}{pointer}"


def where_all(source: Source, items: Iterable[tuple[str, int | None, int | None]]
              ) -> list[Where]:
    """The place of each ``(pointer, span start, span end)``: the value at the pointer (or
    its nearest ancestor in the file), narrowed to the span when the value is a string
    and the span is given (a span indexes the decoded string)."""
    wanted = list(items)
    found = locate(source.text, (p for p, _, _ in wanted))
    result = []
    for pointer, span_start, span_end in wanted:
        exact = pointer in found
        while pointer not in found:
            pointer = pointer.rsplit("/", 1)[0] if "/" in pointer else ""
        position = found[pointer]
        start, end = position.start, position.end
        if not exact and position.key is not None:
            start = position.key  # what is missing belongs to the member: mark its name
            end = start + 1
        elif source.text[start:start + 1] == '"' and span_start is not None:
            offsets = string_offsets(source.text[start:end])
            last = len(offsets) - 1
            s, e = min(span_start, last), min(max(span_end or 0, span_start + 1), last)
            start, end = start + offsets[s], start + max(offsets[e], offsets[s] + 1)
        elif source.text[start:start + 1] in ("{", "["):
            end = start + 1  # a whole object or array: mark where it opens
        line, column = source.line_column(start)
        line_end = source.starts[line] - 1 if line < len(source.starts) else len(source.text)
        result.append(Where(line, column, column + max(1, min(end, line_end) - start)))
    return result
