"""Plan files (CONFORMANCE.md "Plan files"): one JSON object, or a bare array of calls.

The plan is the ``plan`` field, else the last ``{"type": "plan", "plan": [...]}`` message
in the context; the tools are the ``tools`` field plus every ``{"type": "tool", "tool":
{...}}`` message in the context. Every problem is an :class:`InputError` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from obelisk.compiler.hints import closest
from obelisk.jsonio import InputError, load_json

PLAN_FILE_FIELDS = frozenset(
    {"id", "description", "context", "tools", "plan", "instances", "mocks"})


@frozen
class PlanFile:
    """What a plan file holds, ready for the compiler and the interpreters."""

    name: str
    plan: list[Any]
    context: list[Any]
    tools: list[Any]
    instances: bool
    mocks: dict[str, Any]


def read_plan_file(path: str) -> PlanFile:
    """Read and check a plan file (``-`` for standard input)."""
    return plan_file_of(load_json(path), "standard input" if path == "-" else path)


def plan_file_of(data: Any, name: str, *, extra_fields: frozenset[str] = frozenset()) -> PlanFile:
    """A PlanFile from parsed JSON; ``extra_fields`` are tolerated (a vector's ``expect``)."""
    if isinstance(data, list):
        return PlanFile(name, data, [], [], False, {})
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
    for index, message in enumerate(context):
        if not isinstance(message, Mapping):
            continue  # the context itself reports malformed messages
        if message.get("type") == "tool":
            if "tool" not in message:
                raise InputError(f'{name}: context message {index} has type "tool" but no "tool"')
            tools.append(message["tool"])
        elif message.get("type") == "plan" and "plan" not in data:
            plan = message.get("plan")
    if plan is None:
        raise InputError(f'{name}: no plan: give a "plan" field, or a {{"type": "plan", '
                         f'"plan": [...]}} message in the context')
    if not isinstance(plan, list):
        raise InputError(f'{name}: the plan must be an array of calls, got {type(plan).__name__}')
    instances = data.get("instances", False)
    if not isinstance(instances, bool):
        raise InputError(f'{name}: "instances" must be true or false')
    mocks = data.get("mocks", {})
    if not isinstance(mocks, Mapping):
        raise InputError(f'{name}: "mocks" must be an object of tool name -> mock')
    return PlanFile(name, plan, list(context), tools, instances, dict(mocks))
