"""Reading JSON files for the command line: every failure becomes an :class:`InputError`.

Besides what the JSON grammar refuses, input refuses four things that Python's reader
would let through and that would fail later, far from their cause, or never:

- ``NaN``, ``Infinity`` and ``-Infinity``: not JSON numbers;
- a lone surrogate (``"\\ud800"`` with no low half after it): not a character, and not
  writable as UTF-8; the error names the line, column and JSON Pointer of the string;
- an integer of more than :data:`MAX_INT_DIGITS` digits (Python's conversion limit): Python
  cannot print it (its string conversion is quadratic, so it refuses); the error names
  the line and column;
- a key that appears twice in one object: Python's reader (like most) keeps the last one
  silently, so a reviewer and obelisk could read two different files; the error names
  the key, the line and column of its second appearance, and the object's JSON Pointer.

A UTF-8 byte order mark at the start of the text is skipped.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from obelisk.core.errors import ObeliskError
from obelisk.core.text import caret_line

#: The most digits an integer in input may have, by default: Python's limit on converting
#: integers to text (``PYTHONINTMAXSTRDIGITS`` or ``sys.set_int_max_str_digits`` change
#: it; input follows it, so what is read can always be printed).
MAX_INT_DIGITS = 4300


class InputError(ObeliskError):
    """A file cannot be read or is not the JSON the command needs (exit code 2).

    ``excerpt`` is the line of text where the problem is and its 1-based column, when
    known; ``str()`` shows it under the message with a caret, and :meth:`render` shows it
    through a function that makes the line safe to print (it keeps the caret aligned).
    """

    def __init__(self, message: str, excerpt: tuple[str, int] | None = None) -> None:
        self.message, self.excerpt = message, excerpt
        super().__init__(self.render())

    def render(self, show: Callable[[str], str] = str) -> str:
        """The message, then the excerpt line and a caret, each through ``show``."""
        if self.excerpt is None:
            return show(self.message)
        line, column = self.excerpt
        return f"{show(self.message)}\n" + caret_line(line, column - 1, column, indent="  ",
                                                      width=120, show=show)


def load_json(path: str) -> Any:
    """The JSON in the file at ``path`` (``-`` for standard input)."""
    return parse_json(read_text(path), "standard input" if path == "-" else path)


def read_text(path: str) -> str:
    """The text of the file at ``path`` (``-`` for standard input), read as UTF-8."""
    name = "standard input" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{name} is not UTF-8 text (byte {exc.start})") from None
    return text


def _int_digits_limit() -> int:
    """Python's limit on integer-to-text conversion (0: none, before Python 3.10.7)."""
    get: Callable[[], int] | None = getattr(sys, "get_int_max_str_digits", None)
    return get() if get is not None else 0


def parse_json(text: str, name: str) -> Any:
    """The JSON value of ``text``; ``name`` says where it came from in errors."""
    if text.startswith("\ufeff"):  # a byte order mark: editors on Windows write one
        text = text[1:]
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique)
    except _Duplicate:
        raise _duplicate(text, name) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                         f"column {exc.colno}", _excerpt(text, exc.pos)) from None
    except RecursionError:
        raise InputError(f"{name} is nested too deeply to read as JSON") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python refused a long integer
            raise _long_integer(text, name) from None
        if isinstance(exc, _Constant):
            raise _constant(text, name) from None
        raise InputError(f"{name} is not valid JSON: {exc}") from None
    if _SURROGATE_ESCAPE.search(text) or (not text.isascii() and _SURROGATE.search(text)):
        try:
            _reject_lone_surrogates(text, value, name)
        except RecursionError:
            raise InputError(f"{name} is nested too deeply to read as JSON") from None
    return value


def _long_integer(text: str, name: str) -> InputError:
    limit = _int_digits_limit() or MAX_INT_DIGITS
    pattern = re.compile(r"(?<![.\deE+-])-?\d{" + str(limit + 1) + ",}")
    where = _find(text, pattern)
    digits = ""
    if where is not None:
        match = pattern.match(text, where)
        digits = f" of {len(match.group().lstrip('-'))} digits" if match else ""
    return InputError(f"{name}: {_at(text, where)}an integer{digits}, more than {limit} "
                      "digits; write it as a string", _excerpt(text, where))


