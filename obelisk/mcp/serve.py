"""obelisk as an MCP server: plan mode for any MCP client (``obelisk mcp-server``).

The server offers four tools over the downstream servers' tools (:class:`McpServers`):

- ``describe_tools``: the downstream tools as a plan's calls schema, with the guide to
  references, ``_outputPath``, ``||`` and ``&&`` that the agent's requests carry;
- ``validate_plan``: obelisk's diagnostics for a plan, structured and as text;
- ``dry_run_plan``: the plan run with mocks made from the tools' output schemas;
- ``run_plan``: the plan run for real; a destructive tool's call is approved through
  MCP elicitation when the client can answer one (over either channel of
  :mod:`obelisk.mcp.asking`), refused otherwise unless destructive tools are allowed. It
  returns each call's outcome, the errors with the messages that tell how to correct
  them, and the values the plan asked for (``output``).

Their descriptions are written for an LLM, kept in :data:`TOOLS` and pinned by a golden
test. The server is the SDK's low-level ``Server``; :func:`build_server` makes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.lowlevel.server import Server

from obelisk.agent.checks import resolve_output
from obelisk.agent.request import SYSTEM_TEMPLATE, build_request
from obelisk.compiler.diagnostics import render_text
from obelisk.compiler.plan import compile_plan
from obelisk.core.context import Context
from obelisk.core.errors import ObeliskError
from obelisk.interpreters.aio import run_async
from obelisk.interpreters.dryrun import dry_run
from obelisk.interpreters.reporting import report
from obelisk.mcp.asking import DEFAULT_APPROVAL_TIMEOUT, Ask, Channel, Rounds, by_request, channel
from obelisk.mcp.servers import McpServers
from obelisk.mcp.tooltext import TOOLS

__all__ = ["TOOLS", "build_server", "serve_http", "serve_stdio"]


def build_server(servers: McpServers, *, allow_destructive: bool = False,
                 name: str = "obelisk",
                 approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT) -> Server[Any]:
    """The MCP server offering :data:`TOOLS` over ``servers`` (entered by the server's
    lifespan: the sessions live while the server runs). A question about a destructive
    call that gets no answer within ``approval_timeout`` seconds is a refusal."""
    rounds = Rounds(approval_timeout)

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with servers:
            try:
                yield {}
            finally:
                await rounds.aclose()  # runs waiting for an answer end before the sessions

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in TOOLS])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams
                        ) -> types.CallToolResult | types.InputRequiredResult:
        handler = _HANDLERS.get(params.name)
        if handler is None:
            return _error(f"unknown tool {params.name!r}: the tools are "
                          + ", ".join(t["name"] for t in TOOLS))
        arguments = dict(params.arguments or {})

        async def answer(ask: Ask | None) -> types.CallToolResult:
            try:
                await servers.refresh()  # a server whose tool list changed is listed again
                value, failed = await handler(servers, arguments, ask, allow_destructive)
            except ObeliskError as exc:
                return _error(str(exc))
            return _result(value, failed)

        way = None if allow_destructive else channel(ctx)
        if way is Channel.ROUNDS and params.name in _ASKING:
            try:
                return await rounds.call(params, answer)
            except ObeliskError as exc:
                return _error(str(exc))
        return await answer(by_request(ctx, approval_timeout) if way is Channel.REQUEST
                            else None)

    from obelisk import __version__

    return Server(name, version=__version__, lifespan=lifespan, on_list_tools=list_tools,
                  on_call_tool=call_tool,
                  instructions="Plan mode: describe_tools, then submit a whole plan of "
                               "calls with validate_plan, dry_run_plan and run_plan.")


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_http(server: Server[Any], host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted."""
    import uvicorn

    config = uvicorn.Config(server.streamable_http_app(host=host), host=host, port=port,
                            log_level="warning")
    await uvicorn.Server(config).serve()


