"""The admin HTTP server: health, Prometheus metrics, the operator JSON API and the dashboard.

Owns `build_admin_app`, the bearer-token check and the JSON shapes of the
operator API. `/healthz`, `/readyz`, `/metrics` and the dashboard's static
files need no token; everything under `/api/` needs `admin.token`
(`Authorization: Bearer <token>`, compared in constant time). With no token
configured the operator API answers 403 and says to set `admin.token`. The
token is never logged: audit lines carry its fingerprint (`token_fingerprint`).
Knows the gateway only through `AdminBackend`, `LiveConfig` and `EventLog`.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any

import structlog
from aiohttp import web

from agent.tools.mcp import ServerStatus, public_name
from chorus_errors import ConfigError
from gateway.admin.backend import AdminBackend, SessionBusy, SessionNotFound
from gateway.admin.config_file import save_changes
from gateway.admin.events import EventKind, EventLog
from gateway.intake.deadletter import DeadLetterBox
from gateway.ops.config_sync import ConfigSync
from gateway.ops.health import health_routes
from gateway.ops.live_config import LIVE_KEYS, LiveConfig, flatten, live_values
from gateway.ops.metrics import CONTENT_TYPE_LATEST, Metrics
from gateway.sessions.hygiene import HYGIENE_RATIO

log = structlog.get_logger(__name__)

API_PREFIX = "/api/"
NO_TOKEN_TEXT = (
    "the operator API is disabled because admin.token is not set; set admin.token in the config file "
    "(e.g. admin: {token: ${CHORUS_ADMIN_TOKEN}}) and restart chorus"
)
BAD_TOKEN_TEXT = "missing or wrong admin token; send the header Authorization: Bearer <admin.token>"
RUNTIME_NOTE = "runtime only: lost on restart"
STATIC_FILES = {"dashboard.js": "application/javascript", "dashboard.css": "text/css"}
MAX_EVENTS = 500
WHO_KEY: web.RequestKey[str] = web.RequestKey("admin_who", str)


def token_fingerprint(token: str) -> str:
    """A short, non-reversible name for a token (what audit lines record as `who`)."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:8]


def _error(status: int, text: str, **fields: object) -> web.Response:
    return web.json_response({"error": text, **fields}, status=status)


def _auth_middleware(token: str | None) -> Callable[..., Awaitable[web.StreamResponse]]:
    expected = token.encode() if token else None
    who = token_fingerprint(token) if token else ""

    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX):
            return await handler(request)
        if expected is None:
            return _error(403, NO_TOKEN_TEXT)
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected):
            log.warning("admin.unauthorized", path=request.path, remote=request.remote)
            return web.json_response({"error": BAD_TOKEN_TEXT}, status=401, headers={"WWW-Authenticate": "Bearer"})
        request[WHO_KEY] = who
        return await handler(request)

    return check


def _static(name: str) -> bytes:
    return (resources.files("gateway.admin") / "static" / name).read_bytes()


