"""``obelisk mcp-server --mcp SPEC ... [--http HOST:PORT] [--allow-destructive]``: an MCP
server whose tools let any MCP client submit a whole plan over the downstream servers'
tools (``describe_tools``, ``validate_plan``, ``dry_run_plan``, ``run_plan``).

It speaks MCP on stdin/stdout by default (as desktop clients start servers), or
streamable HTTP at ``http://HOST:PORT/mcp`` with ``--http``. Nothing but MCP is written to
standard output; notes go to standard error.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from obelisk.cli.common import EXIT_OK, Command
from obelisk.cli.mcp import add_mcp_arguments, specs_of
from obelisk.jsonio import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The MCP options, ``--http HOST:PORT``."""
    add_mcp_arguments(parser, runs=True)
    parser.add_argument("--http", metavar="HOST:PORT",
                        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--http takes HOST:PORT, such as 127.0.0.1:8765, got {text!r}")
    return host, int(port)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve until the client closes stdin (stdio) or the process is interrupted (HTTP)."""
    specs = specs_of(args)
    if not specs:
        raise InputError("mcp-server needs the MCP servers whose tools plans call: "
                         "--mcp SPEC or --mcp-config FILE")
    address = _address(args.http) if args.http else None
    try:
        import anyio

        from obelisk.mcp import McpServers
        from obelisk.mcp.serve import build_server, serve_http, serve_stdio
    except ImportError as exc:
        raise InputError(f"mcp-server needs the MCP SDK ({exc}): pip install 'obelisk[mcp]'"
                         ) from None
    timeout = args.mcp_timeout if args.mcp_timeout is not None else 60.0
    server = build_server(McpServers(specs, timeout=timeout),
                          allow_destructive=args.allow_destructive)
    if address is None:
        anyio.run(serve_stdio, server)
        return EXIT_OK
    host, port = address
    print(f"obelisk mcp-server: http://{host}:{port}/mcp", file=err, flush=True)
    anyio.run(serve_http, server, host, port)
    return EXIT_OK


MCP_SERVER = Command("mcp-server", "serve plan mode to MCP clients over MCP servers' tools",
                     add_arguments, run)
