"""MCP on the command line: the ``--mcp`` options every plan command shares (``obelisk
mcp list SPEC...`` is :mod:`obelisk.cli.mcplist`).

``--mcp SPEC`` (repeatable), ``--mcp-config FILE`` and a file's ``mcp`` field name the
servers; :func:`servers_for` opens them once per command (their sessions live on a thread
of their own, and ``main`` closes them when the command ends) and the plan commands add
their tools before the file's own. ``obelisk.mcp`` and the SDK are imported only when a
server is named.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from obelisk.cli.safe import inert, json_text
from obelisk.jsonio import InputError, load_json

if TYPE_CHECKING:
    from obelisk import CompiledPlan
    from obelisk.mcp import McpServers, ServerSpec
    from obelisk.planfile import PlanFile


def add_mcp_arguments(parser: argparse.ArgumentParser, *, runs: bool = False) -> None:
    """``--mcp``, ``--mcp-config``, ``--mcp-timeout``; with ``runs``,
    ``--allow-destructive`` too (the commands that call tools)."""
    group = parser.add_argument_group("MCP servers (pip install 'obelisk[mcp]')")
    group.add_argument("--mcp", action="append", metavar="SPEC", default=[],
                       help="an MCP server whose tools the plan may call: "
                            "[NAME=]stdio:COMMAND ARGS... or [NAME=]http(s)://URL "
                            "(give it again for more)")
    group.add_argument("--mcp-config", metavar="FILE", action="append", default=[],
                       help="MCP servers as desktop clients list them "
                            '({"mcpServers": {NAME: {command, args, env} | {url, headers}}})')
    group.add_argument("--mcp-timeout", type=float, metavar="SECONDS", default=None,
                       help="how long one MCP request may take (default 60)")
    if runs:
        group.add_argument("--allow-destructive", action="store_true",
                           help="call destructive MCP tools without asking (a run that "
                                "cannot ask refuses them otherwise)")


def specs_of(args: argparse.Namespace, extra: Any = None, where: str = "") -> list[ServerSpec]:
    """The servers of ``--mcp``, ``--mcp-config`` and a file's ``mcp`` field."""
    from obelisk.mcp.specs import McpConfigError, parse_spec, servers_of_config

    try:
        specs = [parse_spec(text) for text in getattr(args, "mcp", None) or []]
        for path in getattr(args, "mcp_config", None) or []:
            specs += servers_of_config(load_json(path), path)
        if extra is not None:
            specs += servers_of_config(extra, f'{where}: "mcp"')
    except McpConfigError as exc:
        raise InputError(str(exc)) from None
    return specs


def servers_for(args: argparse.Namespace, err: TextIO, extra: Any = None,
                where: str = "") -> McpServers | None:
    """The command's MCP servers, connected and listed (None when none is named): opened
    on the first call, kept on ``args`` and closed by ``main`` when the command ends.
    ``extra`` is a file's ``mcp`` field (``where`` names the file)."""
    opened: McpServers | None = getattr(args, "mcp_servers", None)
    if opened is not None and extra is None:
        return opened
    specs = specs_of(args, extra, where)
    if opened is not None:
        known = set(opened.specs)
        specs = [s for s in specs if s not in known]
        if not specs:
            return opened
        specs = opened.specs + specs
        args.mcp_servers = None
    if not specs:
        return None
    servers = _open(specs, args, err)
    args.mcp_servers = servers
    return servers


def _open(specs: list[ServerSpec], args: argparse.Namespace, err: TextIO) -> McpServers:
    try:
        from obelisk.mcp import McpServerError, McpServers
    except ImportError as exc:  # the SDK is missing: the extra is not installed
        raise InputError(f"--mcp needs the MCP SDK ({exc}): pip install 'obelisk[mcp]'"
                         ) from None
    timeout = args.mcp_timeout if getattr(args, "mcp_timeout", None) is not None else 60.0
    if not timeout > 0:
        raise InputError("--mcp-timeout must be a positive number of seconds")
    servers = McpServers(specs, timeout=timeout)
    closing = getattr(args, "closing", None)
    try:
        if closing is not None:
            closing.enter_context(servers)
        else:  # called without main: the servers live as long as the process
            servers.__enter__()
    except McpServerError as exc:
        raise InputError(str(exc)) from None
    for reason in servers.refused:
        print(f"warning: mcp: {inert(reason)}", file=err)
    return servers


def with_mcp_tools(pf: PlanFile, args: argparse.Namespace, err: TextIO) -> PlanFile:
    """``pf`` with the tools of its MCP servers before its own (so the file's own
    definition of a name wins)."""
    servers = servers_for(args, err, pf.mcp, pf.name)
    if servers is None:
        return pf
    from attrs import evolve

    return evolve(pf, tools=servers.tools + pf.tools)


