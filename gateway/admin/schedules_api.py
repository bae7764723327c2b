"""Scheduled jobs on the admin API (the dashboard's schedule list; docs/contract.md §8.4).

Owns `schedules_routes`. Under `/api/`, so the admin token guards them like every operator route. The rules
(a valid cron, time zone or time; `schedules:` jobs are the config's) are `gateway.schedules.book`'s.

    GET    /api/schedules[?chat=PLATFORM:CHAT]   every job (or one chat's) with next_run and last_run
    POST   /api/schedules                        {"chat", "cron" | "at", "timezone"?, "prompt", "thread"?,
                                                  "deliver_only"?, "name"?} -> the job (201)
    DELETE /api/schedules/{id}                   removes a job added at run time (404 unknown, 409 a config job)
"""
from __future__ import annotations

import asyncio
from typing import Any

import structlog
from aiohttp import web

from gateway.schedules.book import JobRequest, ScheduleBook, ScheduleRefused

log = structlog.get_logger(__name__)

_TEXT_FIELDS = ("chat", "cron", "at", "timezone", "prompt", "thread", "name")


def _request(body: dict[str, Any]) -> JobRequest:
    unknown = sorted(set(body) - {*_TEXT_FIELDS, "deliver_only"})
    if unknown:
        raise ScheduleRefused(f"unknown field {unknown[0]!r}; the fields are {', '.join((*_TEXT_FIELDS, 'deliver_only'))}")
    for name in _TEXT_FIELDS:
        if body.get(name) is not None and not isinstance(body[name], str):
            raise ScheduleRefused(f"{name} must be a string")
    chat = body.get("chat")
    platform, _, chat_id = str(chat or "").partition(":")
    if not platform or not chat_id:
        raise ScheduleRefused("chat must be PLATFORM:CHAT, e.g. telegram:-100123")
    return JobRequest(chat=chat, cron=body.get("cron"), at=body.get("at"), timezone=body.get("timezone") or "UTC",
                      prompt=body.get("prompt") or "", origin="api", thread=body.get("thread"),
                      deliver_only=bool(body.get("deliver_only")), name=body.get("name"))


def schedules_routes(book: ScheduleBook) -> list[web.RouteDef]:
    """The schedule routes over one gateway's `book`."""

    async def listing(request: web.Request) -> web.Response:
        chat = request.query.get("chat")
        listed = await asyncio.to_thread(book.listing, chat)
        return web.json_response({"jobs": [item.to_json() for item in listed]})

    async def add(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": "send a JSON object such as {\"chat\": \"telegram:-100\", "
                                               "\"cron\": \"0 9 * * 1-5\", \"prompt\": \"…\"}"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": "send a JSON object"}, status=400)
        try:
            job = await asyncio.to_thread(book.add, _request(body))
        except ScheduleRefused as exc:
            return web.json_response({"error": str(exc)}, status=400)
        log.info("admin.schedule_added", job=job.id, chat=job.chat)
        listed = [item for item in await asyncio.to_thread(book.listing, job.chat) if item.job.id == job.id]
        return web.json_response(listed[0].to_json() if listed else {"id": job.id}, status=201)

    async def remove(request: web.Request) -> web.Response:
        job_id = request.match_info["job_id"]
        try:
            job = await asyncio.to_thread(book.remove, job_id)
        except ScheduleRefused as exc:
            in_config = job_id in book.config().schedules
            return web.json_response({"error": str(exc)}, status=409 if in_config else 404)
        log.info("admin.schedule_removed", job=job.id)
        return web.json_response({"removed": job.id})

    return [web.get("/api/schedules", listing), web.post("/api/schedules", add),
            web.delete("/api/schedules/{job_id}", remove)]


__all__ = ["schedules_routes"]
