"""Agent tools: the `Tool` contract; memory, session_search and skill tools live beside it."""
from agent.tools.base import Tool, ToolContext, ToolSource, ok, refused

__all__ = ["Tool", "ToolContext", "ToolSource", "ok", "refused"]
