"""MCP servers' tools in plans, against the real test server (tests/mcp/mcp_tool_server.py)
over stdio and streamable HTTP: results, failures, timeouts that cancel, a crash and the
reconnect, a changed tool list, the sync interpreter, the idempotency key in _meta."""

from __future__ import annotations

import asyncio
import pathlib
import time

import pytest
from mcp_servers import http_server, stdio_spec

import obelisk
from obelisk.mcp import McpServers

pytestmark = pytest.mark.slow


def state(result: obelisk.RunResult) -> object:
    return obelisk.resolve(result.context, "†state")


async def run(servers: McpServers, plan: list[object], **options: object) -> obelisk.RunResult:
    return await obelisk.run_async(plan, tools=servers.tools, activities=servers.activities,
                                   approve=servers.approval(allow_destructive=True), **options)


def test_results_failures_and_branches_over_stdio(tmp_path: pathlib.Path) -> None:
    plan = [
        {"_tool": "t.add", "a": 1, "b": 2, "_outputPath": "†state.sum"},
        {"_tool": "t.add", "a": "†state.sum.total", "b": 10, "_outputPath": "†state.more"},
        {"_tool": "t.shout", "text": "hi", "_outputPath": "†state.text"},
        {"_tool": "t.numbers", "count": 3, "_outputPath": "†state.json"},
        {"_tool": "t.refuse", "reason": "no", "_outputPath": "†state.x || †state.refused"},
        {"_tool": "t.protocol_error", "_outputPath": "†state.y || †state.rpc"},
        {"_tool": "t.echo_meta", "value": "v", "_outputPath": "†state.meta"},
    ]

    async def main() -> obelisk.RunResult:
        # A durable run: the engine sets each call's _idempotencyKey (a plan may not), and
        # the key reaches the server in _meta.
        async with McpServers([stdio_spec()]) as servers:
            with obelisk.Journal.open(tmp_path / "run.db") as journal:
                return await obelisk.run_durable_async(
                    plan, journal=journal, run_id="run", tools=servers.tools,
                    activities=servers.activities,
                    approve=servers.approval(allow_destructive=True))

    result = asyncio.run(main())
    got = state(result)
    assert result.errors == ()
    assert got["sum"] == {"total": 3} and got["more"] == {"total": 13}
    assert got["text"] == "HI" and got["json"] == [0, 1, 2]
    assert got["refused"]["type"] == "McpToolError"
    assert "refused: no" in got["refused"]["message"]
    assert got["rpc"]["type"] == "McpError" and "-32099" in got["rpc"]["message"]
    assert got["meta"]["meta"]["obelisk/idempotencyKey"] == "run//0/6/"


