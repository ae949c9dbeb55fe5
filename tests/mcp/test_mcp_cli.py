"""--mcp on the command line: run, validate, graph, schema, dry-run, agent, resume and
``obelisk mcp list``, against the real test server over stdio."""

from __future__ import annotations

import json
import pathlib

import pytest
from clirun import cli
from mcp_servers import stdio_spec

pytestmark = pytest.mark.slow

PLAN = {"plan": [{"_tool": "t.add", "a": 1, "b": 2, "_outputPath": "†state.sum"},
                 {"_tool": "t.shout", "text": "hi", "_outputPath": "†state.text"}]}


@pytest.fixture
def plan_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(PLAN), encoding="utf-8")
    return path


def test_run_needs_no_activities_with_mcp(plan_file: pathlib.Path,
                                          tmp_path: pathlib.Path) -> None:
    out_path = tmp_path / "ctx.json"
    code, out, err = cli("run", str(plan_file), "--mcp", stdio_spec(), "--out", str(out_path),
                         "--interpreter", "asyncio")
    assert code == 0, err
    assert '"total": 3' in out and '"text": "HI"' in out
    assert "sum" in out_path.read_text(encoding="utf-8")


def test_a_destructive_tool_is_refused_when_nobody_can_ask(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "wipe.json"
    path.write_text(json.dumps({"plan": [{"_tool": "t.wipe", "name": "db"}]}), encoding="utf-8")
    code, out, err = cli("run", str(path), "--mcp", stdio_spec())
    assert code == 1 and "Denied" in out and "--allow-destructive" in out
    code, out, err = cli("run", str(path), "--mcp", stdio_spec(), "--allow-destructive")
    assert code == 0, out + err


def test_validate_checks_calls_against_the_mcp_schemas(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"plan": [{"_tool": "t.add", "a": "one", "b": 2}]}),
                    encoding="utf-8")
    code, out, err = cli("validate", str(path), "--mcp", stdio_spec())
    assert code == 1 and "param-schema" in out and "'one' is not of type 'integer'" in out


def test_graph_marks_read_only_and_destructive_calls(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"plan": [{"_tool": "t.add", "a": 1, "b": 2},
                                         {"_tool": "t.wipe", "name": "x"}]}), encoding="utf-8")
    code, out, _ = cli("graph", str(path), "--mcp", stdio_spec())
    assert code == 0 and "class n0 mcpReadOnly" in out and "class n1 mcpDestructive" in out
    code, out, _ = cli("graph", str(path), "--mcp", stdio_spec(), "--format", "json")
    nodes = json.loads(out)["nodes"]
    assert nodes[0]["mcp"]["readOnly"] is True and nodes[1]["mcp"]["destructive"] is True


def test_dry_run_mocks_from_output_schemas(plan_file: pathlib.Path) -> None:
    code, out, err = cli("dry-run", str(plan_file), "--mcp", stdio_spec(), "--json")
    assert code == 1, err  # add has an output schema to mock from, shout (text) has none
    assert [c["outcome"] for c in json.loads(out)["calls"]] == ["executed", "failed"]
    assert "t.shout" in json.loads(out)["errors"][0]["data"]["error"]["message"]


def test_schema_composes_the_mcp_tools() -> None:
    code, out, _ = cli("schema", "--mcp", stdio_spec())
    branches = json.loads(out)["properties"]["calls"]["items"]["anyOf"]
    add = next(b for b in branches if b["properties"]["_tool"]["const"] == "t.add")
    assert add["properties"]["_activity"]["const"] == "t.add"


def test_mcp_list_shows_schemas_hints_and_policy() -> None:
    code, out, _ = cli("mcp", "list", stdio_spec())
    assert code == 0
    assert "t.wipe  (server t, MCP name wipe)" in out
    assert "policy: writes, destructive: asks for approval, at-most-once on resume" in out
    assert "readOnlyHint=false (default)" in out
    code, out, _ = cli("mcp", "list", stdio_spec(), "--json")
    tools = {t["name"]: t for t in json.loads(out)["tools"]}
    assert tools["t.add"]["policy"]["readOnly"] is True


