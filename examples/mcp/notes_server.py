"""A small MCP server for the docs' example (docs/mcp.md): notes kept in memory.

Run it over stdio (``python examples/mcp/notes_server.py``) or streamable HTTP
(``python examples/mcp/notes_server.py --http 8765``). Written with the official MCP SDK.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("notes")
NOTES: dict[str, str] = {"welcome": "Plans over MCP tools run their calls in parallel."}


class Note(BaseModel):
    title: str
    text: str
    words: int


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def read_note(title: str) -> Note:
    """Read the note with this title."""
    if title not in NOTES:
        raise ValueError(f"no note is called {title!r}")
    text = NOTES[title]
    return Note(title=title, text=text, words=len(text.split()))


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes() -> list[str]:
    """The titles of every note."""
    return sorted(NOTES)


@server.tool(annotations=ToolAnnotations(destructiveHint=False, idempotentHint=True))
def save_note(title: str, text: str) -> Note:
    """Save a note (an existing note of that title is replaced)."""
    NOTES[title] = text
    return Note(title=title, text=text, words=len(text.split()))


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def delete_note(title: str) -> str:
    """Delete a note."""
    NOTES.pop(title, None)
    return f"deleted {title}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
