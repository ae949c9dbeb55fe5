"""Which MCP servers to talk to: ``--mcp SPEC`` strings and ``mcpServers`` configs.

A server is a :class:`ServerSpec`: a subprocess spoken to over stdio, or a streamable-HTTP
URL, and the prefix its tools are named under. Two ways to write one:

- ``[NAME=]stdio:COMMAND ARGS...`` (split as a shell would, without running one) or
  ``[NAME=]http://...`` / ``https://...``: :func:`parse_spec`;
- the ``mcpServers`` JSON that desktop MCP clients keep (``command``, ``args``, ``env``,
  ``cwd``, ``url``, ``headers``), with ``${VAR}`` (or ``${env:VAR}``) taken from the
  environment: :func:`servers_of_config`.

Nothing here imports the MCP SDK, so a bad spec is reported even when the ``mcp`` extra
is not installed. Every problem is a :class:`McpConfigError`.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import field, frozen

from obelisk.core.errors import ObeliskError

__all__ = [
    "McpConfigError", "ServerSpec", "expand", "parse_spec", "servers_of_config",
]


class McpConfigError(ObeliskError, ValueError):
    """An MCP server is described wrongly (a bad ``--mcp`` spec, config or file field)."""


#: ``NAME=`` before a spec: a name its tools are prefixed with (``files.read``).
_PREFIXED = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)=(?=stdio:|https?://)")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


def _pairs(value: Mapping[str, str] | tuple[tuple[str, str], ...] | None
           ) -> tuple[tuple[str, str], ...]:
    items = value.items() if isinstance(value, Mapping) else (value or ())
    return tuple(sorted((str(k), str(v)) for k, v in items))


def _strs(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


@frozen
class ServerSpec:
    """One MCP server: a ``command`` run as a subprocess (stdio) or a ``url``
    (streamable HTTP), and ``name``, the prefix of its tools' names (None: no prefix).

    ``env`` (stdio) and ``headers`` (HTTP) hold their values as written, ``${VAR}``
    unexpanded: they are expanded when the server is started (:meth:`environment`,
    :meth:`http_headers`), so a secret never sits in a value that is printed.
    ``hints`` overrides the server's tool annotations, by the tool's MCP name.
    """

    name: str | None = None
    command: str | None = None
    args: tuple[str, ...] = field(default=(), converter=_strs)
    env: tuple[tuple[str, str], ...] = field(default=(), converter=_pairs)
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), converter=_pairs)
    hints: tuple[tuple[str, tuple[tuple[str, bool], ...]], ...] = ()

    @property
    def label(self) -> str:
        """How messages name the server: its name, else how it is reached (a URL without
        its credentials, or ``stdio:`` and the command line)."""
        if self.name is not None:
            return self.name
        return self.address

    @property
    def address(self) -> str:
        """How the server is reached, safe to print: the URL without user information
        or query, or ``stdio:`` and the command line."""
        if self.url is not None:
            return re.sub(r"//[^/@]*@", "//", self.url.split("?", 1)[0])
        return "stdio:" + shlex.join([self.command or "", *self.args])

    def environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``env`` with its ``${VAR}`` taken from ``environ`` (the process environment)."""
        return {key: expand(value, f"{self.label}: env {key}", environ)
                for key, value in self.env}

    def http_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``headers`` with their ``${VAR}`` taken from ``environ``."""
        return {key: expand(value, f"{self.label}: header {key}", environ)
                for key, value in self.headers}

    def hint_overrides(self) -> dict[str, dict[str, bool]]:
        """The annotations the user set for each tool (by its MCP name)."""
        return {tool: dict(values) for tool, values in self.hints}


def expand(value: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with each ``${VAR}`` / ``${env:VAR}`` replaced by the variable; a
    variable that is not set is an error naming it (never its value)."""
    env = os.environ if environ is None else environ

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise McpConfigError(f"{where}: the environment variable {name} is not set")
        return env[name]

    return _VARIABLE.sub(one, value)


