"""`/schedules` and `/unschedule ID` (docs/contract.md §8.2): this chat's jobs, and removing one.

Owns `ScheduleDesk`, the chat commands' side of `ScheduleBook`: listing is anyone's; a job is removed by
its creator or a bot admin (`platforms.<p>.admins`), so in a group nobody removes another's job.
"""
from __future__ import annotations

import asyncio

from gateway.i18n import Phrase, joined, say
from gateway.schedules.book import ScheduleBook, ScheduleRefused


class ScheduleDesk:
    def __init__(self, book: ScheduleBook) -> None:
        self._book = book

    async def listing(self, chat: str, language: str) -> Phrase:
        listed = await asyncio.to_thread(self._book.listing, chat)
        if not listed:
            return say(language, "schedule.list_empty")
        return joined([say(language, "schedule.list_head"), *(item.line(language) for item in listed)])

    async def unschedule(self, chat: str, args: str, *, user_id: str, admin: bool, language: str) -> Phrase:
        job_id = args.strip().split()[0] if args.strip() else ""
        if not job_id:
            return say(language, "schedule.unschedule_usage")
        try:
            job = await asyncio.to_thread(self._book.remove, job_id, chat=chat, by=user_id, admin=admin)
        except ScheduleRefused as exc:
            return exc.said(language)
        return say(language, "schedule.unscheduled", id=job.id)


__all__ = ["ScheduleDesk"]
