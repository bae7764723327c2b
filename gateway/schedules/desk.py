"""`/schedules` and `/unschedule ID` (docs/contract.md §8.2): this chat's jobs, and removing one.

Owns `ScheduleDesk`, the chat commands' side of `ScheduleBook`: listing is anyone's; a job is removed by
its creator or a bot admin (`platforms.<p>.admins`), so in a group nobody removes another's job.
"""
from __future__ import annotations

import asyncio

from gateway.schedules.book import ScheduleBook, ScheduleRefused
from gateway.schedules.texts import text


class ScheduleDesk:
    def __init__(self, book: ScheduleBook) -> None:
        self._book = book

    async def listing(self, chat: str) -> str:
        listed = await asyncio.to_thread(self._book.listing, chat)
        if not listed:
            return text("list_empty")
        return "\n".join([text("list_head"), *(item.line() for item in listed)])

    async def unschedule(self, chat: str, args: str, *, user_id: str, admin: bool) -> str:
        job_id = args.strip().split()[0] if args.strip() else ""
        if not job_id:
            return text("unschedule_usage")
        try:
            job = await asyncio.to_thread(self._book.remove, job_id, chat=chat, by=user_id, admin=admin)
        except ScheduleRefused as exc:
            return str(exc)
        return text("unscheduled", id=job.id)


__all__ = ["ScheduleDesk"]
