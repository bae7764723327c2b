"""A fake Slack on loopback: the Web API (`/api/<method>`) and a Socket Mode websocket (`/link/`).

Speaks the real wire protocol to the real slack_sdk / slack-bolt clients:
Bearer tokens, JSON or form bodies, `{"ok": ...}` answers, HTTP 429 with
`Retry-After`, and Socket Mode's hello / envelope / ack frames. Also builds
signed Events API requests (`signed_headers`) for posting to the adapter.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.loopback import serve_loopback

BOT_TOKEN = "xoxb-fake-bot-token"
APP_TOKEN = "xapp-fake-app-token"
SIGNING_SECRET = "fake-signing-secret"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T0001"
WAIT_SECONDS = 5.0


@dataclass(frozen=True)
class ApiCall:
    method: str
    params: dict[str, Any]
    token: str | None
    at: float


@dataclass
class Failure:
    """A scripted failure for the next call of one method."""

    status: int = 429
    error: str = "ratelimited"
    headers: dict[str, str] = field(default_factory=dict)


def signed_headers(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    """Headers Slack would send with `body`: `v0=` HMAC-SHA256 over `v0:<ts>:<body>`."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": f"v0={digest}",
    }


def event_callback(event: dict[str, Any], *, event_id: str) -> dict[str, Any]:
    """An Events API `event_callback` envelope around `event`."""
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": "A0001",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


class FakeSlack:
    """Use as `async with FakeSlack() as fake:`; `fake.api_base_url` ends in `/api/`."""

    def __init__(self) -> None:
        self.calls: list[ApiCall] = []
        self.failures: dict[str, list[Failure]] = {}
        self.users: dict[str, str] = {}
        self.locales: dict[str, str] = {}  # user id → the locale users.info reports with include_locale
        self.acks: dict[str, dict[str, Any]] = {}
        self.connections = 0
        self.on_connect: list[dict[str, Any]] = []  # event payloads sent right after hello (queued while offline)
        self.port = 0
        self._changed = asyncio.Condition()
        self._sockets: list[web.WebSocketResponse] = []
        self._ts = itertools.count(1)
        self._envelopes = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.files: dict[str, bytes] = {}  # url_private path -> bytes; served only with the bot token
        self.threads: dict[str, dict[str, Any]] = {}  # thread_ts -> the parent post conversations.replies answers

    @property
    def api_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    @property
    def origin(self) -> str:
        """Where url_private files are served: pass it as the adapter's `file_hosts`."""
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link/", self._link)
        app.router.add_get("/files-pri/{path:.+}", self._file)
        self._runner, self.port = await serve_loopback(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- test helpers ----------------------------------------------------------------

    def file(self, name: str, data: bytes, mimetype: str) -> dict[str, Any]:
        """A `files` entry of a message event; its url_private is served here with the bot token only."""
        path = f"{TEAM_ID}-F{len(self.files) + 1}/{name}"
        self.files[path] = data
        return {"id": f"F{len(self.files)}", "name": name, "mimetype": mimetype, "size": len(data),
                "url_private": f"http://127.0.0.1:{self.port}/files-pri/{path}"}

    async def _file(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
            # Slack answers an unauthenticated file request with its HTML sign-in page.
            return web.Response(text="<html>sign in</html>", content_type="text/html")
        data = self.files.get(request.match_info["path"])
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    def fail_next(self, method: str, failure: Failure) -> None:
        self.failures.setdefault(method, []).append(failure)

    def calls_to(self, method: str) -> list[ApiCall]:
        return [call for call in self.calls if call.method == method]

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = WAIT_SECONDS) -> None:
        """Wait until `predicate()` holds (re-checked on every call, ack or connection)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    async def socket_event(self, payload: dict[str, Any]) -> str:
        """Send an `events_api` envelope on the live socket; returns its envelope_id."""
        await self.wait_until(lambda: any(not ws.closed for ws in self._sockets))
        ws = next(ws for ws in reversed(self._sockets) if not ws.closed)
        return await self._send_envelope(ws, payload)

    async def slash_command(self, payload: dict[str, Any]) -> str:
        """Send a `slash_commands` envelope (a command picked in Slack) on the live socket; returns its envelope_id."""
        await self.wait_until(lambda: any(not ws.closed for ws in self._sockets))
        ws = next(ws for ws in reversed(self._sockets) if not ws.closed)
        return await self._send_envelope(ws, payload, kind="slash_commands")

    async def _send_envelope(self, ws: web.WebSocketResponse, payload: dict[str, Any], *, kind: str = "events_api") -> str:
        envelope_id = f"env-{next(self._envelopes)}"
        frame = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
        }
        await ws.send_str(json.dumps(frame))
        return envelope_id

    async def drop_socket(self) -> None:
        """Close every live websocket from the server side, as Slack does on refresh or trouble."""
        for ws in list(self._sockets):
            await ws.close(code=1001, message=b"fake slack going away")

    # -- the wire ----------------------------------------------------------------------

    async def _record(self, call: ApiCall) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(dict(await request.post()))
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else params.get("token")
        await self._record(ApiCall(method, params, token, time.monotonic()))
        queued = self.failures.get(method)
        if queued:
            failure = queued.pop(0)
            return web.json_response({"ok": False, "error": failure.error}, status=failure.status, headers=failure.headers)
        expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token != expected:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        return web.json_response(self._answer(method, params))

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "chorus",
                    "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID, "is_enterprise_install": False}
        if method == "users.info":
            user = str(params.get("user"))
            if user not in self.users:
                return {"ok": False, "error": "user_not_found"}
            found: dict[str, Any] = {"id": user, "name": user.lower(), "profile": {"display_name": self.users[user]}}
            if user in self.locales and str(params.get("include_locale")).lower() in ("1", "true"):
                found["locale"] = self.locales[user]
            return {"ok": True, "user": found}
        if method == "chat.postMessage":
            ts = f"{1_700_000_000 + next(self._ts)}.000100"
            message = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": params.get("text"), "ts": ts}
            if params.get("thread_ts"):
                message["thread_ts"] = params["thread_ts"]
            return {"ok": True, "channel": params.get("channel"), "ts": ts, "message": message}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"{1_700_000_000 + next(self._ts)}.000200"}
        if method == "chat.update":
            return {"ok": True, "channel": params.get("channel"), "ts": params.get("ts"), "text": params.get("text")}
        if method == "chat.delete":
            return {"ok": True, "channel": params.get("channel"), "ts": params.get("ts")}
        if method == "conversations.replies":
            parent = self.threads.get(str(params.get("ts")))
            if parent is None:
                return {"ok": False, "error": "thread_not_found"}
            return {"ok": True, "messages": [parent], "has_more": False}
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket=t{self.connections + 1}"}
        return {"ok": False, "error": "unknown_method"}

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        async with self._changed:
            self.connections += 1
            self._sockets.append(ws)
            self._changed.notify_all()
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1,
                                      "debug_info": {"host": "fake", "approximate_connection_time": 3600},
                                      "connection_info": {"app_id": "A0001"}}))
        while self.on_connect:
            await self._send_envelope(ws, self.on_connect.pop(0))
        async for frame in ws:
            if frame.type == WSMsgType.TEXT:
                data = json.loads(frame.data)
                async with self._changed:
                    self.acks[str(data.get("envelope_id"))] = data
                    self._changed.notify_all()
        async with self._changed:
            self._changed.notify_all()
        return ws
