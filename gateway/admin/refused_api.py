"""People refused by the allowlist on the admin API, and admitting one with a click.

Owns `refused_routes`. Under `/api/`, so the admin token guards them like every operator route.

    GET  /api/refused                     the refused senders, most recently seen first
    POST /api/refused/admit               {"platform": "telegram", "user_id": "555"}: adds the id to
                                          platforms.PLATFORM.allowed_users (live on every replica, saved to the
                                          config file keeping comments) and removes the row
"""
from __future__ import annotations

from typing import Any

import structlog
from aiohttp import web

from chorus_errors import ConfigError
from gateway.admin.config_api import ConfigEdits
from gateway.admin.query import BadQuery, query_limit
from gateway.admin.refused import RefusedStore

log = structlog.get_logger(__name__)

MAX_LISTED = 1000
ADMIT_SHAPE = "send a JSON object such as {\"platform\": \"telegram\", \"user_id\": \"555\"}"
NO_ALLOWLIST = "{platform}: this platform has no allowed_users to admit a sender to"


def _allowlist_key(platform: str) -> str:
    return f"platforms.{platform}.allowed_users"


def refused_routes(store: RefusedStore, edits: ConfigEdits, who: web.RequestKey[str]) -> list[web.RouteDef]:
    """The refused-senders routes; `who` is the request key the auth middleware sets (audit lines)."""

    async def listing(request: web.Request) -> web.Response:
        try:
            limit = query_limit(request, default=200, maximum=MAX_LISTED)
        except BadQuery as exc:
            return exc.response
        return web.json_response({"refused": [row.to_json() for row in await store.recent(limit)]})

    async def admit(request: web.Request) -> web.Response:
        try:
            body: Any = await request.json()
        except ValueError:
            return web.json_response({"error": ADMIT_SHAPE}, status=400)
        if not isinstance(body, dict) or not isinstance(body.get("platform"), str) or not body.get("user_id"):
            return web.json_response({"error": ADMIT_SHAPE}, status=400)
        platform, user_id = body["platform"], str(body["user_id"])
        platforms = edits.live.current().platforms
        access = getattr(platforms, platform, None)
        allowed = getattr(access, "allowed_users", None)
        if not isinstance(allowed, list):
            return web.json_response({"error": NO_ALLOWLIST.format(platform=platform)}, status=400)
        admitted = allowed if user_id in allowed else [*allowed, user_id]
        try:
            result = await edits.apply({_allowlist_key(platform): admitted}, who=request[who],
                                       persist=edits.live.path is not None)
        except ConfigError as exc:
            return web.json_response({"error": str(exc), "key": exc.key}, status=400)
        await store.remove(platform, user_id)
        log.info("admin.sender_admitted", platform=platform, user_id=user_id, who=request[who])
        return web.json_response({"admitted": {"platform": platform, "user_id": user_id},
                                  "allowed_users": admitted, **{k: result[k] for k in ("persisted", "changed")},
                                  **({"replicas": result["replicas"]} if "replicas" in result else {})})

    return [web.get("/api/refused", listing), web.post("/api/refused/admit", admit)]


__all__ = ["refused_routes"]
