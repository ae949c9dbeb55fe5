"""Reading JSON files for the command line: every failure becomes an :class:`InputError`."""

from __future__ import annotations

import json
import sys
from typing import Any

from obelisk.core.errors import ObeliskError


class InputError(ObeliskError):
    """A file cannot be read or is not the JSON the command needs (exit code 2)."""


def load_json(path: str) -> Any:
    """The JSON in the file at ``path`` (``-`` for standard input)."""
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
    return parse_json(text, name)


def parse_json(text: str, name: str) -> Any:
    """The JSON value of ``text``; ``name`` says where it came from in errors."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        line = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
        # TODO(arch): core.text.caret_line (the shared caret drawer) once merged.
        caret = " " * (exc.colno - 1) + "^"
        shown = line if len(line) <= 120 else line[max(0, exc.colno - 60):exc.colno + 60]
        if len(line) > 120:
            caret = " " * (min(exc.colno - 1, 60)) + "^"
        raise InputError(
            f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}\n"
            f"  {shown}\n  {caret}"
        ) from None
    except RecursionError:
        raise InputError(f"{name} is nested too deeply to read as JSON") from None
    except ValueError as exc:
        raise InputError(f"{name} is not valid JSON: {exc}") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def dumps(value: Any, *, indent: int | None = 2) -> str:
    """JSON text for output: UTF-8 characters kept (†, Cyrillic), keys in given order."""
    return json.dumps(value, ensure_ascii=False, indent=indent)
