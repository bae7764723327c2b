"""All configured MCP servers of one process, and the per-chat view of their tools.

Owns `McpHub` (start/stop every server together; the constructor only
assigns) and `ChatTools`, the `ToolSource` a chat's agent asks before each
request: only servers that are up contribute, and only tools the chat's
allowlist admits are ever offered. Knows nothing of platforms: the caller
decides a chat's allowlist.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence

from agent.settings import McpServerSettings, McpSettings
from agent.tools.base import Tool
from agent.tools.mcp._connection import McpConnection, ServerStatus
from agent.tools.mcp._names import allowed
from agent.tools.mcp.tool import CallLimits, CallObserver, McpTool

ConnectionFactory = Callable[[str, McpServerSettings], McpConnection]


class McpHub:
    """The MCP servers under `mcp.servers`.

    Args:
        settings: the `mcp` section.
        connect: builds one connection (tests shorten its timers).
        observe: receives each call's outcome (the gateway publishes it as an event).
    """

    def __init__(
        self, settings: McpSettings, *, connect: ConnectionFactory = McpConnection, observe: CallObserver | None = None
    ) -> None:
        self._observe = observe
        self._connect = connect
        self._started = False
        self._use(settings)

    def _use(self, settings: McpSettings) -> None:
        self._limits = CallLimits(timeout_seconds=settings.tool_timeout_seconds, max_result_chars=settings.max_result_chars)
        self._connections = {name: self._connect(name, server) for name, server in settings.servers.items()}
        self._tools: dict[str, tuple[int, tuple[McpTool, ...]]] = {}  # by server: (connection version, tools)

    async def reconfigure(self, settings: McpSettings) -> None:
        """A changed `mcp` section: the servers are stopped and the new ones started (when the hub runs)."""
        running = self._started
        await self.stop()
        self._use(settings)
        if running:
            await self.start()

    def __len__(self) -> int:
        return len(self._connections)

    @property
    def connections(self) -> Sequence[McpConnection]:
        return tuple(self._connections.values())

    async def start(self) -> None:
        """Start every server at once; one that fails keeps retrying in the background."""
        if self._started:
            raise RuntimeError("McpHub is already started; call stop() first")
        self._started = True
        await asyncio.gather(*(connection.start() for connection in self._connections.values()))

    async def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        await asyncio.gather(*(connection.stop() for connection in self._connections.values()))

    def statuses(self) -> list[ServerStatus]:
        return [connection.status() for connection in self._connections.values()]

    def tools(self, allowlist: Collection[str] | None = None) -> tuple[McpTool, ...]:
        """The tools offered now: those of servers that are up, admitted by `allowlist` (None: all)."""
        offered: list[McpTool] = []
        for name, connection in self._connections.items():
            cached = self._tools.get(name)
            if cached is None or cached[0] != connection.version:
                built = tuple(McpTool(target=connection, listed=listed, limits=self._limits, observe=self._observe) for listed in connection.tools)
                cached = self._tools[name] = (connection.version, built)
            offered.extend(tool for tool in cached[1] if allowed(tool.server, tool.name, allowlist))
        return tuple(offered)

    def for_chat(self, allowlist: Collection[str] | None) -> ChatTools:
        return ChatTools(self, None if allowlist is None else frozenset(allowlist))


class ChatTools:
    """One chat's view of the hub's tools (a `ToolSource`)."""

    def __init__(self, hub: McpHub, allowlist: frozenset[str] | None) -> None:
        self._hub = hub
        self.allowlist = allowlist

    def current(self) -> Sequence[Tool]:
        return self._hub.tools(self.allowlist)


__all__ = ["ChatTools", "McpHub"]
