"""The vector pack that ships inside the package, its JSON Schema, and ``--export``.

The pack is package data (``obelisk/kit/vectors/*.json``), versioned with obelisk.
:func:`export` writes it to a folder with ``vector.schema.json`` (Draft 2020-12, the
vector file format) and ``PROTOCOL.md`` (the adapter protocol), so that an implementer
who never installs Python tools can still read and run it.
"""

from __future__ import annotations

import json
import os
import shutil
from importlib import resources
from typing import Any

from obelisk import __version__
from obelisk.jsonio import InputError

SCHEMA_ID = "https://obelisk.invalid/schemas/conformance-vector.schema.json"


def pack_dir() -> str:
    """The folder of the bundled vectors (a real folder: the package is installed on disk)."""
    return str(resources.files("obelisk.kit") / "vectors")


def protocol_text() -> str:
    """The adapter protocol, as shipped in ``PROTOCOL.md``."""
    return (resources.files("obelisk.kit") / "PROTOCOL.md").read_text(encoding="utf-8")


def pack_files() -> list[str]:
    """The bundled vector files, sorted."""
    folder = pack_dir()
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.endswith(".json"))


def export(target: str) -> list[str]:
    """Write the pack, its schema and the protocol under ``target``; returns the paths.

    Raises :class:`~obelisk.jsonio.InputError` when ``target`` cannot be written.
    """
    written = []
    try:
        os.makedirs(os.path.join(target, "vectors"), exist_ok=True)
        for path in pack_files():
            dest = os.path.join(target, "vectors", os.path.basename(path))
            shutil.copyfile(path, dest)
            written.append(dest)
        schema_path = os.path.join(target, "vector.schema.json")
        with open(schema_path, "w", encoding="utf-8") as handle:
            json.dump(vector_schema(), handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        protocol_path = os.path.join(target, "PROTOCOL.md")
        with open(protocol_path, "w", encoding="utf-8") as handle:
            handle.write(protocol_text())
    except OSError as exc:
        raise InputError(f"cannot write the pack to {target}: {exc.strerror or exc}") from None
    return [*written, schema_path, protocol_path]


# -- the JSON Schema of a vector file --------------------------------------------------------

_CALL_ID = {"oneOf": [
    {"type": "integer", "minimum": 0},
    {"type": "array", "prefixItems": [{"type": "integer", "minimum": 0}, {"type": "string"}],
     "items": False, "minItems": 2},
]}
_MATCHER = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "severity": {"enum": ["error", "warning", "info"]},
        "call": {"type": ["integer", "null"], "minimum": 0},
        "calls": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "pointer": {"type": ["string", "null"]},
    },
    "additionalProperties": False,
}
_CASE = {
    "type": "object",
    "description": "One expression evaluated against a context: exactly one of value, "
                   "missing (the expression is MISSING) or error.",
    "properties": {
        "ref": {"type": "string"},
        "instance": {"type": "string"},
        "value": True,
        "missing": {"const": True},
        "error": {"enum": ["syntax", "write"]},
    },
    "required": ["ref"],
    "oneOf": [{"required": ["value"]}, {"required": ["missing"]}, {"required": ["error"]}],
    "additionalProperties": False,
}
_MOCK: dict[str, Any] = {
    "type": "object",
    "description": "What a tool returns when the dry run calls it.",
    "properties": {
        "return": True,
        "raise": {"type": "object", "properties": {
            "type": {"type": "string"}, "message": {"type": "string"}, "data": True},
            "required": ["type"], "additionalProperties": False},
        "branch": {"type": "string", "pattern": "^†"},
        "value": True,
        "echo": {"const": True},
        "echo_scopes": {"const": True},
        "sequence": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/mock"}},
        "by_instance": {"type": "object", "additionalProperties": {"$ref": "#/$defs/mock"}},
        "delay_ms": {"type": "number", "minimum": 0},
    },
    "oneOf": [{"required": [form]} for form in
              ("return", "raise", "branch", "echo", "echo_scopes", "sequence", "by_instance")],
    "additionalProperties": False,
}
_PLAIN_EXPECT = {
    "type": "object",
    "properties": {
        "diagnostics": {"type": "array", "items": {"$ref": "#/$defs/matcher"}},
        "only_listed_errors": {"type": "boolean"},
        "not_reported": {"type": "array", "items": {"$ref": "#/$defs/matcher"}},
        "values": {"type": "array", "items": {"$ref": "#/$defs/case"}},
        "executed": {"type": "array", "items": {"$ref": "#/$defs/call_id"}},
        "skipped": {"type": "array", "items": {"$ref": "#/$defs/call_id"}},
        "failed": {"type": "array", "items": {"$ref": "#/$defs/call_id"}},
        "errors": {"type": "array", "items": {
            "type": "object",
            "properties": {"call": {"type": "integer", "minimum": 0},
                           "instance": {"type": "string"}, "type": {"type": "string"}},
            "required": ["call", "type"], "additionalProperties": False}},
    },
    "additionalProperties": False,
}
_AGENT_EXPECT = {
    "type": "object",
    "properties": {
        "status": {"enum": ["completed", "max_ticks", "stalled", "failed"]},
        "ticks": {"type": "integer", "minimum": 0},
        "output": True,
        "values": {"type": "array", "items": {"$ref": "#/$defs/case"}},
        "errors": {"type": "array", "items": {
            "type": "object",
            "properties": {"tick": {"type": "integer", "minimum": 1},
                           "call": {"type": "integer", "minimum": 0},
                           "instance": {"type": "string"}, "type": {"type": "string"}},
            "required": ["tick", "type"], "additionalProperties": False}},
    },
    "additionalProperties": False,
}
_COMMON = {
    "id": {"type": "string", "minLength": 1},
    "description": {"type": "string"},
    "context": {"type": "array", "items": {"type": "object"},
                "description": "The messages, in order."},
    "tools": {"type": "array", "items": {"type": "object"},
              "description": "Tool schemas; when absent, any _tool is accepted."},
    "mocks": {"type": "object", "additionalProperties": {"$ref": "#/$defs/mock"}},
}


