"""Agent files (docs/agent.md): read and checked for ``obelisk agent``, ``request``,
``validate`` and ``schema``, and told apart from plan files.

An agent file is one JSON object: ``context``, ``tools``, ``output_schema``, and
optionally ``mode``, ``max_ticks``, ``description``, ``mocks`` and ``mcp``. A file is read
as an agent file when it has a field only agent files have (``output_schema``, ``mode``,
``max_ticks``); any other file is a plan file.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from obelisk.jsonio import InputError, load_json, parse_json, read_text

if TYPE_CHECKING:
    from obelisk import Context
    from obelisk.planfile import PlanFile

AGENT_FILE_FIELDS = frozenset({"description", "context", "tools", "output_schema", "mode",
                               "max_ticks", "mocks", "mcp"})
#: The fields that make a file an agent file: no plan file has them.
AGENT_ONLY_FIELDS = frozenset({"output_schema", "mode", "max_ticks"})


def read_agent_file(path: str) -> dict[str, Any]:
    """The agent file, checked field by field (every problem an :class:`InputError`)."""
    return agent_file_of(load_json(path), path)


def agent_file_of(data: Any, path: str) -> dict[str, Any]:
    """An agent file's parsed JSON, checked field by field."""
    if not isinstance(data, Mapping):
        raise InputError(f"{path}: an agent file is a JSON object with context, tools and "
                         "output_schema")
    unknown = sorted(k for k in data if k not in AGENT_FILE_FIELDS)
    if unknown:
        raise InputError(f"{path}: unknown field(s) {', '.join(map(repr, unknown))}; an agent "
                         f"file has {', '.join(sorted(AGENT_FILE_FIELDS))}")
    for key, kind in (("context", list), ("tools", list), ("mocks", Mapping)):
        if key in data and not isinstance(data[key], kind):
            raise InputError(f'{path}: "{key}" must be '
                             + ("an array" if kind is list else "an object"))
    if data.get("mode", "eager") not in ("eager", "lazy"):
        raise InputError(f'{path}: "mode" must be "eager" or "lazy"')
    return dict(data)


def check_max_ticks(spec: Mapping[str, Any], path: str) -> None:
    """An :class:`InputError` when the file's ``max_ticks`` is not a positive integer
    (``obelisk agent`` checks it only when ``--max-ticks`` does not replace it)."""
    max_ticks = spec.get("max_ticks", 1)
    if type(max_ticks) is not int or max_ticks < 1:
        from obelisk.cli.safe import json_text

        raise InputError(f'{path}: "max_ticks" must be a positive integer, got '
                         f"{json_text(max_ticks, indent=None)}")


def read_plan_or_agent(path: str) -> PlanFile | dict[str, Any]:
    """The file at ``path`` (``-``: standard input): a plan file, or an agent file (a
    dict) when it has a field only agent files have."""
    from attrs import evolve

    from obelisk.planfile import plan_file_of

    name = "standard input" if path == "-" else path
    text = read_text(path)
    data = parse_json(text, name)
    if isinstance(data, Mapping) and AGENT_ONLY_FIELDS & data.keys():
        return agent_file_of(data, name)
    return evolve(plan_file_of(data, name), text=text)


def agent_context(spec: Mapping[str, Any], path: str,
                  args: argparse.Namespace | None = None) -> Context:
    """The agent file's context, with ``--context``'s messages before it and ``--input``'s
    after it when ``args`` has them (a malformed message is an :class:`InputError`)."""
    from obelisk import Context, MessageError
    from obelisk.cli.llmargs import extended_context

    messages = list(spec.get("context", []))
    try:
        return Context.of(messages if args is None else extended_context(messages, args))
    except MessageError as exc:
        raise InputError(f"{path}: context {exc}") from None


def file_request(spec: Mapping[str, Any], path: str, args: argparse.Namespace,
                 err: TextIO) -> Any:
    """The request the agent of ``spec`` sends at its first tick, built by the agent loop
    with the tools of its MCP servers (``--mcp``, its ``mcp`` field), the activities of
    ``--activities`` (their names: none runs) and the context of ``--context`` and
    ``--input``. Every problem is an :class:`InputError`."""
    from obelisk import MockError, ToolError
    from obelisk.agent import AgentError, RequestError, agent_request
    from obelisk.cli.common import load_activities
    from obelisk.cli.mcp import activities_for, servers_for

    check_output_schema(spec, path)
    servers = servers_for(args, err, spec.get("mcp"), path)
    loaded = load_activities(args.activities) if getattr(args, "activities", None) else None
    names = list(activities_for(args, err, loaded))
    tools = (servers.tools if servers is not None else []) + list(spec.get("tools", []))
    try:
        return agent_request(
            agent_context(spec, path, args), activity_names=names, tools=tools,
            output_schema=spec.get("output_schema"),
            mode=getattr(args, "mode", None) or spec.get("mode"),
            mocks=None if names else dict(spec.get("mocks", {})))
    except (ToolError, AgentError, RequestError, MockError) as exc:
        raise InputError(f"{path}: {exc}") from None


def check_output_schema(spec: Mapping[str, Any], path: str) -> None:
    """An :class:`InputError` when the file's ``output_schema`` is not a JSON Schema."""
    schema = spec.get("output_schema")
    if schema is None:
        return
    from jsonschema import Draft202012Validator, SchemaError  # type: ignore[import-untyped]

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "".join(f"/{p}" for p in exc.absolute_path)
        raise InputError(f"{path}: output_schema{where} is not a valid JSON Schema: "
                         f"{exc.message}") from None
