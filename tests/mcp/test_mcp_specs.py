"""--mcp specs and mcpServers configs (no server is started here)."""

from __future__ import annotations

import pytest

from obelisk.mcp import McpConfigError, ServerSpec, parse_spec, servers_of_config


@pytest.mark.parametrize(("text", "expected"), [
    ("stdio:python -m fs_server", ServerSpec(command="python", args=("-m", "fs_server"))),
    ("files=stdio:python 'my server.py'",
     ServerSpec(name="files", command="python", args=("my server.py",))),
    ("http://127.0.0.1:8000/mcp", ServerSpec(url="http://127.0.0.1:8000/mcp")),
    ("w=https://x.example/mcp?a=b", ServerSpec(name="w", url="https://x.example/mcp?a=b")),
])
def test_specs(text: str, expected: ServerSpec) -> None:
    assert parse_spec(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("python server.py", "a server is stdio:COMMAND"),
    ("stdio:", "stdio: needs a command"),
    ("stdio:python 'open", "does not split"),
    ("1x=stdio:python", "a server is stdio:COMMAND"),
])
def test_bad_specs_say_how_to_write_one(text: str, message: str) -> None:
    with pytest.raises(McpConfigError, match=message):
        parse_spec(text)


def test_a_desktop_config_with_env_headers_and_hints() -> None:
    config = {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "fs"], "env": {"ROOT": "${HOME_DIR}"},
                  "hints": {"write": {"destructiveHint": False}}, "alwaysAllow": []},
        "remote": {"url": "https://user:pw@h.example/mcp?k=1",
                   "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
        "off": {"command": "x", "disabled": True},
    }}
    files, remote = servers_of_config(config, "c.json")
    assert files.name == "files" and files.args == ("-y", "fs")
    assert files.environment({"HOME_DIR": "/h"}) == {"ROOT": "/h"}
    assert files.hint_overrides() == {"write": {"destructiveHint": False}}
    assert remote.http_headers({"TOKEN": "s3cret"}) == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(remote) and "pw" not in remote.address
    assert remote.address == "https://h.example/mcp"
    with pytest.raises(McpConfigError, match="TOKEN is not set") as caught:
        remote.http_headers({})
    assert "Bearer" not in str(caught.value)


@pytest.mark.parametrize(("config", "message"), [
    ([], "an object of server name"),
    ({"a": {"command": "x", "url": "http://y"}}, "not both"),
    ({"a": {}}, "not neither"),
    ({"a": {"url": "ftp://y"}}, "an http:// or https:// URL"),
    ({"a": {"command": "x", "args": "y"}}, "args: an array of strings"),
    ({"a": {"url": "http://y", "type": "sse"}}, "SSE transport is not supported"),
    ({"a b": {"command": "x"}}, "a server name is letters"),
    ({"a": {"command": "x", "hints": {"t": {"readOnly": True}}}}, "readOnlyHint"),
])
def test_bad_configs_name_the_field(config: object, message: str) -> None:
    with pytest.raises(McpConfigError, match=message):
        servers_of_config(config, "c.json")
