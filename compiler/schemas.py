"""What a JSON Schema says: the types at a path, and an example value.

:func:`schema_types_at` and :func:`types_compatible` answer the compiler's type questions
(what a value at a path inside a valid value can be); :func:`example_of` makes a
deterministic example for a schema (the dry run writes it for a call with no mock).
Schemas may be plain or frozen; nothing here raises on a schema it does not understand:
the answer is "unknown" (None, or MISSING).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pyrsistent import PMap, PVector

from obelisk.core.values import MISSING, json_type

__all__ = ["JSON_TYPES", "as_object_schema", "dig", "example_of", "schema_text", "schema_types_at",
           "types_compatible"]

#: The JSON types of JSON Schema.
JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


def dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...`` through plain objects, or None where a step is missing."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


# -- text ------------------------------------------------------------------------------


def schema_text(value: Any) -> str:
    """Compact JSON text of a plain or frozen value; frozen maps come out with sorted keys."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=_plain_container)


def _plain_container(value: Any) -> Any:
    # json.dumps calls this for what it cannot encode itself: frozen (or other) containers.
    if isinstance(value, PMap):
        return dict(sorted(value.items()))
    if isinstance(value, Mapping):
        return dict(value.items())
    if isinstance(value, (PVector, tuple)):
        return list(value)
    raise TypeError(f"a {type(value).__name__} is not JSON")


def as_object_schema(schema: Any) -> Any:
    """``true`` and ``false`` as object schemas, so that ``output_schema`` is a mapping."""
    if schema is True:
        return {}
    return {"not": {}} if schema is False else schema


# -- types -------------------------------------------------------------------------------

#: Deepest schema nesting :func:`schema_types_at` follows before answering "unknown".
_MAX_SCHEMA_DEPTH = 200


def schema_types_at(schema: Mapping[str, Any] | None,
                    path: Sequence[str | int]) -> frozenset[str] | None:
    """The JSON types a value at ``path`` can have inside a value valid against ``schema``.

    String segments follow ``properties`` (then ``additionalProperties``), integer
    segments ``prefixItems`` and ``items``; at the end, ``type``, ``const`` and ``enum``
    give the types, ``anyOf``/``oneOf`` the union of their branches and ``allOf`` the
    intersection. None means unknown: no schema, no type information, a ``$ref``, or a
    branch that says nothing. ``schema`` may be plain or frozen.
    """
    if schema is None:
        return None
    try:
        return _types_at(schema, tuple(path), 0)
    except RecursionError:
        return None


def _types_at(schema: Any, path: tuple[str | int, ...], depth: int) -> frozenset[str] | None:
    if not isinstance(schema, Mapping) or depth > _MAX_SCHEMA_DEPTH:
        return None  # true, false, or too deep: nothing said here
    if "$ref" in schema or "$dynamicRef" in schema:
        return None
    known: list[frozenset[str] | None] = [
        _own_types(schema) if not path else _types_at(_child(schema, path[0]), path[1:], depth + 1)
    ]
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, Sequence) and not isinstance(branches, str) and branches:
            union: frozenset[str] | None = frozenset()
            for branch in branches:
                types = _types_at(branch, path, depth + 1)
                if types is None:
                    union = None
                    break
                union = union | types if union is not None else None
            known.append(union)
    all_of = schema.get("allOf")
    if isinstance(all_of, Sequence) and not isinstance(all_of, str):
        known.extend(_types_at(branch, path, depth + 1) for branch in all_of)
    result: frozenset[str] | None = None
    for types in known:
        if types is not None:
            result = types if result is None else _meet(result, types)
    return result


def _own_types(schema: Mapping[str, Any]) -> frozenset[str] | None:
    known: list[frozenset[str]] = []
    declared = schema.get("type")
    if isinstance(declared, str):
        known.append(frozenset({declared}) & JSON_TYPES)
    elif isinstance(declared, Sequence) and declared:
        known.append(frozenset(t for t in declared if isinstance(t, str)) & JSON_TYPES)
    if "const" in schema:
        known.append(frozenset({json_type(schema["const"])}))
    enum = schema.get("enum")
    if isinstance(enum, Sequence) and not isinstance(enum, str):
        known.append(frozenset(json_type(v) for v in enum))
    if not known:
        return None
    result = known[0]
    for types in known[1:]:
        result = _meet(result, types)
    return result


def _child(schema: Mapping[str, Any], segment: str | int) -> Any:
    """The subschema for one path segment, or None when the schema does not say."""
    if isinstance(segment, int) and not isinstance(segment, bool):
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, Sequence) and not isinstance(items, (str, Mapping)):
            prefix, items = items, schema.get("additionalItems")  # draft-07 tuple form
        if isinstance(prefix, Sequence) and not isinstance(prefix, str) and prefix:
            if segment < 0:
                return None  # which element -1 is depends on the length
            if segment < len(prefix):
                return prefix[segment]
        if items is not None:
            return items
        if segment < 0:
            return None
        segment = str(segment)  # on an object an index reads the key spelled as it
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and segment in properties:
        return properties[segment]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping) and patterns:
        return None  # which pattern applies is not worth guessing
    return schema.get("additionalProperties")