def parse_spec(text: str) -> ServerSpec:
    """The server ``--mcp TEXT`` names: ``[NAME=]stdio:COMMAND ARGS...`` or
    ``[NAME=]http(s)://...``."""
    name = None
    prefixed = _PREFIXED.match(text)
    if prefixed:
        name, text = prefixed.group(1), text[prefixed.end():]
    if text.startswith(("http://", "https://")):
        if any(c.isspace() for c in text):
            raise McpConfigError(f"--mcp {text!r}: a URL has no spaces")
        return ServerSpec(name=name, url=text)
    if text.startswith("stdio:"):
        try:
            words = shlex.split(text[len("stdio:"):])
        except ValueError as exc:
            raise McpConfigError(f"--mcp {text!r}: the command does not split into words "
                                 f"({exc})") from None
        if not words:
            raise McpConfigError(f"--mcp {text!r}: stdio: needs a command, as in "
                                 "stdio:python -m my_server")
        return ServerSpec(name=name, command=words[0], args=tuple(words[1:]))
    raise McpConfigError(f"--mcp {text!r}: a server is stdio:COMMAND ARGS..., or an "
                         "http:// or https:// URL (streamable HTTP), optionally after "
                         "NAME= (NAME=stdio:python -m server)")


def servers_of_config(data: Any, where: str) -> list[ServerSpec]:
    """The servers of an ``mcpServers`` config: ``{"mcpServers": {NAME: {...}}}`` or the
    ``{NAME: {...}}`` object itself. Each server's tools are named under its NAME.

    A server is ``{"command", "args", "env", "cwd"}`` or ``{"url", "headers"}``; one with
    ``"disabled": true`` is left out; other fields (those of other clients) are ignored.
    ``"hints"`` maps a tool's MCP name to the annotations to use instead of the server's
    (``{"write": {"destructiveHint": false}}``).
    """
    if isinstance(data, Mapping) and "mcpServers" in data:
        data, where = data["mcpServers"], f"{where}: mcpServers"
    if not isinstance(data, Mapping):
        raise McpConfigError(f"{where}: expected an object of server name -> server")
    return [spec for name, entry in data.items()
            if (spec := _server(name, entry, f"{where}.{name}")) is not None]


def _server(name: Any, entry: Any, where: str) -> ServerSpec | None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise McpConfigError(f"{where}: a server name is letters, digits, _ and -, "
                             "starting with a letter or _")
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"{where}: a server is an object with command or url")
    if entry.get("disabled") is True:
        return None
    kind = entry.get("type", entry.get("transport"))
    if kind in ("sse",):
        raise McpConfigError(f"{where}: the SSE transport is not supported; use the "
                             "server's streamable-HTTP URL")
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise McpConfigError(f"{where}: give either command (a stdio server) or url "
                             "(streamable HTTP), not " + ("both" if has_command else "neither"))
    hints = _hints(entry.get("hints", {}), f"{where}.hints")
    if has_url:
        url = _text(entry["url"], f"{where}.url")
        if not url.startswith(("http://", "https://")):
            raise McpConfigError(f"{where}.url: an http:// or https:// URL, got {url!r}")
        return ServerSpec(name=name, url=url, hints=hints,
                          headers=_strings(entry.get("headers", {}), f"{where}.headers"))
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(f"{where}.args: an array of strings")
    cwd = entry.get("cwd")
    return ServerSpec(name=name, command=_text(entry["command"], f"{where}.command"),
                      args=tuple(args), env=_strings(entry.get("env", {}), f"{where}.env"),
                      cwd=None if cwd is None else _text(cwd, f"{where}.cwd"), hints=hints)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise McpConfigError(f"{where}: a non-empty string")
    return value


def _strings(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise McpConfigError(f"{where}: an object of strings")
    return dict(value)


#: The annotations a user may set for a tool (the MCP spec's names).
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _hints(value: Any, where: str) -> tuple[tuple[str, tuple[tuple[str, bool], ...]], ...]:
    if not isinstance(value, Mapping):
        raise McpConfigError(f"{where}: an object of tool name -> annotations")
    out = []
    for tool, hints in sorted(value.items()):
        if not isinstance(hints, Mapping) or not all(
                k in HINTS and isinstance(v, bool) for k, v in hints.items()):
            raise McpConfigError(f"{where}.{tool}: an object of {', '.join(HINTS)} -> "
                                 "true or false")
        out.append((str(tool), tuple(sorted(hints.items()))))
    return tuple(out)
