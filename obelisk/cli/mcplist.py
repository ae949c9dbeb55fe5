"""``obelisk mcp list SPEC...``: the tools of MCP servers printed as obelisk sees them
(their schemas, hints and the policy applied), and the tools refused and why."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from obelisk.cli.common import EXIT_OK, Command
from obelisk.cli.mcp import add_mcp_arguments, servers_for
from obelisk.cli.safe import inert, json_text
from obelisk.jsonio import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``list SPEC...`` with the MCP options."""
    sub = parser.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND", required=True)
    listing = sub.add_parser("list", help="print the tools of MCP servers as obelisk sees "
                                          "them: schemas, hints, the policy applied")
    listing.add_argument("spec", metavar="SPEC", nargs="*",
                         help="[NAME=]stdio:COMMAND ARGS... or [NAME=]http(s)://URL")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    add_mcp_arguments(listing, runs=False)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Connect to the servers and print their tools (and the tools refused, and why)."""
    args.mcp = list(args.spec) + list(args.mcp)
    servers = servers_for(args, err)
    if servers is None:
        raise InputError("mcp list needs a server: SPEC, --mcp SPEC or --mcp-config FILE")
    if args.json:
        print(json_text({"tools": [{"name": t.name, "server": t.server, "mcpName": t.remote,
                                    "policy": t.policy.to_json(), "schema": t.schema}
                                   for t in servers.mcp_tools],
                         "refused": servers.refused}, stream=out), file=out)
        return EXIT_OK
    for tool in servers.mcp_tools:
        _print_tool(tool, out)
    for reason in servers.refused:
        print(f"refused: {inert(reason)}", file=out)
    return EXIT_OK


def _print_tool(tool: Any, out: TextIO) -> None:
    p = tool.policy
    words = ["read-only" if p.read_only else "writes",
             "destructive: asks for approval" if p.destructive else "not destructive",
             "at-most-once on resume" if p.at_most_once else "may run again on resume",
             "open world" if p.open_world else "closed world"]
    print(f"{inert(tool.name)}  (server {inert(tool.server)}, MCP name {inert(tool.remote)})",
          file=out)
    description = tool.schema.get("description")
    if description:
        print(f"  {inert(description)}", file=out)
    print(f"  policy: {', '.join(words)}", file=out)
    hints = ", ".join(f"{name}={str(value).lower()} ({dict(p.source)[name]})"
                      for name, value in p.hints)
    print(f"  hints: {hints}", file=out)
    params = {k: v for k, v in tool.schema["properties"].items() if not k.startswith("_")}
    print(f"  parameters: {json_text(params, stream=out, indent=None)}", file=out)
    if "_output" in tool.schema["properties"]:
        output = tool.schema["properties"]["_output"]
        print(f"  _output: {json_text(output, stream=out, indent=None)}", file=out)


MCP = Command("mcp", "list MCP servers' tools as obelisk sees them", add_arguments, run)
