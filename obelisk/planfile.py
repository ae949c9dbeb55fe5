"""Plan files (docs/plan-files.md): one JSON object, or a bare array of calls.

The plan is the ``plan`` field, else the last ``{"type": "plan", "plan": [...]}`` message
in the context; the tools are the ``tools`` field plus every ``{"type": "tool", "tool":
{...}}`` message in the context. Every problem is an :class:`InputError` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import evolve, frozen

from obelisk.compiler.hints import closest
from obelisk.jsonio import InputError, parse_json, read_text

PLAN_FILE_FIELDS = frozenset(
    {"id", "description", "context", "tools", "plan", "instances", "mocks", "mcp"})


@frozen
class PlanFile:
    """What a plan file holds, ready for the compiler and the interpreters."""

    name: str
    plan: list[Any]
    context: list[Any]
    tools: list[Any]
    instances: bool
    mocks: dict[str, Any]
    #: MCP servers whose tools the plan uses (``mcpServers`` JSON; read by the command
    #: line's ``--mcp`` support), as written; None when the file names none.
    mcp: Any = None
    #: The file's text, kept to find the positions of what is reported (None: not read
    #: from a file), and the JSON Pointer of the plan array in it.
    text: str | None = None
    plan_pointer: str = "/plan"


def read_plan_file(path: str) -> PlanFile:
    """Read and check a plan file (``-`` for standard input)."""
    name = "standard input" if path == "-" else path
    text = read_text(path)
    return evolve(plan_file_of(parse_json(text, name), name), text=text)


def plan_file_of(data: Any, name: str, *, extra_fields: frozenset[str] = frozenset()) -> PlanFile:
    """A PlanFile from parsed JSON; ``extra_fields`` are tolerated (a vector's ``expect``)."""
    if isinstance(data, list):
        return PlanFile(name, data, [], [], False, {}, plan_pointer="")
    if not isinstance(data, Mapping):
        raise InputError(f"{name}: a plan file is a JSON object (or an array of calls), "
                         f"got {type(data).__name__}")
    unknown = sorted(k for k in data if k not in PLAN_FILE_FIELDS | extra_fields)
    if unknown:
        named = [f"{k!r} (did you mean {near!r}?)" if (near := closest(k, PLAN_FILE_FIELDS))
                 else repr(k) for k in unknown]
        raise InputError(f"{name}: unknown field(s) {', '.join(named)}; a plan file "
                         f"has {', '.join(sorted(PLAN_FILE_FIELDS))}")
    context = data.get("context", [])
    if not isinstance(context, list):
        raise InputError(f'{name}: "context" must be an array of messages')
    tools = data.get("tools", [])
    if not isinstance(tools, list):
        raise InputError(f'{name}: "tools" must be an array of tool schemas')
    tools = list(tools)
    plan: Any = data.get("plan")
    plan_pointer = "/plan"
    for index, message in enumerate(context):
        if not isinstance(message, Mapping):
            continue  # the context itself reports malformed messages
        if message.get("type") == "tool":
            if "tool" not in message:
                raise InputError(f'{name}: context message {index} has type "tool" but no "tool"')
            tools.append(message["tool"])
        elif message.get("type") == "plan" and "plan" not in data:
            plan = message.get("plan")
            plan_pointer = f"/context/{index}/plan"
    if plan is None:
        raise InputError(f'{name}: no plan: give a "plan" field, or a {{"type": "plan", '
                         f'"plan": [...]}} message in the context (an agent file has '
                         f'"output_schema", "mode" or "max_ticks")')
    if not isinstance(plan, list):
        raise InputError(f'{name}: the plan must be an array of calls, got {type(plan).__name__}')
    instances = data.get("instances", False)
    if not isinstance(instances, bool):
        raise InputError(f'{name}: "instances" must be true or false')
    mocks = data.get("mocks", {})
    if not isinstance(mocks, Mapping):
        raise InputError(f'{name}: "mocks" must be an object of tool name -> mock')
    return PlanFile(name, plan, list(context), tools, instances, dict(mocks),
                    mcp=data.get("mcp"), plan_pointer=plan_pointer)


_MESSAGE = {
    "type": "object",
    "description": "A context message: its type names a data kind (state, input, ...) or "
                   "a protocol message (tool, plan, error, approval, system, ...).",
    "required": ["type"],
    "properties": {"type": {"type": "string"}, "_instance": {"type": "string"}},
}
_CALL = {
    "type": "object",
    "description": "A call: the tool, its parameters (literals or expressions such as "
                   "\"†state.x\"), and where its result goes.",
    "required": ["_tool"],
    "properties": {
        "_tool": {"type": "string", "description": "the tool (or activity) to call"},
        "_outputPath": {"type": "string",
                        "description": "where the result goes: \"†state.x\", or "
                                       "alternatives \"†state.ok || †state.error\""},
        "_outputMethod": {"enum": ["set", "merge", "assign", "push", "concat"]},
        "_instance": {"type": "string"},
        "_scopes": {"type": "array", "items": {"type": "string"}},
        "_activity": {"type": "string"},
    },
}

#: The JSON Schema of a plan file (``obelisk schema --plan-file``): editors that read
#: JSON Schema complete and check plan files with it.
PLAN_FILE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "obelisk plan file",
    "description": "A plan to validate, draw, dry-run or run: the calls, and the context "
                   "and tools they are checked against. A bare array of calls is a plan "
                   "file too.",
    "oneOf": [
        {"type": "array", "items": _CALL},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "id": {"type": "string", "description": "a name for the plan"},
                "description": {"type": "string"},
                "context": {"type": "array", "items": _MESSAGE,
                            "description": "messages; {\"type\": \"tool\"} messages add "
                                           "tools, the last {\"type\": \"plan\"} message is "
                                           "the plan when there is no \"plan\" field"},
                "tools": {"type": "array", "items": {"type": "object"},
                          "description": "tool schemas; with none at all, any _tool is "
                                         "accepted"},
                "plan": {"type": "array", "items": _CALL},
                "instances": {"type": "boolean",
                              "description": "run the plan once for every instance"},
                "mocks": {"type": "object", "additionalProperties": {"type": "object"},
                          "description": "what each tool returns in a dry run, by tool "
                                         "name"},
                "mcp": {"type": "object",
                        "description": "MCP servers whose tools the plan calls: the "
                                       "mcpServers object of desktop MCP clients (name -> "
                                       "{command, args, env} or {url, headers})"},
            },
        },
    ],
}