def activities_for(args: argparse.Namespace, err: TextIO, loaded: Any) -> dict[str, Any]:
    """The MCP tools' activities, then ``--activities`` (which win on a shared name)."""
    servers = getattr(args, "mcp_servers", None)
    found: dict[str, Any] = dict(servers.activities) if servers is not None else {}
    found.update(loaded or {})
    return found


def approval_for(args: argparse.Namespace, err: TextIO,
                 plan: CompiledPlan | None, tools: Sequence[Any]
                 ) -> tuple[Callable[[dict[str, Any]], Any] | None, Callable[[Any], None] | None]:
    """The approval hook destructive MCP tools need when ``--approve`` asks nothing, and
    the observer its prompt needs: at a terminal each destructive call is asked about,
    elsewhere it is denied unless ``--allow-destructive``; (None, None) when no tool
    needs it."""
    servers = getattr(args, "mcp_servers", None)
    if servers is None or getattr(args, "approve", False):
        return None, None
    allow = bool(getattr(args, "allow_destructive", False))
    if allow or not servers.destructive():
        return None, None
    if sys.stdin is not None and sys.stdin.isatty():
        from obelisk.cli.terminal import terminal_approval

        ask, observe = terminal_approval(err, plan, tools)
        return servers.approval(ask), observe
    return servers.approval(), None


# -- the graph: read-only and destructive tools marked ------------------------------------


def mark_graph(text: str, kind: str, plan: CompiledPlan, args: argparse.Namespace) -> str:
    """The graph's text with each MCP call marked read-only or destructive."""
    servers = getattr(args, "mcp_servers", None)
    if servers is None:
        return text
    policy = {t.name: t for t in servers.mcp_tools}
    marks = [(node.id, policy[node.tool].policy) for node in plan.nodes
             if isinstance(node.tool, str) and node.tool in policy]
    if kind == "json":
        data = json.loads(text)
        for node in data.get("nodes", []):
            tool = policy.get(node.get("tool"))
            if tool is not None:
                node["mcp"] = {"server": tool.server, **tool.policy.to_json()}
        return json_text(data) + "\n"
    lines = []
    for node_id, p in marks:
        if kind == "dot":
            if p.read_only:
                lines.append(f'  n{node_id} [color="#008800", xlabel="read-only"];')
            elif p.destructive:
                lines.append(f'  n{node_id} [color="#dd0000", penwidth=2, xlabel="destructive"];')
        elif p.read_only or p.destructive:
            lines.append(f"  class n{node_id} {'mcpReadOnly' if p.read_only else 'mcpDestructive'}")
    if kind == "dot":
        body = text.rstrip()
        return body[:-1].rstrip() + "\n" + "".join(line + "\n" for line in lines) + "}\n"
    lines += ["  classDef mcpReadOnly stroke:#080,stroke-width:2px",
              "  classDef mcpDestructive stroke:#d00,stroke-width:3px"]
    return text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"


# -- agents and resumed runs -------------------------------------------------------------


def agent_refresh(args: argparse.Namespace, loaded: Any) -> Any:
    """The agent loop's ``refresh``: the servers re-listed before a tick when one of them
    said its tool list changed (None when no server is named)."""
    servers = getattr(args, "mcp_servers", None)
    if servers is None:
        return None

    async def refresh() -> Any:
        if not servers.stale:
            return None
        servers.call_soon(servers.refresh())  # on the servers' own loop
        return servers.tools, {**servers.activities, **(loaded or {})}

    return refresh


def check_recorded(args: argparse.Namespace, err: TextIO, recorded: Sequence[Any],
                   where: str) -> None:
    """Open the command's MCP servers and refuse to resume when a tool the run was
    recorded with is offered now with another schema."""
    servers = servers_for(args, err)
    if servers is None:
        return
    current = {tool.name: tool for tool in servers.mcp_tools}
    changed = []
    for schema in recorded:
        plain = schema.to_json() if hasattr(schema, "to_json") else schema
        name = plain.get("properties", {}).get("_tool", {}).get("const")
        tool = current.get(name) if isinstance(name, str) else None
        if tool is not None and _canonical(plain) != _canonical(tool.schema):
            changed.append(name)
    if changed:
        raise InputError(
            f"{where}: the MCP tool(s) {', '.join(map(repr, sorted(changed)))} changed their "
            "schema since the run was recorded, so it is not resumed (its recorded calls "
            "were checked against the old schema); resume it against the servers as they "
            "were, or start a new run")


def _canonical(value: Any) -> str:
    from obelisk import thaw

    return json.dumps(thaw(value), sort_keys=True)
