"""One MCP server's session: opened and closed by one task, shared by every call.

A :class:`Link` owns one long-lived session with one server. The session is entered and
left by a task of the link's own (the *owner*), whatever task asks for it: an anyio task
group or cancel scope left by another task than the one that entered it is the most
reported MCP failure, and this makes it impossible. Calls run concurrently on the
session (MCP allows concurrent requests), each with a timeout that sends
``notifications/cancelled`` when it runs out (the SDK does), as does a cancelled call.

When the server goes away (its process exits, its stream ends), the calls in flight fail
with :class:`ServerLost`, naming the server and showing the end of what it wrote on
stderr; the next call reconnects once, and if that fails the server is down
(:class:`ServerDown`) for the link's life. A ``notifications/tools/list_changed`` marks
the tool list ``stale``: the owner of the tool list re-lists before compiling again.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from obelisk.core.errors import ObeliskError
from obelisk.mcp.specs import ServerSpec

__all__ = ["Link", "McpServerError", "ServerDown", "ServerLost", "CONNECTION_CLOSED"]

CONNECTION_CLOSED = types.CONNECTION_CLOSED

#: How many bytes of a stdio server's stderr an error shows.
_STDERR_TAIL = 600
#: Seconds that starting a server, its handshake and ``tools/list`` may take at least
#: (a subprocess that imports its SDK takes a second or two): a short call timeout does
#: not make them fail.
CONNECT_TIMEOUT = 30.0
#: Pages of ``tools/list`` followed before giving up (a server that pages forever).
_MAX_PAGES = 1000


class McpServerError(ObeliskError):
    """A server could not be reached, or stopped answering; the message names it."""


class ServerLost(McpServerError):
    """The connection ended while a call was in flight."""


class ServerDown(McpServerError):
    """The server is unusable: it could not be started, or a reconnect failed."""


class _Watched:
    """A transport's read stream that tells when it ends (the server went away)."""

    def __init__(self, inner: Any, ended: Callable[[], None]) -> None:
        self._inner, self._ended = inner, ended

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._ended()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except StopAsyncIteration:
            self._ended()
            raise

    async def __aenter__(self) -> _Watched:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result


