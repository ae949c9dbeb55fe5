"""Checking what the LLM answered (pure): the output's references resolved against the
context after the calls; the error messages the loop adds without a call. (The solution's
shape and calls are judged in :mod:`obelisk.agent.judging`.)"""

from __future__ import annotations

from typing import Any

from obelisk.compiler.parse import parse_input
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, WriteError
from obelisk.core.plain import thaw
from obelisk.core.resolve import evaluate, lookup_in
from obelisk.core.values import MISSING

__all__ = ["error_message", "resolve_output"]


def error_message(etype: str, message: str, data: Any = MISSING) -> dict[str, Any]:
    """An error message without a call (InvalidSolution, NoProgress, OutputMissing...)."""
    error: dict[str, Any] = {"type": etype, "message": message}
    if data is not MISSING:
        error["data"] = data
    return {"type": "error", "data": {"error": error}}


def resolve_output(output: Any, context: Context) -> tuple[Any, list[str]]:
    """``output`` with each reference string replaced by its value in ``context`` (a
    string that starts with ``\\†`` is the literal text after the backslash, as in a
    parameter), and the problems (a MISSING reference, a reference that does not parse)."""
    problems: list[str] = []
    lookup = lookup_in(context, None)

    def walk(value: Any, pointer: str) -> Any:
        if isinstance(value, str) and value.startswith("†"):
            try:
                found = evaluate(parse_input(value), lookup)
            except (ExpressionSyntaxError, WriteError) as exc:
                problems.append(f"output{pointer}: {value!r} cannot be read: {exc}")
                return None
            if found is MISSING:
                problems.append(f"output{pointer}: {value} is MISSING after the calls ran")
                return None
            return thaw(found)
        if isinstance(value, str) and value.startswith("\\†"):
            return value[1:]  # D7: a literal that starts with †, not a reference
        if isinstance(value, dict):
            return {k: walk(v, f"{pointer}/{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, f"{pointer}/{i}") for i, v in enumerate(value)]
        return value

    return walk(output, ""), problems
