"""The shape of a tool: what its schema says, worked out once per tool.

Names of parameters and meta-fields, the activity it names, its validators, and whether
a call can be checked one property at a time (:class:`Split`).
"""

from __future__ import annotations

from typing import Any, TypeAlias

from attrs import frozen

from obelisk.compiler.schemas import as_object_schema, dig, schema_text
from obelisk.compiler.validation import (
    call_schema,
    call_validator,
    output_validator,
    reference_aware,
)

#: Plain JSON, as json.loads returns it (the alias keeps signatures short).
_Plain: TypeAlias = Any


@frozen
class ToolShape:
    """What a tool's schema says, computed once per tool: names in order, the activity,
    and the validators for calls and results (jsonschema's validators are immutable and
    reusable, so they are built once per tool)."""

    parameters: tuple[str, ...]
    meta: tuple[str, ...]
    declared: frozenset[str]  # top-level meta keys a call may carry into validation
    explicit_activity: str | None
    output_text: str | None
    validator: Any  # for calls
    output_validator: Any  # for results, None without _output
    #: The schema's properties and required names when its top level validates nothing
    #: else, so a call can be checked one property at a time; None otherwise.
    split: Split | None = None

    @classmethod
    def of(cls, plain: _Plain) -> ToolShape:
        """The shape of a tool's schema (plain JSON)."""
        props = plain.get("properties") if isinstance(plain, dict) else None
        props = props if isinstance(props, dict) else {}
        required = plain.get("required") if isinstance(plain, dict) else None
        required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
        meta = tuple(k for k in props if k.startswith("_"))
        output = props.get("_output")
        validator = call_validator(plain)
        return cls(
            parameters=tuple(k for k in props if not k.startswith("_")),
            meta=meta,
            declared=frozenset(meta) | frozenset(r for r in required if r.startswith("_")),
            explicit_activity=_explicit_activity(plain),
            output_text=None if output is None else schema_text(as_object_schema(output)),
            validator=validator,
            output_validator=output_validator(validator, plain),
            split=Split.of(call_schema(plain)),
        )


@frozen
class Split:
    """The checked part of a tool schema whose top level checks only ``type: object``, ``properties`` and
    ``required``: a call's errors are then the union of its properties' errors."""

    properties: dict[str, Any]
    required: tuple[str, ...]

    @classmethod
    def of(cls, plain: _Plain) -> Split | None:
        if not isinstance(plain, dict) or "$id" in plain or "$schema" in plain:
            return None
        checked = {k for k in plain if k in reference_aware().VALIDATORS}
        props, required = plain.get("properties", {}), plain.get("required", [])
        if not checked <= {"type", "properties", "required"} or plain.get(
                "type", "object") != "object" or not isinstance(props, dict) or not (
                isinstance(required, list) and all(isinstance(r, str) for r in required)):
            return None
        return cls(props, tuple(required))


def _explicit_activity(plain: _Plain) -> str | None:
    if not isinstance(plain, dict):
        return None
    top = plain.get("_activity")
    if isinstance(top, str) and top:
        return top
    const = dig(plain, "properties", "_activity", "const")
    return const if isinstance(const, str) and const else None
