"""The solution schema: what an LLM's answer to a request must look like.

A *solution* is one JSON object ``{"calls": [...], "output": <value or null>}``.
:func:`solution_schema` builds its JSON Schema from the tools, on top of the public
:func:`obelisk.compose_calls_schema` (the tool branches and their order come from there;
this module only widens them for the agent):

- every parameter, at every value position, also accepts a reference (a string starting
  with ``†``), since the LLM may wire a call to data it has not seen yet;
- every branch requires ``_tool`` (strict mode then never makes it nullable) and declares
  ``_outputPath`` (a reference string, unless the tool declares it itself),
  ``_outputMethod`` (the five methods), ``_instance`` and ``_scopes``;
- ``_output`` is removed from tools that have an activity (the LLM must not invent their
  results), kept for latent tools in eager mode, removed from every tool in lazy mode;
- ``output`` is the user's output schema, nullable, widened to accept references.

Providers' strict structured output rewrites the schema again (every property required,
optional ones nullable): :mod:`obelisk.llm.strict`, where the adapters that apply it
live. Pure functions: no I/O.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from obelisk.compiler.compose import compose_calls_schema
from obelisk.compiler.tools import Tool, ToolRegistry
from obelisk.core.methods import Method
from obelisk.llm.strict import MANY, MAP, ONE, SUBSCHEMA_KEYWORDS

__all__ = [
    "REFERENCE_SCHEMA",
    "Mode",
    "solution_schema",
    "widen_to_references",
]


class Mode(str, enum.Enum):
    """How the agent runs a solution (eager: plan and execute at once; lazy: plan first)."""

    EAGER = "eager"
    LAZY = "lazy"


#: A string that is a reference expression: it starts with ``†``.
REFERENCE_SCHEMA: Mapping[str, Any] = {"type": "string", "pattern": "^†"}

#: Keywords that only annotate: a string schema with nothing else accepts references as is.
_ANNOTATIONS = frozenset({"type", "title", "description", "default", "examples", "$comment"})
#: Subschema keywords whose subschemas are not values (a condition, a key's name).
_NOT_VALUES = frozenset({"not", "if", "propertyNames"})


def _reference() -> dict[str, Any]:
    return dict(REFERENCE_SCHEMA)


def widen_to_references(schema: Any) -> Any:
    """``schema`` with every value position also accepting a reference string.

    Each subschema ``S`` that describes a value becomes ``{"anyOf": [S', ref]}``, where
    ``S'`` has its own value subschemas widened the same way. Schemas that already accept
    every reference (``true``, ``{}``, a plain ``{"type": "string"}``) and non-schemas are
    returned as they are. Returns a new schema.
    """
    if not isinstance(schema, Mapping) or not schema:
        return schema
    if schema.get("type") == "string" and set(schema) <= _ANNOTATIONS:
        return dict(schema)
    return {"anyOf": [_widen_children(schema), _reference()]}


def _widen_children(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NOT_VALUES or key not in SUBSCHEMA_KEYWORDS:
            out[key] = copy.deepcopy(value)
        elif key in ONE:
            out[key] = widen_to_references(value)
        elif key in MAP and isinstance(value, Mapping):
            out[key] = {name: widen_to_references(v) for name, v in value.items()}
        elif key == "prefixItems" and isinstance(value, list):
            out[key] = [widen_to_references(v) for v in value]
        elif key in MANY and isinstance(value, list):
            # A combinator's branches are widened inside only: the wrapper around the whole
            # schema already accepts a reference, and widening each branch too would make a
            # reference match several ``oneOf`` branches.
            out[key] = [_widen_children(v) if isinstance(v, Mapping) else v for v in value]
        else:
            out[key] = copy.deepcopy(value)
    return out


def _registry(tools: ToolRegistry | Iterable[Any]) -> ToolRegistry:
    return tools if isinstance(tools, ToolRegistry) else ToolRegistry.of(tools)


def _meta_properties(kinds: Sequence[str] | None) -> dict[str, Any]:
    scope_item: dict[str, Any] = (
        {"type": "string", "enum": list(kinds)} if kinds is not None
        else {"type": "string", "minLength": 1})
    return {
        "_outputPath": {
            **_reference(),
            "description": "Where the result is written: †kind.path, "
                           "alternatives joined by ||, fan-out by &&.",
        },
        "_outputMethod": {"type": "string", "enum": [m.value for m in Method]},
        "_instance": {"type": "string"},
        "_scopes": {"type": "array", "items": scope_item},
    }


def _branch(branch: dict[str, Any], tool: Tool, mode: Mode, latent: bool,
            kinds: Sequence[str] | None) -> dict[str, Any]:
    props: dict[str, Any] = branch.get("properties", {})
    declared = tool.meta_fields
    ordered: dict[str, Any] = {}
    for key, value in props.items():  # the composed meta-fields first, in their order
        if key.startswith("_"):
            ordered[key] = value
    for key, value in _meta_properties(kinds).items():
        if key not in declared:  # a tool that declares a meta-field keeps its declaration
            ordered[key] = value
    for key, value in props.items():
        if not key.startswith("_"):
            ordered[key] = widen_to_references(value)
    if "_output" in ordered and (mode is Mode.LAZY or not latent):
        del ordered["_output"]
    out = dict(branch)
    out["properties"] = ordered
    required = out.get("required")
    kept = [name for name in required if name in ordered or not name.startswith("_")] \
        if isinstance(required, list) else []
    # Every branch requires its _tool (so strict mode never makes it nullable).
    out["required"] = ["_tool", *(name for name in kept if name != "_tool")]
    return out


def solution_schema(
    tools: ToolRegistry | Iterable[Any] = (),
    output_schema: Any = None,
    mode: Mode | str = Mode.EAGER,
    activity_names: Collection[str] = (),
    *,
    kinds: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) of a solution for these tools and output schema.

    ``tools`` is a :class:`ToolRegistry` or a list of tool schemas (checked: raises
    :class:`obelisk.ToolError`); ``output_schema`` the user's schema for ``output`` (None:
    any JSON); ``mode`` ``"eager"`` or ``"lazy"``; ``activity_names`` the registered
    activities (a tool with an activity does not show ``_output``); ``kinds``, when given,
    the data kinds ``_scopes`` may name (else any kind name). Plain JSON, the same for the
    same arguments.
    """
    mode = Mode(mode)
    registry = _registry(tools)
    composed = compose_calls_schema(registry, activity_names)
    calls: dict[str, Any] = composed["properties"]["calls"]
    items = calls.get("items")
    if isinstance(items, dict):
        branches = [
            _branch(branch, tool, mode, branch["properties"]["_activity"]["const"] == "", kinds)
            for branch, tool in zip(items["anyOf"], registry, strict=True)
        ]
        calls = {**calls, "items": {"anyOf": branches}}
    if output_schema is None:
        output: Any = {}
    else:
        output = {"anyOf": [widen_to_references(output_schema), {"type": "null"}]}
    return {
        "type": "object",
        "properties": {"calls": calls, "output": output},
        "required": ["calls", "output"],
        "additionalProperties": False,
    }
