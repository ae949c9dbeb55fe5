"""``obelisk mcp-server`` driven by the SDK's own client, over stdio and streamable HTTP,
in front of the real test server; its tool descriptions pinned by a golden file."""

from __future__ import annotations

import json
import os
import pathlib
import sys
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_servers import SERVER, free_port, obelisk_path, stdio_spec

from obelisk.mcp.tooltext import TOOLS

pytestmark = pytest.mark.slow
GOLDEN = pathlib.Path(__file__).parent / "golden" / "server-tools.json"
PLAN = [{"_tool": "t.add", "a": 1, "b": 2, "_outputPath": "†state.sum"},
        {"_tool": "t.add", "a": "†state.sum.total", "b": 1, "_outputPath": "†state.more"},
        {"_tool": "t.refuse", "reason": "no", "_outputPath": "†state.x || †state.why"}]


def test_the_tool_descriptions_are_pinned() -> None:
    # To change them on purpose: python -c "import json; from obelisk.mcp.tooltext import
    # TOOLS; print(json.dumps(TOOLS, indent=1, ensure_ascii=False))" > this golden file.
    assert json.loads(GOLDEN.read_text(encoding="utf-8")) == TOOLS


def _obelisk(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "obelisk", "mcp-server", "--mcp", stdio_spec(), *extra],
        env={"PYTHONPATH": obelisk_path()})


async def _session(client: Client) -> dict[str, Any]:
    names = [t.name for t in (await client.list_tools()).tools]
    described = (await client.call_tool("describe_tools", {})).structured_content
    checked = (await client.call_tool("validate_plan", {"calls": [{"_tool": "t.nope"}]})
               ).structured_content
    dry = (await client.call_tool("dry_run_plan", {"calls": PLAN[:2],
                                                   "output": "†state.more"})).structured_content
    ran = await client.call_tool("run_plan", {"calls": PLAN, "output": {
        "total": "†state.more.total", "why": "†state.why.message"}})
    wiped = await client.call_tool("run_plan", {"calls": [{"_tool": "t.wipe", "name": "db"}]})
    return {"names": names, "described": described, "checked": checked, "dry": dry,
            "ran": ran, "wiped": wiped}


def _check(got: dict[str, Any]) -> None:
    assert got["names"] == [t["name"] for t in TOOLS]
    described = got["described"]
    assert "†" in described["guide"] and "||" in described["guide"]
    branches = described["calls"]["items"]["anyOf"]
    assert "t.add" in [b["properties"]["_tool"]["const"] for b in branches]
    assert got["checked"]["ok"] is False
    assert got["checked"]["diagnostics"][0]["code"] == "unknown-tool"
    assert got["dry"]["status"] == "completed" and got["dry"]["errors"] == []
    ran = got["ran"]
    assert not ran.is_error
    assert ran.structured_content["output"] == {"total": 4, "why": "refused: no"} or \
        ran.structured_content["output"]["why"].endswith("refused: no")
    assert [c["outcome"] for c in ran.structured_content["calls"]] == ["executed"] * 3


def test_plan_mode_over_stdio_refuses_destructive_calls_it_cannot_ask_about() -> None:
    async def main() -> dict[str, Any]:
        async with Client(_obelisk()) as client:
            return await _session(client)

    got = anyio.run(main)
    _check(got)
    wiped = got["wiped"]
    assert wiped.is_error
    assert "--allow-destructive" in wiped.structured_content["errors"][0]["error"]["message"]


def test_plan_mode_over_streamable_http() -> None:
    import subprocess
    import time

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "obelisk", "mcp-server", "--mcp", stdio_spec(),
         "--http", f"127.0.0.1:{port}", "--allow-destructive"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": obelisk_path()})
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        assert f"http://127.0.0.1:{port}/mcp" in line
        time.sleep(0.5)

        async def main() -> dict[str, Any]:
            for _ in range(50):
                try:
                    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                        return await _session(client)
                except Exception:  # noqa: BLE001 - not listening yet
                    await anyio.sleep(0.2)
            raise AssertionError("obelisk mcp-server did not answer over HTTP")

        got = anyio.run(main)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()
    _check(got)
    assert not got["wiped"].is_error  # --allow-destructive


def test_mcp_server_needs_servers() -> None:
    import io

    from obelisk.cli import main

    err = io.StringIO()
    assert main(["mcp-server"], out=io.StringIO(), err=err) == 2
    assert "--mcp SPEC" in err.getvalue()
    assert SERVER.exists()
