"""A real MCP server for the tests, written with the official SDK (MCPServer).

``python tool_server.py`` serves stdio; ``python tool_server.py --http PORT`` streamable
HTTP on 127.0.0.1. Its tools: structured and text results, a slow one (which writes a
marker file when it is cancelled), one failing with isError, one raising a JSON-RPC error,
one that kills its own process, one that adds a tool and announces the change, a
destructive one that can leave a trace, and a counter of its own calls.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("tests", log_level="WARNING")
READ_ONLY = ToolAnnotations(readOnlyHint=True)


class Sum(BaseModel):
    total: int


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(total=a + b)


@server.tool(annotations=READ_ONLY, structured_output=False)
def shout(text: str) -> str:
    """Upper-case a text (a text result, no structured content)."""
    return text.upper()


@server.tool(annotations=READ_ONLY, structured_output=False)
def numbers(count: int) -> str:
    """A JSON array as text."""
    return str(list(range(count)))


@server.tool(annotations=READ_ONLY)
async def sleep(ms: int, marker: str = "") -> str:
    """Sleep; write ``marker`` (a file path) when cancelled."""
    try:
        await asyncio.sleep(ms / 1000)
    except asyncio.CancelledError:
        if marker:
            pathlib.Path(marker).write_text("cancelled", encoding="utf-8")
        raise
    return f"slept {ms}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False,
                                         idempotentHint=True))
def echo_meta(ctx: Context, value: str) -> dict[str, object]:
    """Return the value and the request's _meta."""
    meta = ctx.request_context.meta
    return {"value": value, "meta": meta.model_dump(mode="json", by_alias=True)
            if meta is not None and hasattr(meta, "model_dump") else dict(meta or {})}


@server.tool(annotations=READ_ONLY)
def authorization(ctx: Context) -> str:
    """The Authorization header the request came with (HTTP), or "none"."""
    headers = ctx.headers or {}
    return str(headers.get("authorization", "none"))


@server.tool(annotations=READ_ONLY)
def refuse(reason: str) -> str:
    """Fail with isError and the reason."""
    raise ToolError(f"refused: {reason}")


@server.tool(annotations=READ_ONLY)
def protocol_error() -> str:
    """Fail with a JSON-RPC error."""
    raise MCPError(code=-32099, message="the server says no")


@server.tool()
def wipe(name: str, trace: str = "") -> str:
    """A tool without annotations: destructive and not idempotent, by the MCP defaults.
    Appends ``name`` to the file ``trace`` when given, so a test sees that it ran."""
    if trace:
        with open(trace, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")
    return f"wiped {name}"


TICKS = [0]


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def tick(after: str = "") -> int:
    """Count the calls made to this tool in this server's process (1, 2, ...); ``after``
    is ignored (a reference there orders the call after another one)."""
    TICKS[0] += 1
    return TICKS[0]


@server.tool(annotations=READ_ONLY)
def crash() -> str:
    """Kill this server's process."""
    sys.stderr.write("about to crash\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(annotations=READ_ONLY)
async def grow(ctx: Context) -> str:
    """Add the tool ``extra`` and announce that the tool list changed."""

    @server.tool(name="extra", annotations=READ_ONLY)
    def extra() -> str:
        return "extra"

    await ctx.notify_tools_changed()
    return "grown"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
