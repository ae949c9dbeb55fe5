"""Checking what the LLM answered (pure): the solution against its schema, the output's
references resolved against the context after the calls, and the output against the
user's schema; the error messages the loop adds for them."""

from __future__ import annotations

import json
from typing import Any

from obelisk.compiler.parse import parse_input
from obelisk.compiler.patterns import linear_validator
from obelisk.core.context import Context
from obelisk.core.errors import ExpressionSyntaxError, WriteError
from obelisk.core.plain import thaw
from obelisk.core.resolve import evaluate, lookup_in
from obelisk.core.values import MISSING

__all__ = ["Validators", "error_message", "resolve_output"]


def error_message(etype: str, message: str, data: Any = MISSING) -> dict[str, Any]:
    """An error message without a call (InvalidSolution, NoProgress, OutputMissing...)."""
    error: dict[str, Any] = {"type": etype, "message": message}
    if data is not MISSING:
        error["data"] = data
    return {"type": "error", "data": {"error": error}}


def resolve_output(output: Any, context: Context) -> tuple[Any, list[str]]:
    """``output`` with each reference string replaced by its value in ``context``, and
    the problems (a MISSING reference, a reference that does not parse)."""
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
        if isinstance(value, dict):
            return {k: walk(v, f"{pointer}/{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, f"{pointer}/{i}") for i, v in enumerate(value)]
        return value

    return walk(output, ""), problems


class Validators:
    """Solution and output validators, built once per schema text for the whole run (a
    run asks for the same solution schema tick after tick); their patterns are matched
    in linear time (:mod:`obelisk.compiler.patterns`), since the LLM writes the strings."""

    def __init__(self, output_schema: Any) -> None:
        self.solutions: dict[str, Any] = {}
        self.output = None if output_schema is None else linear_validator()(output_schema)

    def solution_errors(self, schema_text: str, solution: Any) -> list[dict[str, str]]:
        """The solution's first ten validation errors, ``{pointer, message}``."""
        validator = self.solutions.get(schema_text)
        if validator is None:
            validator = self.solutions[schema_text] = linear_validator()(
                json.loads(schema_text))
        errors = sorted(validator.iter_errors(solution), key=lambda e: list(e.absolute_path))
        return [{"pointer": "".join(f"/{p}" for p in e.absolute_path), "message": e.message}
                for e in errors[:10]]

    def output_problems(self, value: Any) -> str:
        """The output's problems against the user's schema, as one text (empty: none)."""
        if self.output is None:
            return ""
        errors = sorted(self.output.iter_errors(value), key=lambda e: list(e.absolute_path))
        return "; ".join(f"{''.join(f'/{p}' for p in e.absolute_path) or '/'}: {e.message}"
                         for e in errors[:5])