def test_a_timeout_fails_the_call_and_cancels_it_on_the_server(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "cancelled"

    async def main() -> obelisk.RunResult:
        async with McpServers([stdio_spec()], timeout=0.5) as servers:
            result = await run(servers, [{"_tool": "t.sleep", "ms": 5000,
                                          "marker": str(marker), "_outputPath": "†state.s"}])
            for _ in range(100):  # the server writes the marker when the cancel arrives
                if marker.exists():
                    break
                await asyncio.sleep(0.05)
            return result

    started = time.monotonic()
    result = asyncio.run(main())
    assert time.monotonic() - started < 5
    (error,) = result.errors
    assert error["data"]["error"]["type"] == "Timeout"
    assert "--mcp-timeout" in error["data"]["error"]["message"]
    assert marker.read_text(encoding="utf-8") == "cancelled"  # notifications/cancelled


def test_a_cancelled_run_cancels_its_calls_on_the_server(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "cancelled"

    async def main() -> None:
        async with McpServers([stdio_spec()]) as servers:
            task = asyncio.ensure_future(run(servers, [
                {"_tool": "t.sleep", "ms": 5000, "marker": str(marker)}]))
            await asyncio.sleep(1.0)
            task.cancel()
            result = await task
            assert result.status == "cancelled"
            for _ in range(100):
                if marker.exists():
                    break
                await asyncio.sleep(0.05)

    asyncio.run(main())
    assert marker.exists()


def test_a_server_that_dies_fails_its_call_by_name_and_comes_back_once() -> None:
    async def main() -> tuple[obelisk.RunResult, obelisk.RunResult, int]:
        async with McpServers([stdio_spec("crashy")]) as servers:
            first = await run(servers, [{"_tool": "crashy.crash", "_outputPath": "†state.c"}])
            second = await run(servers, [{"_tool": "crashy.add", "a": 2, "b": 2,
                                          "_outputPath": "†state.sum"}])
            return first, second, servers._links[0].connects

    first, second, connects = asyncio.run(main())
    (error,) = first.errors
    assert error["data"]["error"]["type"] == "ServerLost"
    message = error["data"]["error"]["message"]
    assert "server crashy closed the connection" in message and "about to crash" in message
    assert second.errors == () and state(second) == {"sum": {"total": 4}}
    assert connects == 2


def test_a_changed_tool_list_is_listed_again() -> None:
    async def main() -> tuple[bool, list[str]]:
        async with McpServers([stdio_spec()]) as servers:
            await run(servers, [{"_tool": "t.grow"}])
            for _ in range(100):
                if servers.stale:
                    break
                await asyncio.sleep(0.02)
            stale = servers.stale
            names = [t["properties"]["_tool"]["const"] for t in await servers.refresh()]
            return stale, names

    stale, names = asyncio.run(main())
    assert stale and "t.extra" in names


def test_sync_runs_use_the_servers_own_loop() -> None:
    with McpServers([stdio_spec(None)]) as servers:
        result = obelisk.run_sync([{"_tool": "add", "a": 1, "b": 1, "_outputPath": "†state.s"},
                                   {"_tool": "wipe", "name": "db"}],
                                  tools=servers.tools, activities=servers.activities,
                                  approve=servers.approval())
    assert state(result) == {"s": {"total": 2}}
    (error,) = result.errors  # wipe has no annotations: destructive, and nobody can ask
    assert error["data"]["error"]["type"] == "Denied"
    assert "--allow-destructive" in error["data"]["error"]["message"]


def test_parallel_calls_share_one_session_over_http() -> None:
    plan = [{"_tool": "sleep", "ms": 300, "_outputPath": f"†state.s{i}"} for i in range(8)]

    async def main() -> tuple[obelisk.RunResult, float]:
        with http_server() as url:
            async with McpServers([url]) as servers:
                await run(servers, plan[:1])  # warm
                started = time.monotonic()
                result = await run(servers, plan)
                return result, time.monotonic() - started

    result, took = asyncio.run(main())
    assert result.errors == ()
    assert len(state(result)) == 8
    assert took < 8 * 0.3  # not one after the other (a generous bound, not a timing)


def test_a_server_that_cannot_start_is_named() -> None:
    async def main() -> None:
        async with McpServers(["bad=stdio:/nonexistent/server"]):
            pass

    with pytest.raises(obelisk.mcp.McpServerError, match="server bad could not be started"):
        asyncio.run(main())


def test_tools_list_is_followed_page_by_page() -> None:
    import sys

    from mcp_servers import HERE

    spec = f"p=stdio:{sys.executable} {HERE / 'mcp_paged_server.py'}"
    with McpServers([spec]) as servers:
        names = [t.name for t in servers.mcp_tools]
        result = obelisk.run_sync([{"_tool": "p.third", "_outputPath": "†state.t"}],
                                  tools=servers.tools, activities=servers.activities)
    assert names == ["p.first", "p.second", "p.third"]
    assert state(result) == {"t": "third"}


def test_http_headers_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from obelisk.mcp import servers_of_config

    monkeypatch.setenv("TEST_MCP_TOKEN", "s3cret")
    with http_server() as url:
        (spec,) = servers_of_config({"mcpServers": {"h": {
            "url": url, "headers": {"Authorization": "Bearer ${TEST_MCP_TOKEN}"}}}}, "cfg")
        with McpServers([spec]) as servers:
            result = obelisk.run_sync([{"_tool": "h.authorization", "_outputPath": "†state.a"}],
                                      tools=servers.tools, activities=servers.activities)
    assert state(result) == {"a": {"result": "Bearer s3cret"}}
    assert "s3cret" not in repr(spec)
