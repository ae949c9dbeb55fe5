"""Strict structured output, and its inverse on answers.

Some providers (OpenAI's strict JSON schema) need every property required and no
additional properties. :func:`strict_schema` rewrites a schema that way;
:func:`drop_forced_nulls` removes from an answer the nulls that rewrite forced into it,
since null and MISSING differ. Pure functions over plain JSON. (They live with the
adapters, which apply them; :mod:`obelisk.agent` lists them too.)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from obelisk.compiler.patterns import linear_validator

__all__ = ["SUBSCHEMA_KEYWORDS", "drop_forced_nulls", "strict_schema"]

# Keywords whose value is one subschema, a list of subschemas, or a map of them.
ONE = ("items", "additionalProperties", "not", "contains", "if", "then", "else",
       "propertyNames", "unevaluatedItems", "unevaluatedProperties")
MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
#: Every keyword whose value holds subschemas.
SUBSCHEMA_KEYWORDS = ONE + MANY + MAP


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
        elif key in ONE and isinstance(value, Mapping):
            out[key] = strict_schema(value)
        elif key in MANY and isinstance(value, list):
            out[key] = [strict_schema(v) for v in value]
        elif key in MAP and isinstance(value, Mapping):
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
    return bool(linear_validator()(holder).is_valid(value))
