"""The `memory` agent tool (docs/contract.md §5.3): add / replace / remove entries of the calling chat's notes.

Owns the OpenAI schema and the translation of `notes.WriteResult` into the
tool's JSON text. Every call is scoped to `ToolContext.chat_id`; the model can
never name a chat. Checks (scanner, limits, approval gate, lock) all live in
`agent.memory.notes`, shared with the CLI and background review. File I/O runs
in a worker thread so a lock held by another process never stalls the event loop.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

import structlog

from agent.memory import ChatIdError
from agent.memory.approval import Target
from agent.memory.llm_screen import LlmScreen
from agent.memory.notes import Entry, NotesStore, WriteResult, prompt_text
from agent.memory.scanner import ScanVerdict, scan
from agent.messages import ToolSchema
from agent.tools.base import ToolContext, ok, refused

TOOL_NAME: Final = "memory"
ACTIONS: Final = ("add", "replace", "remove")
log = structlog.get_logger(__name__)

DESCRIPTION = (
    "Save durable notes that future conversations in THIS chat will see at their start. "
    "target 'memory': your own notes (facts about the project, environment, decisions, lessons). "
    "target 'user': who the user is (name, role, preferences, habits). "
    "add: a new entry in `content`. replace: the one entry containing `old_text` becomes `content`. "
    "remove: delete the one entry containing `old_text` (do this when the user asks you to forget something). "
    "Keep entries short and factual; never store instructions, secrets, tokens or passwords. "
    "Space is limited: when near the limit, merge entries with 'replace'. "
    "The system prompt shows the notes as they were when this conversation started; each successful call "
    "returns the target's entries as they are now."
)

SCHEMA: Final = ToolSchema(
    name=TOOL_NAME,
    description=DESCRIPTION,
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS), "description": "what to do"},
            "target": {"type": "string", "enum": ["memory", "user"], "description": "which notes file"},
            "content": {"type": "string", "description": "the entry text (add, replace)"},
            "old_text": {"type": "string", "description": "a unique substring of the entry to change (replace, remove)"},
        },
        "required": ["action", "target"],
        "additionalProperties": False,
    },
)


def _text_argument(arguments: Mapping[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    return value if isinstance(value, str) else None


def render_result(result: WriteResult) -> str:
    """The tool's JSON text for a `WriteResult` (also used by background review logs)."""
    usage = {"chars": result.usage.chars, "limit": result.usage.limit, "entries": result.usage.entries,
             "percent": result.usage.percent}
    drift = [report.describe() for report in result.drift]
    extra: dict[str, Any] = {"target": result.target, "usage": usage}
    if drift:
        extra["drift"] = drift
    if not result.ok:
        if result.verdict is not None:
            extra["category"] = result.verdict.category
            extra["pattern"] = result.verdict.pattern
        if result.candidates:
            extra["candidates"] = list(result.candidates)
        return refused(result.message, reason=result.refusal, **extra)
    if result.nudge:
        extra["nudge"] = result.nudge
    if result.pending is not None:
        extra["pending_id"] = result.pending.id
    if result.outcome == "written":
        # The system prompt keeps the session-start snapshot (prefix cache); the tool result lets the
        # model see its notes as they are now, flagged entries withheld as in the prompt.
        extra["entries"] = [prompt_text(Entry(text, scan(text))) for text in result.entries]
    return ok(status=result.outcome, message=result.message, **extra)


class MemoryTool:
    """`memory(action, target, content?, old_text?)` over one `NotesStore`.

    Args:
        store: the notes of every chat under the home; the context's chat id picks one.
        screen: `memory.llm_screen` (None when off): asked about the content of an add or replace first.
    """

    schema: ToolSchema = SCHEMA

    def __init__(self, store: NotesStore, screen: LlmScreen | None = None) -> None:
        self._store = store
        self._screen = screen

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        action = arguments.get("action")
        target = arguments.get("target")
        if action not in ACTIONS:
            return refused(f"action must be one of {', '.join(ACTIONS)}; got {action!r}.", reason="invalid")
        if target not in ("memory", "user"):
            return refused(f"target must be 'memory' or 'user'; got {target!r}.", reason="invalid")
        content = _text_argument(arguments, "content")
        old_text = _text_argument(arguments, "old_text")
        screened = await self._screen.check(content) if self._screen and action != "remove" and content else None
        try:
            result = await asyncio.to_thread(self._apply, context, action, target, content, old_text, screened)
        except ChatIdError as exc:
            return refused(str(exc), reason="invalid")
        log.info("memory.tool", action=action, target=target, outcome=result.outcome, refusal=result.refusal,
                 session_id=context.session_id, untrusted=context.untrusted)
        return render_result(result)

    def follow(self, screen: LlmScreen | None) -> LlmScreen | None:
        """`memory.llm_screen` (or its model) changed: later writes ask `screen`; returns the one replaced (to close)."""
        old, self._screen = self._screen, screen
        return old

    async def close(self) -> None:
        """Release the screen's model connections (idempotent)."""
        if self._screen is not None:
            await self._screen.close()

    def _apply(self, context: ToolContext, action: str, target: Target, content: str | None,
               old_text: str | None, screened: ScanVerdict | None = None) -> WriteResult:
        # USER notes are the caller's own where the caller has their own (a group participant); MEMORY the chat's.
        notes = self._store.chat(context.user_notes if target == "user" and context.user_notes else context.chat_id)
        if action == "add":
            return notes.add(target, content or "", untrusted=context.untrusted, screened=screened)
        if action == "replace":
            return notes.replace(target, old_text or "", content or "", untrusted=context.untrusted, screened=screened)
        return notes.remove(target, old_text or "")


__all__ = ["MemoryTool", "SCHEMA", "TOOL_NAME", "render_result"]