def _meet(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """Types a value can have when it must have a type in ``a`` and one in ``b``."""
    both = set(a & b)
    if ("integer" in a and "number" in b) or ("number" in a and "integer" in b):
        both.add("integer")
    return frozenset(both)


def types_compatible(produced: frozenset[str], accepted: frozenset[str]) -> bool:
    """True when some value of a produced type can satisfy some accepted type.

    ``integer`` and ``number`` meet both ways: every integer is a number, and a value
    typed ``number`` may be whole (JSON Schema counts 1.0 as an integer).
    """
    return any(p == a or {p, a} == {"integer", "number"} for p in produced for a in accepted)


# -- examples ----------------------------------------------------------------------------

_FORMATS = {"date-time": "1970-01-01T00:00:00Z", "date": "1970-01-01", "time": "00:00:00Z",
            "email": "user@example.com", "uri": "https://example.com/", "uuid":
            "00000000-0000-0000-0000-000000000000", "hostname": "example.com"}
_ANYTHING = object()


def example_of(schema: Any, depth: int = 0, root: Any = None) -> Any:
    """A deterministic example value for a JSON Schema, or MISSING when none can be made.

    ``const``, then the first of ``enum`` / ``examples``, then ``default``; a local
    ``$ref`` (``#/...``) is followed; ``anyOf``/``oneOf``/``allOf`` take their first
    branch. Otherwise by ``type`` (the first listed that is not null): an object with
    every property that can be made (a required one that cannot makes the object
    MISSING; one whose schema allows anything is null), an array of ``minItems``
    examples, a string within ``minLength``/``maxLength`` (or an example of its
    ``format``), a number within the bounds and ``multipleOf``, ``false``, ``null``. A
    schema that says nothing (``{}``) has no example. ``pattern`` is not followed, so
    the dry run still checks the example against the schema when it is written.
    """
    value = _example(schema, depth, schema if root is None else root)
    return MISSING if value is _ANYTHING else value


def _example(schema: Any, depth: int, root: Any) -> Any:
    if depth > 32 or not isinstance(schema, Mapping):
        return _ANYTHING if schema is True else MISSING
    if "const" in schema:
        return schema["const"]
    for key in ("enum", "examples"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema[key][0]
    if "default" in schema:
        return schema["default"]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _example(_local_ref(root, ref), depth + 1, root)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _example(schema[key][0], depth + 1, root)
    types = schema.get("type")
    if isinstance(types, list):
        types = next((t for t in types if t != "null"), types[0] if types else None)
    if types is None and ("properties" in schema or "required" in schema):
        types = "object"
    match types:
        case "object":
            return _object_example(schema, depth, root)
        case "array":
            count = schema.get("minItems", 0)
            count = count if isinstance(count, int) else 0
            if not count:
                return []
            item = _example(schema.get("items", {}), depth + 1, root)
            if item is MISSING:
                return MISSING
            return [None if item is _ANYTHING else item] * count
        case "string":
            return _string_example(schema)
        case "integer" | "number":
            return _number_example(schema, types == "integer")
        case "boolean":
            return False
        case "null":
            return None
    return _ANYTHING if not (set(schema) - {"description", "title", "$comment"}) else MISSING


def _local_ref(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _object_example(schema: Mapping[str, Any], depth: int, root: Any) -> Any:
    props = schema.get("properties", {})
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required", [])
    required = required if isinstance(required, list) else []
    out: dict[str, Any] = {}
    for name, sub in props.items():
        value = _example(sub, depth + 1, root)
        if value is MISSING:
            if name in required:
                return MISSING
            continue
        out[name] = None if value is _ANYTHING else value
    for name in required:
        if isinstance(name, str) and name not in out:
            out[name] = None  # required, but the schema says nothing about it
    return out


def _string_example(schema: Mapping[str, Any]) -> str:
    fmt = schema.get("format")
    text = _FORMATS.get(fmt, "string") if isinstance(fmt, str) else "string"
    low = schema.get("minLength", 0)
    high = schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        text += "x" * (low - len(text))
    if isinstance(high, int) and len(text) > high:
        text = text[:max(high, low if isinstance(low, int) else 0)]
    return text


def _number_example(schema: Mapping[str, Any], integer: bool) -> Any:
    def num(key: str) -> float | None:
        value = schema.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    step = 1.0 if integer else 0.5
    low, high = num("minimum"), num("maximum")
    xlow, xhigh = num("exclusiveMinimum"), num("exclusiveMaximum")
    if xlow is not None:
        low = max(low if low is not None else -math.inf, math.floor(xlow + 1) if integer else xlow + step)
    if xhigh is not None:
        high = min(high if high is not None else math.inf, math.ceil(xhigh - 1) if integer else xhigh - step)
    value = 0.0
    if low is not None and value < low:
        value = math.ceil(low) if integer else low
    elif high is not None and value > high:
        value = math.floor(high) if integer else high
    multiple = num("multipleOf")
    if multiple and multiple > 0 and value % multiple:
        value = math.ceil(value / multiple) * multiple
    return int(value) if integer or value == int(value) else value