Handler = Callable[[McpServers, dict[str, Any], Ask | None, bool],
                   Awaitable[tuple[Any, bool]]]


def _calls(arguments: dict[str, Any]) -> list[Any]:
    calls = arguments.get("calls")
    if not isinstance(calls, list):
        raise ObeliskError('"calls" must be an array of calls (see describe_tools)')
    return calls


def _context(arguments: dict[str, Any]) -> Context:
    return Context.of(arguments.get("context") or [])


async def _describe(servers: McpServers, arguments: dict[str, Any], ask: Ask | None,
                    allow: bool) -> tuple[Any, bool]:
    request = build_request(Context.of([]), tools=servers.tools,
                            activity_names=list(servers.activities))
    schema = json.loads(request.schema_text)
    return {"guide": SYSTEM_TEMPLATE, "calls": schema["properties"]["calls"],
            "tools": [{"name": t.name, "readOnly": t.policy.read_only,
                       "destructive": t.policy.destructive} for t in servers.mcp_tools]}, False


def _diagnostics(plan: Any) -> list[dict[str, Any]]:
    return [{**d.to_json(), "text": render_text(d)} for d in plan.diagnostics]


async def _validate(servers: McpServers, arguments: dict[str, Any], ask: Ask | None,
                    allow: bool) -> tuple[Any, bool]:
    plan = compile_plan(_calls(arguments), tools=servers.tools, context=_context(arguments))
    return {"ok": plan.ok, "diagnostics": _diagnostics(plan)}, False


async def _dry_run(servers: McpServers, arguments: dict[str, Any], ask: Ask | None,
                   allow: bool) -> tuple[Any, bool]:
    plan = compile_plan(_calls(arguments), tools=servers.tools, context=_context(arguments))
    if not plan.ok:
        return {"status": "refused", "diagnostics": _diagnostics(plan)}, True
    mocks = arguments.get("mocks") or {}
    # The sync dry run makes an event loop of its own: off this one, in a thread.
    result = await asyncio.to_thread(dry_run, plan, _context(arguments), mocks=mocks)
    data = result.report()
    return _answer(data, result.context, arguments.get("output")), bool(data["errors"])


async def _run(servers: McpServers, arguments: dict[str, Any], ask: Ask | None,
               allow: bool) -> tuple[Any, bool]:
    context = _context(arguments)
    plan = compile_plan(_calls(arguments), tools=servers.tools, context=context)
    if not plan.ok:
        return {"status": "refused", "diagnostics": _diagnostics(plan)}, True
    approve = servers.approval(ask, allow_destructive=allow, refusal=(
        "this MCP client cannot be asked (it declares no form elicitation): start "
        "obelisk mcp-server with --allow-destructive to allow destructive tools"))
    result = await run_async(plan, context, activities=servers.activities, approve=approve,
                             trace=False)
    data = report(result)
    return _answer(data, result.context, arguments.get("output")), bool(data["errors"])


def _answer(data: dict[str, Any], context: Context, output: Any) -> dict[str, Any]:
    """The report's calls and errors, and ``output`` with its references resolved."""
    answer = {"status": data.get("status", "completed"),
              "calls": [{k: c[k] for k in ("call", "tool", "outcome", "reason") if k in c}
                        for c in data["calls"]],
              "errors": [e["data"] for e in data["errors"]]}
    if output is not None:
        value, missing = resolve_output(output, context)
        answer["output"] = value
        if missing:
            answer["outputMissing"] = missing
    return answer


def _result(value: Any, failed: bool) -> types.CallToolResult:
    text = json.dumps(value, ensure_ascii=False, indent=1)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=value, is_error=failed)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                is_error=True)


_HANDLERS: dict[str, Handler] = {
    "describe_tools": _describe, "validate_plan": _validate, "dry_run_plan": _dry_run,
    "run_plan": _run,
}
#: The tools whose calls may ask the user (through :mod:`obelisk.mcp.asking`).
_ASKING = frozenset({"run_plan"})
