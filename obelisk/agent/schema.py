"""The solution schema: what an LLM's answer to a request must look like.

A *solution* is one JSON object ``{"calls": [...], "output": <value or null>}``.
:func:`solution_schema` builds its JSON Schema from the tools, on top of the public
:func:`obelisk.compose_calls_schema` (the tool branches and their order come from there;
this module only widens them for the agent):

- every parameter, at every value position, also accepts a reference (a string starting
  with ``†``), since the LLM may wire a call to data it has not seen yet;
- every branch declares ``_outputPath`` (a reference string, unless the tool declares it
  itself), ``_outputMethod`` (the five methods), ``_instance`` and ``_scopes``;
- ``_output`` is removed from tools that have an activity (the LLM must not invent their
  results), kept for latent tools in eager mode, removed from every tool in lazy mode;
- ``output`` is the user's output schema, nullable, widened to accept references.

:func:`strict_schema` rewrites a schema for providers' strict structured output (every
property required, optional ones nullable, no additional properties, ``const`` as a
one-value ``enum``); :func:`drop_forced_nulls` undoes the nulls that rewrite forces into a
solution, since null and MISSING differ. Pure functions over plain JSON: no I/O.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

# jsonschema ships no type information; its values are typed Any here.
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from obelisk.compiler.tools import Tool, ToolRegistry, compose_calls_schema
from obelisk.core.methods import Method

__all__ = [
    "REFERENCE_SCHEMA",
    "Mode",
    "drop_forced_nulls",
    "solution_schema",
    "strict_schema",
    "widen_to_references",
]


class Mode(str, enum.Enum):
    """How the agent runs a solution (eager: plan and execute at once; lazy: plan first)."""

    EAGER = "eager"
    LAZY = "lazy"


#: A string that is a reference expression: it starts with ``†``.
REFERENCE_SCHEMA: Mapping[str, Any] = {"type": "string", "pattern": "^†"}

# Keywords whose value is one subschema, a list of subschemas, or a map of them.
_ONE = ("items", "additionalProperties", "not", "contains", "if", "then", "else",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _reference() -> dict[str, Any]:
    return dict(REFERENCE_SCHEMA)


def widen_to_references(schema: Any) -> Any:
    """``schema`` with every value position also accepting a reference string.

    Each subschema ``S`` that describes a value becomes ``{"anyOf": [S', ref]}`` where
    ``S'`` has its own subschemas widened the same way. ``true``/``{}`` (any JSON) and
    non-schema values are returned as they are. Returns a new schema.
    """
    if schema is True or schema == {}:
        return schema
    if not isinstance(schema, Mapping):
        return schema
    inner = _widen_children(schema)
    return {"anyOf": [inner, _reference()]}


def _widen_children(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ONE and isinstance(value, (Mapping, bool)):
            out[key] = widen_to_references(value) if key not in ("not", "if", "propertyNames") \
                else copy.deepcopy(value)
        elif key in _MANY and isinstance(value, list):
            # The branches of a combinator are widened inside only: the wrapper around the
            # whole combinator already accepts a reference, and widening each branch too
            # would make a reference match several ``oneOf`` branches.
            out[key] = [_widen_children(v) if isinstance(v, Mapping) else v for v in value] \
                if key != "prefixItems" else [widen_to_references(v) for v in value]
        elif key in _MAP and isinstance(value, Mapping):
            if key in ("$defs", "definitions"):
                out[key] = {name: widen_to_references(v) for name, v in value.items()}
            else:
                out[key] = {name: widen_to_references(v) for name, v in value.items()}
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
    if isinstance(required, list):
        kept = [name for name in required if name in ordered or not name.startswith("_")]
        if kept:
            out["required"] = kept
        else:
            del out["required"]
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


# -- strict mode ---------------------------------------------------------------------------


def strict_schema(schema: Any) -> Any:
    """``schema`` rewritten for strict structured output (OpenAI's strict JSON schema).

    Every object schema that lists ``properties`` requires all of them and forbids other
    properties; a property that was optional becomes nullable (``anyOf [S, null]``), so
    the LLM writes ``null`` where it would have left the property out; every ``const``
    becomes a one-value ``enum``. Properties that were required keep their own
    nullability: making them nullable would invite answers that the solution schema then
    rejects. Object schemas without ``properties`` (free-form objects) are left open.
    Returns a new schema; :func:`drop_forced_nulls` is its inverse on solutions.
    """
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "const":
            out["enum"] = [copy.deepcopy(value)]
        elif key in _ONE and isinstance(value, Mapping):
            out[key] = strict_schema(value)
        elif key in _MANY and isinstance(value, list):
            out[key] = [strict_schema(v) for v in value]
        elif key in _MAP and isinstance(value, Mapping):
            out[key] = {name: strict_schema(v) for name, v in value.items()}
        else:
            out[key] = copy.deepcopy(value)
    props = out.get("properties")
    if isinstance(props, dict):
        required = set(schema.get("required", ()))
        for name, sub in props.items():
            if name not in required and not _allows_null(sub, schema):
                props[name] = _nullable(sub)
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def _nullable(schema: Any) -> Any:
    if isinstance(schema, Mapping) and set(schema) == {"anyOf"}:
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def _allows_null(schema: Any, root: Any, depth: int = 0) -> bool:
    """Whether ``schema`` may accept null (conservative: True when unsure)."""
    if depth > 32 or schema is True or schema == {}:
        return True  # any JSON, or a $ref chain too deep to follow: assume it may
    if not isinstance(schema, Mapping):
        return False
    if "const" in schema:
        return schema["const"] is None
    if "enum" in schema and isinstance(schema["enum"], list):
        return None in schema["enum"]
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null":
        return False
    if isinstance(kind, list) and "null" not in kind:
        return False
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return any(_allows_null(s, root, depth + 1) for s in schema[key])
    if isinstance(schema.get("allOf"), list):
        return all(_allows_null(s, root, depth + 1) for s in schema["allOf"])
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _local_ref(ref, root)
        return True if target is None else _allows_null(target, root, depth + 1)
    return True


def _local_ref(ref: str, root: Any) -> Any:
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def drop_forced_nulls(solution: Any, original_schema: Any) -> Any:
    """``solution`` without the nulls strict mode forced into it (the inverse of
    :func:`strict_schema` on values).

    A ``null`` is removed exactly where ``original_schema`` (the schema before
    :func:`strict_schema`) made the property optional and does not accept null; nulls the
    schema accepts stay, since null and MISSING differ. Under ``anyOf``/``oneOf`` the
    first branch the cleaned value validates against is followed. Returns a new value.
    """
    return _drop(solution, original_schema, original_schema, 0)


def _drop(value: Any, schema: Any, root: Any, depth: int) -> Any:
    if depth > 64 or not isinstance(schema, Mapping):
        return value
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _local_ref(ref, root)
        if target is not None:
            value = _drop(value, target, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            value = _drop_in_branches(value, branches, root, depth)
    if isinstance(schema.get("allOf"), list):
        for sub in schema["allOf"]:
            value = _drop(value, sub, root, depth + 1)
    if isinstance(value, dict):
        props = schema.get("properties")
        required = set(schema.get("required", ())) if isinstance(schema.get("required"), list) \
            else set()
        out: dict[str, Any] = {}
        for name, item in value.items():
            sub = props.get(name) if isinstance(props, Mapping) else None
            if sub is None:
                out[name] = item
            elif item is None and name not in required and not _allows_null(sub, root):
                continue  # strict mode forced this null into an optional property
            else:
                out[name] = _drop(item, sub, root, depth + 1)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        out_list = []
        for index, item in enumerate(value):
            if isinstance(prefix, list) and index < len(prefix):
                out_list.append(_drop(item, prefix[index], root, depth + 1))
            elif isinstance(items, Mapping):
                out_list.append(_drop(item, items, root, depth + 1))
            else:
                out_list.append(item)
        return out_list
    return value


def _drop_in_branches(value: Any, branches: list[Any], root: Any, depth: int) -> Any:
    if not isinstance(value, (dict, list)):
        return value
    for branch in branches:
        cleaned = _drop(value, branch, root, depth + 1)
        if _valid(cleaned, branch, root):
            return cleaned
    return value


def _valid(value: Any, schema: Any, root: Any) -> bool:
    if not isinstance(schema, Mapping):
        return bool(schema)
    # Local $refs resolve against the root, so validate with the root's $defs beside it.
    holder = {**schema}
    if isinstance(root, Mapping):
        for key in ("$defs", "definitions"):
            if key in root and key not in holder:
                holder[key] = root[key]
    return bool(Draft202012Validator(holder).is_valid(value))
