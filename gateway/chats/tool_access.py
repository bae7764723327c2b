"""Which MCP tools a chat may use: `chats."PLATFORM:CHAT".tools`, else `mcp.group_tools` in groups, else all.

Owns `ToolAccess`, the decision for one chat as a value with its reason.
An allowlist names servers (every tool of it) or public tool names
(`server__tool`); a chat never gets a tool it does not admit, because the
agent is only ever offered the admitted ones. Built-in agent tools (memory,
session_search, skills) are not subject to it. Knows nothing of connections.
"""
from __future__ import annotations

from dataclasses import dataclass

from gateway.config import ChorusConfig
from gateway.intake.routing import Route


@dataclass(frozen=True, slots=True)
class ToolAccess:
    allowlist: frozenset[str] | None  # None: every MCP tool
    reason: str


def tool_access(config: ChorusConfig, route: Route) -> ToolAccess:
    """The MCP tools the chat of `route` may be offered."""
    chat = config.chats.get(route.chat_scope)
    if chat is not None and chat.tools is not None:
        return ToolAccess(frozenset(chat.tools), f"chats.{route.chat_scope}.tools")
    if route.kind != "dm" and config.mcp.group_tools is not None:
        return ToolAccess(frozenset(config.mcp.group_tools), "mcp.group_tools")
    return ToolAccess(None, "every configured MCP tool")


__all__ = ["ToolAccess", "tool_access"]