class _Api:
    """The `/api/` handlers over one backend."""

    def __init__(
        self, backend: AdminBackend, live: LiveConfig | None, events: EventLog, deadletters: DeadLetterBox | None,
        sync: ConfigSync | None = None,
    ) -> None:
        self.backend = backend
        self.live = live
        self.sync = sync
        self.events = events
        self.deadletters = deadletters

    async def deadletters_list(self, request: web.Request) -> web.Response:
        try:
            limit = min(int(request.query.get("limit", "100")), MAX_EVENTS)
        except ValueError:
            return _error(400, f"limit: got {request.query['limit']!r}; expected a whole number up to {MAX_EVENTS}")
        box = self.deadletters
        if box is None:
            return web.json_response({"count": 0, "directory": None, "deadletters": []})
        letters = await asyncio.to_thread(box.recent, limit=limit)
        count = await asyncio.to_thread(box.count)
        return web.json_response({
            "count": count, "directory": str(box.directory) if box.directory else None,
            "deadletters": [letter.to_json() for letter in letters],
        })

    async def sessions(self, _request: web.Request) -> web.Response:
        views = await self.backend.sessions()
        return web.json_response(
            {"generated_at": time.time(), "hygiene_ratio": HYGIENE_RATIO, "sessions": [v.to_json() for v in views]}
        )

    async def session(self, request: web.Request) -> web.Response:
        key = request.match_info["key"]
        try:
            detail = await self.backend.session(key)
        except SessionNotFound as exc:
            return _error(404, str(exc), key=key)
        compressions = self.events.recent(limit=50, kind="compression", session=key)
        return web.json_response(
            {
                **detail.view.to_json(),
                "session_id": detail.session_id,
                "archived_messages": detail.archived_messages,
                "last_summary": detail.last_summary,
                "recent_compressions": [e.to_json() for e in compressions],
            }
        )

    async def compress(self, request: web.Request) -> web.Response:
        key = request.match_info["key"]
        try:
            outcome = await self.backend.compress(key)
        except SessionNotFound as exc:
            return _error(404, str(exc), key=key)
        except SessionBusy as exc:
            return _error(409, str(exc), key=key)
        log.info("admin.compress", session_key=key, outcome=outcome.outcome, who=request[WHO_KEY],
                 tokens_before=outcome.tokens_before, tokens_after=outcome.tokens_after)
        return web.json_response(outcome.to_json())

    async def events_list(self, request: web.Request) -> web.Response:
        try:
            limit = min(int(request.query.get("limit", "100")), MAX_EVENTS)
        except ValueError:
            return _error(400, f"limit: got {request.query['limit']!r}; expected a whole number up to {MAX_EVENTS}")
        kind = request.query.get("kind")
        if kind not in (None, "compression", "notice", "error"):
            return _error(400, f"kind: got {kind!r}; expected compression, notice or error")
        chosen: EventKind | None = kind  # type: ignore[assignment]
        found = self.events.recent(limit=limit, kind=chosen, session=request.query.get("session"))
        return web.json_response({"events": [e.to_json() for e in found]})

    def _require_live(self) -> LiveConfig:
        if self.live is None:
            raise web.HTTPServiceUnavailable(
                text=json.dumps({"error": "runtime configuration is not wired into this gateway"}),
                content_type="application/json",
            )
        return self.live

    async def config(self, _request: web.Request) -> web.Response:
        live = self._require_live()
        return web.json_response(
            {
                "values": live_values(live.current()),
                "live_keys": sorted(LIVE_KEYS),
                "path": str(live.path) if live.path else None,
                "version": live.version,
            }
        )

    async def patch_config(self, request: web.Request) -> web.Response:
        live = self._require_live()
        try:
            body: Any = await request.json()
            if isinstance(body, dict):
                body = dotted(body)
        except json.JSONDecodeError as exc:
            return _error(400, f"the body is not JSON ({exc.msg}); send an object such as {{\"compression.threshold\": 0.6}}")
        except RecursionError:
            return _error(400, "the body is nested too deeply; send an object such as {\"compression.threshold\": 0.6}")
        if not isinstance(body, dict) or not body:
            return _error(400, "send a non-empty JSON object of dotted keys or nested objects, "
                               "e.g. {\"compression.threshold\": 0.6} or {\"compression\": {\"threshold\": 0.6}}")
        persist = request.query.get("persist", "false").lower() in ("1", "true", "yes")
        if persist and live.path is None:
            return _error(400, "persist=true needs a config file, but chorus started on built-in defaults; "
                               "drop persist to change at runtime only, or start with --config FILE")
        try:
            preview = flatten(live.preview(body))
            saved = save_changes(live.path, {k: preview[k] for k in body}) if persist and live.path else None
            change = live.update(body, who=request[WHO_KEY])
        except ConfigError as exc:
            return _error(400, str(exc), key=exc.key)
        response: dict[str, object] = {
            "changed": [{"key": c.key, "old": c.old, "new": c.new} for c in change.changes],
            "values": live_values(change.config),
            "persisted": saved is not None,
            "applies": "from the next message",
        }
        if saved is not None:
            response.update(path=str(saved.path), mode=saved.mode)
        else:
            response["note"] = RUNTIME_NOTE
        if self.sync is not None:  # even when this replica had the value already: the others may not
            told = await self.sync.changed(body, who=request[WHO_KEY])
            response["replicas"] = "told" if told else "not reached: this replica only"
        return web.json_response(response)

    async def reload(self, request: web.Request) -> web.Response:
        live = self._require_live()
        if live.path is None:
            return _error(400, "no config file was loaded (built-in defaults); start with --config FILE to reload")
        try:
            change = live.reload(who=request[WHO_KEY])
        except ConfigError as exc:
            _log_rejection(exc, request[WHO_KEY])
            return _error(400, str(exc), key=exc.key, kept="the running config")
        response: dict[str, object] = {
            "changed": [{"key": c.key, "old": c.old, "new": c.new} for c in change.changes],
            "restart_required": list(change.restart_required),
            "runtime_kept": list(change.runtime_kept),
            "values": live_values(change.config),
        }
        if self.sync is not None:
            told = await self.sync.reloaded(who=request[WHO_KEY])
            response["replicas"] = "told to re-read their files" if told else "not reached: this replica only"
        return web.json_response(response)


