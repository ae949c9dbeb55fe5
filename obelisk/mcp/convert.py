"""An MCP tool as an obelisk tool: its schema, and the policy its annotations set.

Pure: a ``tools/list`` entry (plain JSON) in, an :class:`McpTool` out. The tool's
``inputSchema`` becomes the obelisk tool's parameters (``$ref`` into ``$defs`` inlined, a
root that is not an object refused), its ``outputSchema`` its ``_output`` (so the
compiler type-checks references into results and a dry run mocks from it), its
``description`` kept. Its annotations give a :class:`Policy` (the MCP spec's defaults for
those missing; the user's overrides over both): a destructive tool asks for approval, a
tool that is not idempotent is at-most-once on resume (``x-obelisk-at-most-once``).
The hints are trusted for nothing else: the spec says a server's hints are untrusted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from obelisk.compiler.tools import Tool
from obelisk.core.errors import ObeliskError, ToolError

__all__ = ["AT_MOST_ONCE", "McpToolError", "McpTool", "Policy", "RESERVED", "tool_of"]

#: The schema keyword that marks a tool whose calls are never run twice on resume.
AT_MOST_ONCE = "x-obelisk-at-most-once"

#: Meta-properties obelisk gives a meaning to: an MCP parameter may not take their names.
RESERVED = frozenset({"_tool", "_activity", "_output", "_outputPath", "_outputMethod",
                      "_instance", "_scopes", "_reasoningForCall", "_idempotencyKey",
                      "_delegate"})



class McpToolError(ObeliskError, ValueError):
    """An MCP tool cannot be an obelisk tool; the message names the server and the tool."""


@frozen
class Policy:
    """What obelisk does with a tool, from its annotations: ``read_only`` (shown in
    graphs), ``destructive`` (approval before each call; refused in a run that cannot ask
    unless destructive tools are allowed), ``at_most_once`` (not idempotent: never run
    again on resume). ``hints`` are the annotations used, ``source`` says where each came
    from (``server``, ``default`` or ``user``)."""

    read_only: bool
    destructive: bool
    at_most_once: bool
    open_world: bool
    hints: tuple[tuple[str, bool], ...]
    source: tuple[tuple[str, str], ...]

    def to_json(self) -> dict[str, Any]:
        """The policy as plain JSON."""
        return {"readOnly": self.read_only, "destructive": self.destructive,
                "atMostOnce": self.at_most_once, "openWorld": self.open_world,
                "hints": {name: {"value": value, "from": dict(self.source)[name]}
                          for name, value in self.hints}}


#: The MCP spec's defaults for a tool without annotations.
DEFAULT_HINTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False,
                 "openWorldHint": True}


def policy_of(annotations: Mapping[str, Any] | None,
              overrides: Mapping[str, bool] | None = None) -> Policy:
    """The policy of a tool with these annotations (None: none), ``overrides`` first."""
    given = annotations or {}
    hints, source = {}, {}
    for name, default in DEFAULT_HINTS.items():
        if overrides is not None and name in overrides:
            hints[name], source[name] = bool(overrides[name]), "user"
        elif isinstance(given.get(name), bool):
            hints[name], source[name] = given[name], "server"
        else:
            hints[name], source[name] = default, "default"
    read_only = hints["readOnlyHint"]
    # destructiveHint and idempotentHint mean something only for a tool that writes.
    return Policy(read_only=read_only, destructive=not read_only and hints["destructiveHint"],
                  at_most_once=not read_only and not hints["idempotentHint"],
                  open_world=hints["openWorldHint"], hints=tuple(hints.items()),
                  source=tuple(source.items()))


@frozen
class McpTool:
    """One MCP tool as obelisk sees it: ``name`` (prefixed), the server's ``label``, the
    tool's ``remote`` name, the obelisk ``schema`` (plain JSON), the ``policy``, and the
    ``input_schema`` and ``output_schema`` as the server sent them (to notice a change)."""

    name: str
    server: str
    remote: str
    schema: dict[str, Any]
    policy: Policy
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None

    @property
    def signature(self) -> str:
        """The tool's schemas as canonical JSON: equal when the tool did not change."""
        return json.dumps([self.input_schema, self.output_schema], sort_keys=True)


