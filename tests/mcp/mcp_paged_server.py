"""A real MCP server (the SDK's low-level Server) whose tools/list comes in pages of one
tool, for the test that obelisk follows the cursor. Serves stdio."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

NAMES = ["first", "second", "third"]


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                     ) -> types.ListToolsResult:
    index = int(params.cursor) if params is not None and params.cursor else 0
    tool = types.Tool(name=NAMES[index], input_schema={"type": "object", "properties": {}},
                      annotations=types.ToolAnnotations(read_only_hint=True))
    more = str(index + 1) if index + 1 < len(NAMES) else None
    return types.ListToolsResult(tools=[tool], next_cursor=more)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


server: Server[Any] = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
