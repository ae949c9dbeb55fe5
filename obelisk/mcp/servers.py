"""MCP servers as obelisk tools and activities: :class:`McpServers`.

::

    async with McpServers(["files=stdio:python -m fs_server"]) as servers:
        result = await obelisk.run_async(plan, tools=await servers.refresh(),
                                          activities=servers.activities,
                                          approve=servers.approval())

    with McpServers(["http://127.0.0.1:8000/mcp"]) as servers:   # sync code
        result = obelisk.run_sync(plan, tools=servers.tools, activities=servers.activities,
                                  approve=servers.approval(allow_destructive=True))

``async with`` keeps the sessions on the running event loop; ``with`` starts a thread
that runs an event loop of the servers' own, so synchronous code (``run_sync``, whose
activities are awaited on a loop of its own) uses the same sessions: every call is
handed to that loop. Either way each session is entered and left by one task.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any, TypeVar

from obelisk.interpreters.outcomes import Approve, Deny
from obelisk.mcp.calls import McpActivity
from obelisk.mcp.convert import McpTool, McpToolError, tool_of
from obelisk.mcp.link import Link
from obelisk.mcp.specs import ServerSpec, parse_spec

__all__ = ["DEFAULT_TIMEOUT", "McpServers"]

#: Seconds a request may take before it is cancelled (``--mcp-timeout``).
DEFAULT_TIMEOUT = 60.0

_T = TypeVar("_T")


class McpServers:
    """A group of MCP servers: their tools (obelisk schemas), activities and policy.

    ``servers`` are :class:`ServerSpec` values or ``--mcp`` strings; ``timeout`` bounds
    every request, in seconds. Tools a server offers that obelisk cannot use are left out
    and listed in :attr:`refused`, each with its reason.
    """

    def __init__(self, servers: Iterable[ServerSpec | str], *,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        specs = [parse_spec(s) if isinstance(s, str) else s for s in servers]
        if not timeout > 0:
            raise ValueError("the MCP timeout is a positive number of seconds")
        self.timeout = timeout
        self._links = [Link(spec, timeout, self._changed_callback(i))
                       for i, spec in enumerate(specs)]
        self._stale = [True] * len(specs)
        self._listed: list[list[McpTool]] = [[] for _ in specs]
        self._refused: list[list[str]] = [[] for _ in specs]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._activities: dict[str, McpActivity] = {}

    # -- what the servers offer ----------------------------------------------------------

    @property
    def specs(self) -> list[ServerSpec]:
        """The servers, in the order given."""
        return [link.spec for link in self._links]

    @property
    def mcp_tools(self) -> list[McpTool]:
        """Every usable tool, server by server, in each server's order."""
        seen: set[str] = set()
        tools = []
        for listed in self._listed:
            for tool in listed:
                if tool.name not in seen:
                    seen.add(tool.name)
                    tools.append(tool)
        return tools

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The obelisk tool schemas of :attr:`mcp_tools` (fresh copies)."""
        import copy

        return [copy.deepcopy(tool.schema) for tool in self.mcp_tools]

    @property
    def refused(self) -> list[str]:
        """Why each tool that is not offered was left out."""
        return [reason for reasons in self._refused for reason in reasons]

    @property
    def activities(self) -> dict[str, McpActivity]:
        """The activity of each tool, by the tool's (obelisk) name."""
        return dict(self._activities)

    @property
    def stale(self) -> bool:
        """True when a server said its tool list changed since it was listed."""
        return any(self._stale)

    def _changed_callback(self, index: int) -> Callable[[], None]:
        def changed() -> None:
            self._stale[index] = True

        return changed

    # -- the approval hook ---------------------------------------------------------------

    def destructive(self) -> frozenset[str]:
        """The names of the tools whose calls need approval."""
        return frozenset(t.name for t in self.mcp_tools if t.policy.destructive)

    def approval(self, ask: Callable[[dict[str, Any]], Any] | None = None, *,
                 allow_destructive: bool = False, refusal: str | None = None
                 ) -> Callable[[dict[str, Any]], Any] | None:
        """The approval hook of a run over these tools (see obelisk's ``approve``).

        None when no tool is destructive or ``allow_destructive``. Otherwise every call of
        a tool that is not destructive is approved; one of a destructive tool goes to
        ``ask`` (an interactive run's prompt, any approval hook), and without ``ask`` it is
        denied with a message saying how to allow it (``refusal``, when given).
        """
        names = self.destructive()
        if allow_destructive or not names:
            return None

        def approve(call: dict[str, Any]) -> Any:
            tool = call.get("_tool")
            if tool not in names:
                return Approve()
            if ask is not None:
                return ask(call)
            return Deny(f"{tool!r} is a destructive MCP tool (its destructiveHint, or the MCP "
                        "default for a tool without annotations), and "
                        + (refusal or "this run cannot ask for approval: allow it with "
                           "--allow-destructive (allow_destructive=True), or run at a "
                           "terminal to be asked"))

        return approve

    # -- opening, listing, closing -------------------------------------------------------

    async def __aenter__(self) -> McpServers:
        """Connect to every server and list its tools; closes what opened on failure."""
        self._loop = asyncio.get_running_loop()
        try:
            await self.refresh()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every session (each by the task that owns it)."""
        await asyncio.gather(*(link.close() for link in self._links),
                             return_exceptions=True)

    async def refresh(self) -> list[dict[str, Any]]:
        """Re-list the servers whose tool list changed (all, the first time) and return
        :attr:`tools`. A server that cannot be reached raises its error."""
        stale = [i for i, flag in enumerate(self._stale) if flag]
        for index in stale:
            self._stale[index] = False
        lists = await asyncio.gather(*(self._links[i].list_tools() for i in stale),
                                     return_exceptions=True)
        for index, listed in zip(stale, lists, strict=True):
            if isinstance(listed, BaseException):
                self._stale[index] = True
                raise listed
            self._absorb(index, listed)
        return self.tools

    def _absorb(self, index: int, listed: list[dict[str, Any]]) -> None:
        link = self._links[index]
        spec, loop = link.spec, self._loop
        assert loop is not None
        overrides = spec.hint_overrides()
        others = {t.name: t.server for i, tools in enumerate(self._listed) if i != index
                  for t in tools}
        tools, refused = [], []
        for entry in listed:
            try:
                tool = tool_of(entry, spec.label, spec.name, overrides.get(str(entry.get("name"))))
            except McpToolError as exc:
                refused.append(str(exc))
                continue
            if tool.name in others:
                refused.append(f"server {spec.label}: tool {tool.remote!r} has the name of a "
                               f"tool of server {others[tool.name]}, so it is not offered; "
                               "give one of the servers a prefix (NAME=...)")
                continue
            tools.append(tool)
        self._listed[index], self._refused[index] = tools, refused
        for name in [n for n, a in self._activities.items() if a.link is link]:
            del self._activities[name]
        for tool in tools:
            self._activities[tool.name] = McpActivity(tool, link, loop, self.timeout)

    # -- synchronous use: the servers' own loop in a thread -------------------------------

    def __enter__(self) -> McpServers:
        """Start a thread running the servers' event loop, and connect there."""
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(started.set)
            loop.run_forever()

        self._thread = threading.Thread(target=serve, name="obelisk-mcp", daemon=True)
        self._thread.start()
        started.wait()
        self._loop = loop
        try:
            self.call_soon(self.__aenter__())
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.call_soon(self.aclose())
        finally:
            self._stop()

    def refresh_sync(self) -> list[dict[str, Any]]:
        """:meth:`refresh` from synchronous code (the servers entered with ``with``)."""
        return self.call_soon(self.refresh())

    def call_soon(self, work: Awaitable[_T]) -> _T:
        """Run ``work`` on the servers' loop thread and wait for its result."""
        if self._thread is None or self._loop is None:
            raise RuntimeError("the MCP servers run on a thread only inside `with`")

        async def run() -> _T:
            return await work

        future: concurrent.futures.Future[_T] = asyncio.run_coroutine_threadsafe(
            run(), self._loop)
        return future.result()

    def _stop(self) -> None:
        loop, thread = self._loop, self._thread
        self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