def tool_of(entry: Mapping[str, Any], server: str, prefix: str | None,
            overrides: Mapping[str, bool] | None = None) -> McpTool:
    """The obelisk tool for one ``tools/list`` entry of ``server`` (its label), named
    ``prefix.name`` (or ``name``); raises :class:`McpToolError` naming both."""
    remote = entry.get("name")
    if not isinstance(remote, str) or not remote:
        raise McpToolError(f"server {server}: a tool without a name")
    name = f"{prefix}.{remote}" if prefix else remote
    where = f"server {server}: tool {remote!r}"
    inputs = entry.get("inputSchema")
    if not isinstance(inputs, Mapping):
        raise McpToolError(f"{where}: inputSchema is not a JSON object")
    outputs = entry.get("outputSchema")
    if outputs is not None and not isinstance(outputs, Mapping):
        raise McpToolError(f"{where}: outputSchema is not a JSON object")
    params = _inlined(dict(inputs), where)
    kind = params.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        raise McpToolError(f"{where}: its inputSchema has type {json.dumps(kind)}; an "
                           "obelisk tool takes an object of parameters, so it is not offered")
    properties = params.get("properties", {})
    if not isinstance(properties, Mapping):
        raise McpToolError(f"{where}: inputSchema.properties is not an object")
    clash = sorted(RESERVED & set(properties))
    if clash:
        raise McpToolError(f"{where}: its parameter {clash[0]!r} has the name of an obelisk "
                           "meta-property, so it is not offered")
    policy = policy_of(entry.get("annotations") if isinstance(entry.get("annotations"),
                                                              Mapping) else None, overrides)
    schema = _schema(params, name, entry, outputs, where, policy)
    try:
        Tool.of(schema)
    except ToolError as exc:
        raise McpToolError(f"{where}: not a usable schema: {exc.reason}"
                           + (f" (at {exc.pointer})" if exc.pointer else "")) from None
    return McpTool(name, server, remote, schema, policy, dict(inputs),
                   None if outputs is None else dict(outputs))


def _schema(params: dict[str, Any], name: str, entry: Mapping[str, Any],
            outputs: Mapping[str, Any] | None, where: str, policy: Policy) -> dict[str, Any]:
    """The obelisk tool: the parameters' schema with ``_tool`` first and ``_output``."""
    schema: dict[str, Any] = {"type": "object"}
    description = entry.get("description") or entry.get("title")
    if isinstance(description, str) and description:
        schema["description"] = description
    properties: dict[str, Any] = {"_tool": {"type": "string", "const": name}}
    properties.update(params.get("properties", {}))
    if outputs is not None:
        properties["_output"] = _inlined(dict(outputs), f"{where}: outputSchema")
    for key, value in params.items():
        if key not in ("type", "properties", "$defs", "definitions", "$schema", "title",
                       "description", "$id"):
            schema[key] = value
    schema["properties"] = properties
    if policy.at_most_once:
        schema[AT_MOST_ONCE] = True
    return schema


def _inlined(schema: dict[str, Any], where: str) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` (``#/$defs/...``, ``#/definitions/...``)
    replaced by what it names; a reference elsewhere is refused. A reference met again
    inside its own expansion (a recursive schema) becomes ``{}``, which accepts anything:
    the check is loosened there, never wrong."""
    root = schema

    def walk(node: Any, expanding: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [walk(item, expanding) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in expanding:
                return {}
            resolved = walk(_target(root, ref, where), expanding | {ref})
            rest = {k: v for k, v in node.items() if k not in ("$ref", "$defs", "definitions")}
            return {"allOf": [resolved, walk(rest, expanding)]} if rest else resolved
        return {key: (value if key in ("const", "enum", "default", "examples")
                      else walk(value, expanding))
                for key, value in node.items() if key not in ("$defs", "definitions")}

    result: dict[str, Any] = walk(schema, frozenset())
    return result


def _target(root: dict[str, Any], ref: str, where: str) -> Any:
    if not ref.startswith("#"):
        raise McpToolError(f"{where}: $ref {ref!r} points outside the schema; obelisk "
                           "never fetches schemas")
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise McpToolError(f"{where}: $ref {ref!r} does not resolve")
    return node