#: A plain vector: resolve cases, or a plan's diagnostics and dry run.
_PLAIN_VECTOR = {
    "type": "object",
    "properties": {
        **_COMMON,
        "cases": {"type": "array", "items": {"$ref": "#/$defs/case"}},
        "plan": {"type": "array", "description": "The calls of the plan."},
        "instances": {"type": "boolean"},
        "expect": {"$ref": "#/$defs/plain_expect"},
    },
    "required": ["id"],
    "anyOf": [{"required": ["cases"]}, {"required": ["plan"]}],
    "dependentRequired": {"plan": ["expect"]},
    "additionalProperties": False,
}

#: An agent vector: the loop with a scripted LLM.
_AGENT_VECTOR = {
    "type": "object",
    "properties": {
        **_COMMON,
        "output_schema": {"type": "object"},
        "mode": {"enum": ["eager", "lazy"]},
        "max_ticks": {"type": "integer", "minimum": 1},
        # Each item is the scripted LLM's answer for one tick, valid or not: a vector
        # may script a malformed answer to test InvalidSolution.
        "solutions": {"type": "array"},
        "latent": {"type": "object", "additionalProperties": {"type": "array"}},
        # Saved requests for _delegate, by their path under the delegate root.
        "requests": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["context"],
            "properties": {"context": {"type": "array"}, "tools": {"type": "array"},
                           "max_ticks": {"type": "integer", "minimum": 1}}}},
        "max_delegate_depth": {"type": "integer", "minimum": 0},
        # Lazy mode: the reviewer's verdict on each compiled plan, in order.
        "reviews": {"type": "array", "items": {"oneOf": [
            {"const": "approve"},
            {"type": "object", "required": ["reject"], "additionalProperties": False,
             "properties": {"reject": {"type": "string"}}},
            {"type": "object", "required": ["edit"], "additionalProperties": False,
             "properties": {"edit": {"type": "array"}}}]}},
        "expect": {"$ref": "#/$defs/agent_expect"},
    },
    "required": ["id", "solutions", "expect"],
    "additionalProperties": False,
}


def vector_schema() -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) of a vector file: one vector or an array of them."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"obelisk conformance vector file (obelisk {__version__})",
        "description": "One vector object, or an array of them. A vector states what any "
                       "implementation must do with a context: resolve cases, a plan's "
                       "diagnostics and dry run, or an agent loop with a scripted LLM.",
        "oneOf": [{"$ref": "#/$defs/vector"},
                  {"type": "array", "items": {"$ref": "#/$defs/vector"}}],
        "$defs": {
            "vector": {"if": {"type": "object", "required": ["solutions"]},
                       "then": {"$ref": "#/$defs/agent_vector"},
                       "else": {"$ref": "#/$defs/plain_vector"}},
            "plain_vector": _PLAIN_VECTOR,
            "agent_vector": _AGENT_VECTOR,
            "plain_expect": _PLAIN_EXPECT,
            "agent_expect": _AGENT_EXPECT,
            "case": _CASE,
            "matcher": _MATCHER,
            "call_id": _CALL_ID,
            "mock": _MOCK,
        },
    }