def test_a_config_file_and_a_plan_files_mcp_field(tmp_path: pathlib.Path) -> None:
    import sys

    from mcp_servers import SERVER

    servers = {"cfg": {"command": sys.executable, "args": [str(SERVER)]}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    plan = {"plan": [{"_tool": "cfg.add", "a": 2, "b": 3, "_outputPath": "†state.s"}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    code, out, err = cli("run", str(path), "--mcp-config", str(config))
    assert code == 0 and '"total": 5' in out, err
    path.write_text(json.dumps({**plan, "mcp": servers}), encoding="utf-8")
    code, out, err = cli("run", str(path))
    assert code == 0 and '"total": 5' in out, err


@pytest.mark.parametrize(("argv", "message"), [
    (["--mcp", "python server.py"], "a server is stdio:COMMAND"),
    (["--mcp", "bad=stdio:/nonexistent/server"], "server bad could not be started"),
    (["--mcp", stdio_spec(), "--mcp-timeout", "0"], "--mcp-timeout must be a positive"),
])
def test_bad_servers_are_bad_input(plan_file: pathlib.Path, argv: list[str],
                                   message: str) -> None:
    code, _, err = cli("validate", str(plan_file), *argv)
    assert code == 2 and message in err


def test_run_without_activities_or_mcp_says_so(plan_file: pathlib.Path) -> None:
    code, _, err = cli("run", str(plan_file))
    assert code == 2 and "--activities" in err and "--mcp" in err


def test_an_agent_plans_over_mcp_tools(tmp_path: pathlib.Path) -> None:
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"context": [{"type": "input", "n": 4}],
                                 "output_schema": {"type": "object"}}), encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"calls": [
        {"_tool": "t.add", "a": "†input.n", "b": 1, "_outputPath": "†state.s"}],
        "output": "†state.s"}]), encoding="utf-8")
    code, out, err = cli("agent", str(agent), "--llm", f"script:{script}", "--mcp",
                         stdio_spec())
    assert code == 0, out + err
    assert '"total": 5' in out and "completed" in out


def test_request_shows_the_mcp_servers_tools(tmp_path: pathlib.Path) -> None:
    # obelisk request takes --mcp as obelisk agent does: the servers' tools are in the
    # solution schema, and their activities drop _output (they run, not the LLM).
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"context": [{"type": "input", "n": 4}],
                                 "output_schema": {"type": "object"}}), encoding="utf-8")
    code, out, err = cli("request", str(agent), "--mcp", stdio_spec(), "--json")
    assert code == 0, err
    branches = json.loads(out)["schema"]["properties"]["calls"]["items"]["anyOf"]
    tools = {b["properties"]["_tool"]["const"]: b["properties"] for b in branches}
    assert {"t.add", "t.shout"} <= tools.keys()
    assert "_output" not in tools["t.add"] and tools["t.add"]["_activity"]["const"] == "t.add"
    code, out, err = cli("schema", str(agent), "--mcp", stdio_spec())
    assert code == 0 and "t.add" in out, err
    code, out, err = cli("request", str(agent))  # without the server: no such tool
    assert code == 0 and "t.add" not in out


def test_resume_refuses_a_tool_whose_schema_changed(plan_file: pathlib.Path,
                                                    tmp_path: pathlib.Path) -> None:
    journal = tmp_path / "run.db"
    code, _, err = cli("run", str(plan_file), "--mcp", stdio_spec(), "--journal",
                       str(journal), "--run", "r1")
    assert code == 0, err
    code, out, err = cli("resume", str(journal), "--mcp", stdio_spec())
    assert code == 0, err
    config = tmp_path / "mcp.json"  # the same server, its add tool now with other hints
    import sys

    from mcp_servers import SERVER

    config.write_text(json.dumps({"mcpServers": {"t": {
        "command": sys.executable, "args": [str(SERVER)],
        "hints": {"add": {"readOnlyHint": False}}}}}), encoding="utf-8")
    code, _, err = cli("resume", str(journal), "--mcp-config", str(config))
    assert code == 2 and "'t.add' changed their schema" in err


def test_an_agent_sees_tools_a_server_adds_between_ticks(tmp_path: pathlib.Path) -> None:
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps({"context": [], "output_schema": {"type": "object"}}),
                     encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"calls": [{"_tool": "t.grow", "_outputPath": "†state.g"}], "output": None},
        {"calls": [{"_tool": "t.extra", "_outputPath": "†state.e"}], "output": "†state.e"},
    ]), encoding="utf-8")
    code, out, err = cli("agent", str(agent), "--llm", f"script:{script}", "--mcp",
                         stdio_spec())
    assert code == 0, out + err
    assert "call 0 t.extra: executed" in out and '"result": "extra"' in out