def dotted(body: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"compression": {"threshold": 0.6}}` as `{"compression.threshold": 0.6}`; dotted keys pass as they are.

    A mapping is descended into unless its own key is a live setting (`compression.model_thresholds`
    is one whole value).
    """
    flat: dict[str, Any] = {}
    for name, value in body.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict) and value and key not in LIVE_KEYS:
            flat.update(dotted(value, f"{key}."))
        else:
            flat[key] = value
    return flat


def _log_rejection(exc: ConfigError, who: str) -> None:
    log.error("config.reload_rejected", setting=exc.key, error=str(exc), who=who, kept="running config")


def build_admin_app(
    backend: AdminBackend,
    *,
    metrics: Metrics,
    token: str | None,
    live: LiveConfig | None = None,
    events: EventLog | None = None,
    before_scrape: Sequence[Callable[[], None]] = (),
    extra_routes: Sequence[web.RouteDef] = (),
    tools: Callable[[], Sequence[ServerStatus]] | None = None,
    deadletters: DeadLetterBox | None = None,
    config_sync: ConfigSync | None = None,
) -> web.Application:
    """The admin `web.Application` (serve it on `admin.host:admin.port`).

    Args:
        backend: the running gateway.
        metrics: the registry `/metrics` renders.
        token: `admin.token` (None: the operator API answers 403).
        live: the runtime config holder (None: the config endpoints answer 503).
        events: the recent-events ring buffer (a fresh empty one when None).
        before_scrape: callables that refresh gauges right before `/metrics` renders.
        extra_routes: routes served beside these (platform webhooks); outside `/api/`, so no token.
        tools: the MCP servers' statuses for `/api/tools` (None: no servers configured).
        deadletters: the quarantined messages `GET /api/deadletters` lists (None: an empty list).
        config_sync: tells the other replicas of a PATCH or reload (None: this process only).
    """
    api = _Api(backend, live, events if events is not None else EventLog(), deadletters, config_sync)
    app = web.Application(middlewares=[_auth_middleware(token)])

    async def scrape(_request: web.Request) -> web.Response:
        for refresh in before_scrape:
            refresh()
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def dashboard(_request: web.Request) -> web.Response:
        return web.Response(body=_static("dashboard.html"), content_type="text/html", charset="utf-8")

    async def tool_list(_request: web.Request) -> web.Response:
        servers = [
            {"name": s.name, "transport": s.transport, "state": s.state, "error": s.error, "restarts": s.restarts,
             "tools": [public_name(s.name, tool) for tool in s.tools]}
            for s in (tools() if tools is not None else ())
        ]
        return web.json_response({"servers": servers})

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC_FILES:
            raise web.HTTPNotFound()
        return web.Response(body=_static(name), content_type=STATIC_FILES[name], charset="utf-8")

    app.add_routes(health_routes(backend.readiness))
    app.add_routes(
        [
            web.get("/metrics", scrape),
            web.get("/dashboard", dashboard),
            web.get("/dashboard/{name}", asset),
            web.get("/api/sessions", api.sessions),
            web.post("/api/sessions/{key:.+}/compress", api.compress),
            web.get("/api/sessions/{key:.+}", api.session),
            web.get("/api/events", api.events_list),
            web.get("/api/tools", tool_list),
            web.get("/api/deadletters", api.deadletters_list),
            web.get("/api/config", api.config),
            web.patch("/api/config", api.patch_config),
            web.post("/api/config/reload", api.reload),
        ]
    )
    app.add_routes(list(extra_routes))
    return app


__all__ = ["NO_TOKEN_TEXT", "RUNTIME_NOTE", "build_admin_app", "token_fingerprint"]
