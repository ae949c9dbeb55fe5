"""The library's error root and its data-carrying subclasses.

Every error obelisk raises is an :class:`ObeliskError`. Subclasses carry the data a caller
needs to point at the problem (column, path, message index); the text of each error names
what is wrong, where, and how to fix it. Errors from lark or jsonschema never escape: they
are translated at the boundary with ``raise ... from None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from obelisk.core.pathtext import render_reference
from obelisk.core.text import caret_line, plural


class ObeliskError(Exception):
    """Root of every error obelisk raises."""


class ExpressionSyntaxError(ObeliskError, ValueError):
    """An expression does not parse, or exceeds the length or nesting limit.

    ``column`` is 1-based (in characters), ``expected`` lists what would have been accepted
    at that column (empty when the problem is a limit), ``end`` is the 1-based column just
    past the problem, so ``expression[column-1:end-1]`` is the offending text.
    """

    def __init__(
        self,
        reason: str,
        expression: str,
        column: int,
        expected: Sequence[str] = (),
        end: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.reason = reason
        self.expression = expression
        self.column = column
        self.end = max(end if end is not None else column + 1, column + 1)
        self.expected = tuple(expected)
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        """The error as a compiler would print it: reason, the expression, a caret."""
        lines = [
            f"{self.reason} at column {self.column}",
            caret_line(self.expression, self.column - 1, self.end - 1, indent="  "),
        ]
        if self.expected:
            lines.append("expected " + _one_of(self.expected))
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


class MessageError(ObeliskError, ValueError):
    """A message cannot be put in a context: it is malformed or ambiguous.

    ``index`` is the message's position in the context being built (when known),
    ``pointer`` a JSON Pointer to the offending field inside the message.
    """

    def __init__(self, reason: str, *, index: int | None = None, pointer: str = "") -> None:
        self.reason = reason
        self.index = index
        self.pointer = pointer
        where = "message" if index is None else f"message {index}"
        if pointer:
            where += f" at {pointer}"
        super().__init__(f"{where}: {reason}")

    def at(self, index: int) -> MessageError:
        """The same error, located at message ``index``."""
        return MessageError(self.reason, index=index, pointer=self.pointer)


class WriteError(ObeliskError, ValueError):
    """A write cannot be applied (``push`` onto an object, a path through a scalar, ...).

    ``kind``, ``path`` (a tuple of segments) and ``method`` describe the write;
    ``message_index`` is the position of the offending message in the context when the
    write came from one (reads of a broken kind raise this error again).
    """

    def __init__(
        self,
        reason: str,
        *,
        kind: str = "",
        path: tuple[str | int, ...] = (),
        method: str = "",
        message_index: int | None = None,
        instance: str | None = None,
    ) -> None:
        self.reason = reason
        self.kind = kind
        self.path = path
        self.method = method
        self.message_index = message_index
        self.instance = instance
        super().__init__(self._text())

    def _text(self) -> str:
        parts = []
        if self.method:
            parts.append(f"cannot {self.method}")
        if self.kind:
            parts.append(f"at {render_reference(self.kind, self.path)}")
        if self.instance is not None:
            parts.append(f"(instance {self.instance!r})")
        if self.message_index is not None:
            parts.append(f"in message {self.message_index}")
        head = " ".join(parts)
        return f"{head}: {self.reason}" if head else self.reason

    def located(
        self, *, kind: str, path: tuple[str | int, ...], method: str,
        message_index: int | None, instance: str | None,
    ) -> WriteError:
        """The same reason, with the write it happened in."""
        return WriteError(
            self.reason, kind=kind, path=path, method=method,
            message_index=message_index, instance=instance,
        )


class NotJSONError(ObeliskError, ValueError):
    """A value is not JSON (a set, bytes, NaN, a non-string key, a cycle...).

    ``pointer`` is a JSON Pointer to the offending part of the value.
    """

    def __init__(self, reason: str, pointer: str) -> None:
        self.reason = reason
        self.pointer = pointer
        shown = pointer if len(pointer) <= 120 else pointer[:60] + "…" + pointer[-40:]
        super().__init__(f"{reason} at {shown or '/'}")


class ValueTooLarge(ObeliskError, ValueError):
    """A value holds more JSON values than the limit allows (``max_value_nodes``).

    Every object, array and scalar counts one (a string of any length counts one).
    ``limit`` is the limit that was passed.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"more than {limit:,} JSON values (objects, arrays and scalars "
                         "each count one)")


class PlanRefused(ObeliskError):
    """A plan with error diagnostics cannot run; ``diagnostics`` says why.

    ``rendered`` holds the text of (at most the first ten of) those diagnostics, as the
    compiler renders them: core does not know how diagnostics print.
    """

    def __init__(self, plan: Any, rendered: Sequence[str] = ()) -> None:
        self.plan = plan
        self.diagnostics = plan.errors
        shown = "\n".join(list(rendered)[:10])
        more = len(self.diagnostics) - 10
        super().__init__(
            f"the plan has {plural(len(self.diagnostics), 'error')} and cannot run:\n{shown}"
            + (f"\n... and {more} more" if more > 0 else "")
        )


class MockError(ObeliskError, ValueError):
    """A mock is not one of the mock forms; ``problems`` lists each."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("invalid mocks:\n" + "\n".join(f"  {p}" for p in self.problems))


class ActivityError(ObeliskError):
    """Raised by an activity to fail with a chosen error ``type``, ``message`` and ``data``."""

    def __init__(self, type: str, message: str, data: Any = None) -> None:
        self.type = type
        self.message = message
        self.data = data
        super().__init__(f"{type}: {message}")


def _one_of(options: Sequence[str]) -> str:
    if len(options) == 1:
        return options[0]
    return "one of: " + ", ".join(options)




class PlanError(ObeliskError, ValueError):
    """The plan as a whole is unusable (not a list of calls, tools that are invalid)."""


class ToolError(ObeliskError, ValueError):
    """A tool definition is invalid.

    ``index`` is the tool's position in the list given (None for a single tool),
    ``pointer`` a JSON Pointer into the tool's schema, ``reason`` says what is wrong and
    how to fix it, ``name`` is the tool's name when it could be read.
    """

    def __init__(
        self, reason: str, *, index: int | None = None, pointer: str = "",
        name: str | None = None,
    ) -> None:
        self.reason = reason
        self.index = index
        self.pointer = pointer
        self.name = name
        where = "tool" if index is None else f"tool {index}"
        if name is not None:
            where += f" ({name})"
        if pointer:
            where += f" at {pointer}"
        super().__init__(f"{where}: {reason}")

    def at(self, index: int | None) -> ToolError:
        """The same error, located at position ``index`` of a list of tools."""
        return ToolError(self.reason, index=index, pointer=self.pointer, name=self.name)
