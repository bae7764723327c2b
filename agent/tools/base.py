"""The agent tool contract: an OpenAI function schema and an async call returning text for the model.

Tools never raise for a refused or failed action: they return a JSON text with
`"success": false` and an `"error"` that tells the model what to do instead.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.messages import ToolCall, ToolSchema


class ToolGate(Protocol):
    """Asked before each tool call of a turn: None lets it run; a text is the call's result instead (not approved)."""

    async def admit(self, call: ToolCall) -> str | None: ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is calling: tools scope everything they touch to this chat.

    `untrusted` names why what this turn writes may not be the owner's own words: "group_member" (set by
    the gateway for a group sender who is not an admin) or "tool_output" (set by the agent loop once a
    tool result entered the turn). Writes to durable state (notes) honour `memory.untrusted_writes`.
    `user_notes`: the notes scope of the caller's own USER notes (a group participant's); None: the chat's.
    """

    chat_id: str
    session_id: str
    user_id: str | None = None
    untrusted: str | None = None
    gate: ToolGate | None = None  # the turn's approval check (tools.approval), set by the gateway
    user_notes: str | None = None
    thread_id: str | None = None  # the thread or topic the turn runs in (a job made here fires there)
    group: bool = False  # the chat is a group (several people), not a direct message


class Tool(Protocol):
    schema: ToolSchema

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str: ...


class ToolSource(Protocol):
    """Tools whose set changes while an agent lives (MCP servers come and go); asked before every request."""

    def current(self) -> Sequence[Tool]: ...


def ok(**fields: Any) -> str:
    return json.dumps({"success": True, **fields}, ensure_ascii=False)


def refused(error: str, **fields: Any) -> str:
    return json.dumps({"success": False, "error": error, **fields}, ensure_ascii=False)
