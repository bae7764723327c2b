"""MCP tools for the agent: servers on the official SDK (stdio, streamable HTTP), their tools as agent `Tool`s.

`McpHub` holds the configured servers (`mcp.servers`), `ChatTools` is one
chat's view of the tools that are up and allowed. Knows no platforms.
"""
from agent.tools.mcp._connection import Backoff, ListedTool, McpConnection, McpUnavailable, ServerStatus
from agent.tools.mcp._names import allowed, public_name
from agent.tools.mcp._results import cut_middle, render_content
from agent.tools.mcp.hub import ChatTools, McpHub
from agent.tools.mcp.tool import CallLimits, McpTool, ToolCallOutcome

__all__ = [
    "Backoff",
    "CallLimits",
    "ChatTools",
    "ListedTool",
    "McpConnection",
    "McpHub",
    "McpTool",
    "ToolCallOutcome",
    "McpUnavailable",
    "ServerStatus",
    "allowed",
    "cut_middle",
    "public_name",
    "render_content",
]
