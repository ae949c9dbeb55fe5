"""Schema composition for the LLM: the ``calls`` array a request carries, from the tools.

One ``anyOf`` branch per tool, meta-fields first, the activity fixed, a reasoning field
added. The result is plain JSON and the same for the same arguments.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any

# tools.py re-exports this module's names at its end, so import only names it has
# defined by then.
from obelisk.compiler.tools import Tool, ToolRegistry, resolve_activity

__all__ = ["LEADING_META", "REASONING_PROPERTY", "compose_calls_schema"]

#: Meta-fields that composition puts first, in this order (then the tool's other meta-fields).
LEADING_META = ("_tool", "_activity", "_reasoningForCall")

#: The property composition adds to every tool that does not declare it.
REASONING_PROPERTY: Mapping[str, str] = MappingProxyType(
    {"type": "string", "description": "Why the agent makes this call."})


def compose_calls_schema(registry: ToolRegistry,
                         activity_names: Collection[str] = ()) -> dict[str, Any]:
    """The JSON Schema of an LLM's ``calls`` array: one ``anyOf`` branch per tool, in order.

    Each branch is the tool's schema with its meta-fields first (``_tool``, ``_activity``,
    ``_reasoningForCall``, then the tool's other meta-fields), ``_activity`` fixed to the
    resolved activity, ``_reasoningForCall`` added, and ``_output`` no longer required.
    The result is plain JSON and the same for the same arguments. With no tools, the
    array must be empty.
    """
    branches = [_compose_tool(tool, activity_names) for tool in registry]
    items: dict[str, Any] = (
        {"type": "array", "items": {"anyOf": branches}} if branches
        else {"type": "array", "maxItems": 0})
    return {"type": "object", "properties": {"calls": items}, "required": ["calls"]}


def _compose_tool(tool: Tool, activity_names: Collection[str]) -> dict[str, Any]:
    schema = tool.to_json()
    schema.pop("_activity", None)  # now stated as properties._activity
    props: dict[str, Any] = schema.get("properties", {})
    fixed = {
        "_activity": {"type": "string", "const": resolve_activity(tool, activity_names)},
        "_reasoningForCall": props.get("_reasoningForCall", dict(REASONING_PROPERTY)),
    }
    ordered: dict[str, Any] = {}
    for key in LEADING_META:
        if key in props or key in fixed:
            ordered[key] = fixed.get(key, props.get(key))
    for key in tool.meta_fields:
        ordered.setdefault(key, props[key])
    for key in tool.parameters:
        ordered[key] = props[key]
    schema["properties"] = ordered
    required = schema.get("required")
    if isinstance(required, list) and "_output" in required:
        required = [name for name in required if name != "_output"]
        if required:
            schema["required"] = required
        else:
            del schema["required"]
    return schema


