"""Spend and limits on the admin API (the dashboard's "Spend today" and `chorus limits` for embedded counters).

Owns `limits_routes`. Under `/api/`, so the admin token guards them like every operator route.

    GET  /api/limits                          today: the bot's totals, per model, top chats and users, limits hit
    GET  /api/limits?chat=PLATFORM:CHAT       one chat (or ?user=PLATFORM:USER): tokens, cost, window, limits
    POST /api/limits/reset                    {"chat": ["PLATFORM:CHAT"], "user": ["PLATFORM:USER"]}
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from aiohttp import web

from gateway.config import ChorusConfig
from gateway.coord.base import CoordUnavailable
from gateway.limits import SpendGate, chat_field
from gateway.limits.report import day_report, subject_report

log = structlog.get_logger(__name__)


def _subjects(chats: list[Any], users: list[Any]) -> list[str] | str:
    fields = []
    for kind, values in (("chat", chats), ("user", users)):
        for value in values:
            platform, _, rest = str(value).partition(":")
            if not platform or not rest:
                return f"{kind}: {value!r} is not PLATFORM:ID"
            fields.append(chat_field(str(value)) if kind == "chat" else f"user:{value}")
    return fields


def limits_routes(gate: SpendGate, config: Callable[[], ChorusConfig]) -> list[web.RouteDef]:
    """The spend routes over one gateway's `gate`; `config` is the running config (limits follow reloads)."""

    async def show(request: web.Request) -> web.Response:
        fields = _subjects(request.query.getall("chat", []), request.query.getall("user", []))
        if isinstance(fields, str):
            return web.json_response({"error": fields}, status=400)
        now = gate.clock()
        try:
            spend = await gate.limiter.day(now=now)
            windows = await gate.limiter.in_window(fields, now=now)
        except CoordUnavailable:
            return web.json_response({"error": "the limit counters (Redis) are unreachable"}, status=503)
        if fields:
            return web.json_response({"subjects": [subject_report(config(), spend, name, count)
                                                   for name, count in zip(fields, windows)]})
        return web.json_response(day_report(config(), spend))

    async def reset(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": "send a JSON object such as {\"chat\": [\"telegram:-100\"]}"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": "send a JSON object"}, status=400)
        fields = _subjects(list(body.get("chat") or []), list(body.get("user") or []))
        if isinstance(fields, str) or not fields:
            return web.json_response({"error": fields or "name a chat or a user to reset"}, status=400)
        try:
            await gate.limiter.reset(fields, now=gate.clock())
        except CoordUnavailable:
            return web.json_response({"error": "the limit counters (Redis) are unreachable"}, status=503)
        log.info("admin.limits_reset", subjects=fields)
        return web.json_response({"reset": fields})

    return [web.get("/api/limits", show), web.post("/api/limits/reset", reset)]


__all__ = ["limits_routes"]
