"""An MCP tool's activity: an obelisk call made as ``tools/call``, its result an outcome.

The activity follows obelisk's activity protocol (``async (call, tool, context)``): what
it returns is the call's result, an :class:`~obelisk.ActivityError` it raises is the
call's failure (so ``||`` error branches apply). A ``tools/call``:

- sends the call's parameters (its meta-properties left out) as ``arguments``, and the
  call's ``_idempotencyKey`` (durable runs) in ``_meta`` as ``obelisk/idempotencyKey``;
- returns ``structuredContent`` when the server gave it, else the text content (parsed as
  JSON when it parses), else the content blocks themselves;
- fails with the server's text when ``isError`` is true (``McpToolError``), with a
  JSON-RPC error (``McpError``), a timeout (``Timeout``: ``notifications/cancelled`` was
  sent), a lost connection (``ServerLost``), a server that is down (``ServerDown``) or a
  result that is not valid MCP (``McpInvalidResult``).

The activity may be awaited on any event loop: on another loop than the one the session
lives on (the sync interpreter's), the call is handed to the session's loop.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from obelisk.core.errors import ActivityError
from obelisk.mcp.convert import RESERVED, McpTool
from obelisk.mcp.link import Link, McpServerError, ServerDown, ServerLost

__all__ = ["IDEMPOTENCY_META", "McpActivity", "value_of"]

#: The ``_meta`` key that carries the call's idempotency key.
IDEMPOTENCY_META = "obelisk/idempotencyKey"


class McpActivity:
    """The activity of one MCP tool: ``tools/call`` on its server's link. Resident: its
    session cannot travel, so a Dask run makes its calls here."""

    resident = True  # obelisk.interpreters.activities.Resident

    def __init__(self, tool: McpTool, link: Link, loop: asyncio.AbstractEventLoop,
                 timeout: float) -> None:
        self.tool, self.link, self.loop, self.timeout = tool, link, loop, timeout
        declared = tool.input_schema.get("properties", {})
        self._underscored = frozenset(k for k in declared if k.startswith("_")) - RESERVED

    async def __call__(self, call: dict[str, Any], tool: Any, context: Any) -> Any:
        """Make the call; see the module's docstring for what it returns and raises."""
        arguments = {k: v for k, v in call.items()
                     if not k.startswith("_") or k in self._underscored}
        key = call.get("_idempotencyKey")
        meta = {IDEMPOTENCY_META: key} if isinstance(key, str) else None
        if asyncio.get_running_loop() is self.loop:
            # A task of its own: the SDK's cancel scopes must be left by the task that
            # entered them, and an interpreter may start a coroutine in one task and go
            # on in another (run_async starts each call eagerly). Cancelling the
            # activity cancels the task, which sends notifications/cancelled.
            return await self.loop.create_task(self._call(arguments, meta))
        # Another loop (the sync interpreter's): the session lives on its own loop.
        handed = asyncio.run_coroutine_threadsafe(self._call(arguments, meta), self.loop)
        return await asyncio.wrap_future(handed)

    async def _call(self, arguments: dict[str, Any], meta: dict[str, Any] | None) -> Any:
        tool, label = self.tool, self.link.spec.label
        where = {"server": label, "tool": tool.remote}
        try:
            result = await self.link.call(tool.remote, arguments, meta, self.timeout)
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                raise ActivityError(
                    "Timeout", f"server {label}: {tool.remote!r} did not answer within "
                    f"{self.timeout:g} s, so obelisk cancelled it (notifications/cancelled); "
                    "give it longer with --mcp-timeout", where) from None
            raise ActivityError(
                "McpError", f"server {label}: {tool.remote!r} failed with JSON-RPC error "
                f"{exc.code}: {exc.message}", {**where, "code": exc.code}) from None
        except ServerLost as exc:
            raise ActivityError("ServerLost", str(exc), where) from None
        except ServerDown as exc:
            raise ActivityError("ServerDown", str(exc), where) from None
        except McpServerError as exc:
            raise ActivityError("McpError", str(exc), where) from None
        except (RuntimeError, ValueError) as exc:  # the SDK's checks of the result
            raise ActivityError(
                "McpInvalidResult", f"server {label}: {tool.remote!r} returned a result that "
                f"is not valid: {_first_line(exc)}", where) from None
        return value_of(result, label, tool.remote)


def value_of(result: types.CallToolResult, server: str, tool: str) -> Any:
    """The value of a ``tools/call`` result, or the :class:`ActivityError` of an error."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if result.is_error:
        message = "\n".join(texts).strip() or "the tool failed (isError) and said nothing"
        raise ActivityError("McpToolError", message, {"server": server, "tool": tool})
    if result.structured_content is not None:
        return result.structured_content
    if texts:
        return _json_or_text("\n".join(texts))
    if result.content:
        return [block.model_dump(by_alias=True, exclude_none=True, mode="json")
                for block in result.content]
    return None


def _json_or_text(text: str) -> Any:
    def no_constants(name: str) -> Any:
        raise ValueError(name)  # NaN and Infinity are not JSON

    try:
        return json.loads(text, parse_constant=no_constants)
    except ValueError:
        return text


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]