class _Duplicate(Exception):
    """An object of the text has a key twice (found where, when it is reported)."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Duplicate
    return value


def _duplicate(text: str, name: str) -> InputError:
    # Imported here: it needs attrs, which `obelisk --help` does not load.
    from obelisk.positions import first_duplicate

    found = first_duplicate(text)
    if found is None:  # pragma: no cover - the reader saw one: the walk finds it
        return InputError(f"{name}: an object has the same key twice; remove one")
    where, key, pointer = found
    return InputError(
        f"{name}: {_at(text, where)}the key {json.dumps(key, ensure_ascii=False)} appears "
        f"twice in the object at {pointer or '/'}; JSON readers keep one of the two "
        "silently, so remove the one that is not meant", _excerpt(text, where))


class _Constant(ValueError):
    """The text holds NaN, Infinity or -Infinity (found where, when it is reported)."""


def _reject_constant(name: str) -> Any:
    raise _Constant(f"{name} is not a JSON number")


_CONSTANT = re.compile(r"-?(?:NaN|Infinity)")


def _constant(text: str, name: str) -> InputError:
    where = _find(text, _CONSTANT)
    match = None if where is None else _CONSTANT.match(text, where)
    word = match.group() if match else "NaN or Infinity"
    return InputError(f"{name}: {_at(text, where)}{word} is not a JSON number; write a "
                      "number, null or a string", _excerpt(text, where))


#: JSON strings (with their escapes), so what is inside one is never read as a number.
_STRING = r'"(?:[^"\\]|\\.)*"'
# A \uD800-\uDFFF escape; or a surrogate itself, as standard input decodes bytes that are
# not UTF-8 in the C locale (surrogateescape). Two searches: each alone is fast.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_LONE = re.compile(r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def _find(text: str, pattern: re.Pattern[str]) -> int | None:
    """Where ``pattern`` first matches outside a string, or None."""
    for match in re.finditer(f"{_STRING}|{pattern.pattern}", text):
        if not match.group().startswith('"'):
            return match.start()
    return None


def _at(text: str, pos: int | None) -> str:
    if pos is None:
        return ""
    line = text.count("\n", 0, pos) + 1
    return f"line {line}, column {pos - (text.rfind(chr(10), 0, pos) + 1) + 1}: "


def _excerpt(text: str, pos: int | None) -> tuple[str, int] | None:
    if pos is None:
        return None
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start:len(text) if end < 0 else end], pos - start + 1


def _reject_lone_surrogates(text: str, value: Any, name: str) -> None:
    pointer = _surrogate_pointer(value, "")
    if pointer is None:
        return  # the escapes were pairs (one astral character each), or "\\ud800" text
    where = None
    for match in re.finditer(_STRING, text):
        token = match.group()
        if (_SURROGATE_ESCAPE.search(token) or _SURROGATE.search(token)) and _LONE.search(
                json.loads(token)):
            where = match.start()
            break
    path, key = pointer
    what = "a key" if key else "a string"
    raise InputError(
        f"{name}: {_at(text, where)}{what} at {path or '/'} holds a lone surrogate "
        "(half of a UTF-16 pair, not a character); write the character itself, or both "
        "halves of its pair (\\ud83d\\ude00)", _excerpt(text, where))


def _surrogate_pointer(value: Any, path: str) -> tuple[str, bool] | None:
    """The JSON Pointer of the first string (or key: True) holding a lone surrogate."""
    if isinstance(value, str):
        return (path, False) if _LONE.search(value) else None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _surrogate_pointer(item, f"{path}/{index}")
            if found:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            step = f"{path}/{key.replace('~', '~0').replace('/', '~1')}"
            if _LONE.search(key):
                return step, True
            found = _surrogate_pointer(item, step)
            if found:
                return found
    return None


def dumps(value: Any, *, indent: int | None = 2) -> str:
    """JSON text for output: UTF-8 characters kept (†, Cyrillic), keys in given order."""
    return json.dumps(value, ensure_ascii=False, indent=indent)
