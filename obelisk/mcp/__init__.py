"""MCP (Model Context Protocol) in both directions, on the official ``mcp`` SDK (2.x):

- every MCP server's tools as obelisk tools and activities (:class:`McpServers`), so a
  plan can call them with references, ``||`` branches and parallel calls;
- obelisk as an MCP server (:func:`obelisk.mcp.serve.build_server`): a client LLM submits
  a whole plan over the downstream servers' tools.

Install it with the extra: ``pip install 'obelisk[mcp]'``. ``import obelisk`` never
imports the SDK, and neither does this package until a name that needs it is used:
:func:`parse_spec` and :func:`servers_of_config` work without it. See docs/mcp.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from obelisk.core.lazy import LazyExports

if TYPE_CHECKING:
    from obelisk.mcp.calls import IDEMPOTENCY_META, McpActivity, value_of
    from obelisk.mcp.convert import AT_MOST_ONCE, McpTool, McpToolError, Policy, tool_of
    from obelisk.mcp.link import McpServerError, ServerDown, ServerLost
    from obelisk.mcp.servers import DEFAULT_TIMEOUT, McpServers
    from obelisk.mcp.specs import McpConfigError, ServerSpec, parse_spec, servers_of_config

__all__ = [
    "AT_MOST_ONCE", "DEFAULT_TIMEOUT", "IDEMPOTENCY_META", "McpActivity", "McpConfigError",
    "McpServerError", "McpServers", "McpTool", "McpToolError", "Policy", "ServerDown",
    "ServerLost", "ServerSpec", "parse_spec", "servers_of_config", "tool_of", "value_of",
]

_EXPORTS = LazyExports(globals(), {
    "obelisk.mcp.calls": ["IDEMPOTENCY_META", "McpActivity", "value_of"],
    "obelisk.mcp.convert": ["AT_MOST_ONCE", "McpTool", "McpToolError", "Policy", "tool_of"],
    "obelisk.mcp.link": ["McpServerError", "ServerDown", "ServerLost"],
    "obelisk.mcp.servers": ["DEFAULT_TIMEOUT", "McpServers"],
    "obelisk.mcp.specs": ["McpConfigError", "ServerSpec", "parse_spec", "servers_of_config"],
})
__getattr__, __dir__ = _EXPORTS.getattr, _EXPORTS.dir