class Link:
    """The session with one server (see the module's docstring). ``timeout`` bounds each
    request (seconds); ``on_change`` is called when the server's tool list changed."""

    def __init__(self, spec: ServerSpec, timeout: float,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.spec, self.timeout, self._on_change = spec, timeout, on_change
        self._client: Client | None = None
        self._lost = False  # the current session's stream ended
        self._down: str | None = None
        self._opening: asyncio.Future[Client] | None = None
        self._owner: asyncio.Task[None] | None = None
        self._release: asyncio.Event | None = None
        self._stderr: IO[bytes] | None = None
        self.connects = 0
        self._setup_timeout = max(timeout, CONNECT_TIMEOUT)

    # -- opening and closing -------------------------------------------------------------

    async def session(self) -> Client:
        """The live session: the open one, or a new one after a loss (one try a loss)."""
        if self._down is not None:
            raise ServerDown(self._down)
        if self._client is not None and not self._lost:
            return self._client
        if self._opening is not None:
            return await asyncio.shield(self._opening)
        reconnect = self.connects > 0
        try:
            return await self._open()
        except McpServerError as exc:
            if reconnect:
                self._down = (f"server {self.spec.label} is down: its connection was lost "
                              f"and reconnecting failed: {exc}")
                raise ServerDown(self._down) from None
            raise

    async def _open(self) -> Client:
        loop = asyncio.get_running_loop()
        self._opening = ready = loop.create_future()
        try:
            await self._leave()
            self._lost, self._release = False, asyncio.Event()
            self.connects += 1
            self._owner = loop.create_task(self._own(ready, self._release),
                                           name=f"mcp {self.spec.label}")
            try:
                client: Client = await asyncio.wait_for(asyncio.shield(ready),
                                                        self._setup_timeout)
            except asyncio.TimeoutError:
                await self._leave(cancel=True)
                raise McpServerError(f"server {self.spec.label} did not finish connecting "
                                     f"within {self._setup_timeout:g} s{self._last_words()}"
                                     ) from None
            self._client = client
            return client
        finally:
            self._opening = None
            if not ready.done():
                ready.cancel()

    async def close(self) -> None:
        """Leave the session (the owner task does), and forget the server's stderr."""
        await self._leave()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def _leave(self, cancel: bool = False) -> None:
        owner, self._owner, self._client = self._owner, None, None
        if owner is None:
            return
        if cancel:
            owner.cancel()
        elif self._release is not None:
            self._release.set()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await owner

    async def _own(self, ready: asyncio.Future[Client], release: asyncio.Event) -> None:
        """The owner task: enter the session, hold it until released, leave it."""
        client = Client(self._transport(), message_handler=self._message,
                        read_timeout_seconds=self._setup_timeout, cache=None,
                        client_info=types.Implementation(name="obelisk", version=_version()))
        try:
            async with client, self._listening(client):
                ready.set_result(client)
                await release.wait()
        except Exception as exc:  # noqa: BLE001 - a failed start is reported to the opener
            if not ready.done():
                ready.set_exception(McpServerError(
                    f"server {self.spec.label} could not be started: "
                    f"{_describe(exc)}{self._last_words()}"))

    @contextlib.asynccontextmanager
    async def _listening(self, client: Client) -> AsyncIterator[None]:
        """On a 2026 connection, a subscription to the tool list's changes (earlier
        servers send ``notifications/tools/list_changed`` without one)."""
        tools = client.server_capabilities.tools
        if tools is None or not tools.list_changed or client.protocol_version in (
                "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
            yield
            return
        try:
            listen = client.listen(tools_list_changed=True)
            await listen.__aenter__()
        except Exception:  # noqa: BLE001 - no subscription: changes go unnoticed, calls work
            yield
            return
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                await listen.__aexit__(None, None, None)

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        spec = self.spec
        if spec.url is not None:
            import httpx2

            async with httpx2.AsyncClient(
                    headers=spec.http_headers(),
                    timeout=httpx2.Timeout(30.0, read=300.0)) as http, \
                    streamable_http_client(spec.url, http_client=http) as (read, write):
                yield _Watched(read, self._ended), write
            return
        if self._stderr is None:
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - kept for the link's life
        self._stderr.seek(0)
        self._stderr.truncate()
        params = StdioServerParameters(command=spec.command or "", args=list(spec.args),
                                       env=spec.environment() or None, cwd=spec.cwd)
        async with stdio_client(params, errlog=self._stderr) as (read, write):  # type: ignore[arg-type]
            yield _Watched(read, self._ended), write

    def _ended(self) -> None:
        self._lost = True

    async def _message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._on_change()

    def _last_words(self) -> str:
        """The end of what a stdio server wrote on stderr, for an error message."""
        if self._stderr is None or self._stderr.closed:
            return ""
        try:
            self._stderr.seek(0, 2)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            text = self._stderr.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()][-3:]
        return f"; its stderr ends with: {' | '.join(lines)}" if lines else ""

    # -- requests ------------------------------------------------------------------------

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists, following pagination, as plain JSON."""
        client = await self.session()
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            try:
                page = await client.list_tools(cursor=cursor)
            except MCPError as exc:
                raise self._failure(exc, "tools/list") from None
            tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json")
                      for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise McpServerError(f"server {self.spec.label}: tools/list went on for more than "
                             f"{_MAX_PAGES} pages")

    async def call(self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None,
                   timeout: float) -> types.CallToolResult:
        """``tools/call``; a lost connection raises :class:`ServerLost`, a JSON-RPC error
        :class:`MCPError` (a timeout's code is ``REQUEST_TIMEOUT``)."""
        client = await self.session()
        try:
            return await client.call_tool(name, arguments, read_timeout_seconds=timeout,
                                          meta=meta)  # type: ignore[arg-type]
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise self._failure(exc, f"the call of {name!r}") from None
            raise

    def _failure(self, exc: MCPError, what: str) -> McpServerError:
        if exc.code != CONNECTION_CLOSED:
            return McpServerError(f"server {self.spec.label}: {what} failed: {exc.message}")
        self._lost = True
        return ServerLost(f"server {self.spec.label} closed the connection during {what} "
                          f"(the process exited or the stream ended){self._last_words()}")


def _describe(exc: BaseException) -> str:
    """An exception in one line: groups (anyio's) by their first leaf."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text


def _version() -> str:
    import obelisk  # the package this module is in: already imported

    return obelisk.__version__
