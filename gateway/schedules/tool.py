"""The `schedule` agent tool (docs/contract.md §8.3): add, list and cancel jobs of the chat it runs in.

Owns the OpenAI schema and the translation of `ScheduleBook` results into the tool's JSON text. Every call
is scoped to `ToolContext`: the job belongs to that chat (and thread) and that user; the model can never
name another chat. Limits (`scheduling.*`) are the book's.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from agent.messages import ToolSchema
from agent.tools.base import ToolContext, ok, refused
from gateway.i18n import msgid
from gateway.schedules.book import JobRequest, ScheduleBook, ScheduleRefused

TOOL_NAME: Final = "schedule"
ACTIONS: Final = ("add", "list", "cancel")

DESCRIPTION = (
    "Schedule a prompt to run later in THIS chat (a reminder, a daily digest). "
    "add: give `prompt` (what to do at that time, written as an instruction to yourself) and either `cron` "
    "(five fields, minute hour day month weekday, e.g. '0 9 * * 1-5' for weekdays at 9) with an optional "
    "`timezone` (IANA name, default UTC), or `at` (one ISO time, e.g. 2026-12-24T09:00). "
    "list: this chat's jobs with their next run. cancel: remove the job `id` (only the user who made it). "
    "At its time the prompt runs as a new turn here and your answer is sent to the chat."
)

SCHEMA: Final = ToolSchema(
    name=TOOL_NAME,
    description=DESCRIPTION,
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "cron": {"type": "string", "description": "a repeating job: five cron fields"},
            "at": {"type": "string", "description": "a one-time job: ISO 8601 time"},
            "timezone": {"type": "string", "description": "IANA time zone of cron/at (default UTC)"},
            "prompt": {"type": "string", "description": "what to do at that time (add)"},
            "id": {"type": "string", "description": "the job to cancel"},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
)


def _text(arguments: Mapping[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    return value if isinstance(value, str) and value.strip() else None


class ScheduleTool:
    """`schedule` over one gateway's `ScheduleBook`."""

    schema = SCHEMA

    def __init__(self, book: ScheduleBook) -> None:
        self._book = book

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        action = arguments.get("action")
        try:
            if action == "add":
                return await self._add(arguments, context)
            if action == "list":
                listed = await asyncio.to_thread(self._book.listing, context.chat_id)
                return ok(jobs=[item.line() for item in listed])
            if action == "cancel":
                job_id = _text(arguments, "id")
                if job_id is None:
                    return refused(str(ScheduleRefused(msgid("schedule.cancel_which"))))
                job = await asyncio.to_thread(self._book.remove, job_id, chat=context.chat_id, by=context.user_id,
                                              admin=False)
                return ok(cancelled=job.id)
        except ScheduleRefused as exc:
            return refused(str(exc))
        return refused(f"action must be one of {', '.join(ACTIONS)}")

    async def _add(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        request = JobRequest(
            chat=context.chat_id, thread=context.thread_id, cron=_text(arguments, "cron"), at=_text(arguments, "at"),
            timezone=_text(arguments, "timezone") or "UTC", prompt=_text(arguments, "prompt") or "", origin="user",
            owner_id=context.user_id, chat_type="group" if context.group else "dm",
        )
        job = await asyncio.to_thread(self._book.add, request)
        listed = next((item for item in await asyncio.to_thread(self._book.listing, context.chat_id)
                       if item.job.id == job.id), None)
        return ok(id=job.id, when=job.when.describe(), next_run=listed.line() if listed is not None else None)


__all__ = ["SCHEMA", "ScheduleTool", "TOOL_NAME"]
