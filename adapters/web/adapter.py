"""`WebAdapter`: a chat page and a websocket, one chat per browser tab or client.

Owns the page route (`/`), its vendored scripts (`/vendor/marked.umd.js`, `/vendor/purify.min.js`), the sign-in routes (`GET|POST /login`, `POST /logout`),
the websocket route (`/ws?chat=<id>`) and its JSON frames. With a token
required (`WebAccess`, `adapters/web/_access.py`), the websocket and the
sign-in POSTs answer only a signed-in client from an allowed Origin; the page
itself (a sign-in form until then) and `GET /login` (is a token required, am I
signed in?) hold no chat data and are open. Each client keeps its chat id (the page stores it in localStorage);
every chat is a DM. Client → server: `{"type": "message", "text": ..., "client_id": ...}`.
Server → client: `hello`, `banner`, `message` (id, text), `edit` (id, text),
`delete` (id), `typing`. Knows nothing of the gateway or agents: inbound
messages go on the queue handed to `start`.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections import defaultdict
from importlib import resources
from typing import Any

import structlog
from aiohttp import WSMsgType, web

from adapters.base import (
    AdapterError,
    ChatTarget,
    InboundMessage,
    PlatformLimits,
    ProbeResult,
    SentMessage,
)
from adapters.listeners import ListenerLimits, serve
from adapters.normalize import normalize_inbound
from adapters.text import split_text
from adapters.web._access import SESSION_COOKIE, WebAccess

log = structlog.get_logger(__name__)

PLATFORM = "web"
MAX_CHAT_ID_CHARS = 64
MAX_INBOUND_CHARS = 100_000
MAX_LOGIN_BYTES = 4096
MAX_LANGUAGE_CHARS = 35  # a BCP 47 tag (navigator.language) is short
WEB_LIMITS = PlatformLimits(max_message_chars=20_000, supports_edit=True, min_edit_interval_seconds=1.0)


# The page's vendored scripts (from npm, licences beside them): served under /vendor/, nothing else is.
VENDORED = ("marked.umd.js", "purify.min.js")


def _page() -> str:
    return resources.files("adapters.web").joinpath("page.html").read_text(encoding="utf-8")


def _vendored(name: str) -> str:
    return resources.files("adapters.web").joinpath(name).read_text(encoding="utf-8")


def _valid_chat_id(raw: str | None) -> str | None:
    if not raw or len(raw) > MAX_CHAT_ID_CHARS:
        return None
    return raw if all(ch.isalnum() or ch in "-_" for ch in raw) else None


def _language_tag(value: object) -> str | None:
    """The page's `navigator.language` ("de-DE"), if it sent a plausible one."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_LANGUAGE_CHARS:
        return None
    return value if all(part.isalnum() for part in value.replace("_", "-").split("-")) else None


class WebAdapter:
    """The web chat.

    Args:
        host: address to listen on (loopback by default).
        port: TCP port; 0 picks a free one (read `port` after `start`).
        banner: a line shown at the top of the page (e.g. "no model configured: set …").
        access: the token a client must present (None: no login) and the extra allowed Origins.
    """

    name = PLATFORM
    limits = WEB_LIMITS

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 8080, banner: str = "", limits: ListenerLimits | None = None,
        access: WebAccess | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.banner = banner
        self._limits = limits or ListenerLimits()
        self.access = access or WebAccess()
        self._runner: web.AppRunner | None = None
        self._queue: asyncio.Queue[InboundMessage] | None = None
        self._sockets: defaultdict[str, set[web.WebSocketResponse]] = defaultdict(set)
        self._ids = itertools.count(1)
        # Ids unique across restarts: a page kept open (or reloaded) never confuses this run's
        # message 3 with the last run's.
        self._run = uuid.uuid4().hex[:8]

    @property
    def started(self) -> bool:
        return self._runner is not None

    def connected(self, chat_id: str) -> int:
        """How many clients are connected to `chat_id`."""
        return len(self._sockets.get(chat_id, ()))

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        if self._runner is not None:
            raise RuntimeError("WebAdapter is already started; call stop() first")
        self._queue = inbound
        app = web.Application(client_max_size=4 * MAX_INBOUND_CHARS)
        app.router.add_get("/", self._index)
        for name in VENDORED:
            app.router.add_get(f"/vendor/{name}", self._script)
        app.router.add_get("/login", self._login_state)
        app.router.add_post("/login", self._login)
        app.router.add_post("/logout", self._logout)
        app.router.add_get("/ws", self._websocket)
        self._runner, self.port = await serve(app, self.host, self.port, self._limits)
        log.info("web.started", url=f"http://{self.host}:{self.port}/")

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        for sockets in list(self._sockets.values()):
            for ws in list(sockets):
                await ws.close()
        self._sockets.clear()
        await runner.cleanup()

    async def _index(self, _request: web.Request) -> web.Response:
        return web.Response(text=_page(), content_type="text/html")

    async def _script(self, request: web.Request) -> web.Response:
        name = request.path.rsplit("/", 1)[-1]
        return web.Response(text=_vendored(name), content_type="text/javascript",
                            headers={"Cache-Control": "max-age=3600"})

    def _refusal(self, request: web.Request, *, need_sign_in: bool) -> web.Response | None:
        """403 for a foreign Origin, 401 for a client not signed in (when `need_sign_in`), else None."""
        origin = request.headers.get("Origin")
        if not self.access.origin_allowed(origin, request.headers.get("Host")):
            log.warning("web.refused", reason="origin", origin=origin[:200] if origin else None, path=request.path)
            return web.json_response({"error": "this Origin may not use the chat (platforms.web.allowed_origins)"},
                                     status=403)
        if need_sign_in and not self.access.signed_in(request.headers, request.cookies):
            log.info("web.refused", reason="sign_in", path=request.path)
            return web.json_response({"error": "sign in first: POST /login with the web chat token"}, status=401)
        return None

    async def _login_state(self, request: web.Request) -> web.Response:
        signed_in = self.access.signed_in(request.headers, request.cookies)
        return web.json_response({"required": self.access.required, "signed_in": signed_in})

    async def _login(self, request: web.Request) -> web.Response:
        refusal = self._refusal(request, need_sign_in=False)
        if refusal is not None:
            return refusal
        if not self.access.required:
            return web.json_response({"ok": True})
        raw = await request.read()  # read once: the listener's body deadline may have read it already (cached)
        try:
            body: Any = json.loads(raw) if len(raw) <= MAX_LOGIN_BYTES else None
        except (ValueError, RecursionError):
            body = None
        offered = body.get("token") if isinstance(body, dict) else None
        if not isinstance(offered, str) or not self.access.token_matches(offered):
            log.info("web.login_failed")
            return web.json_response({"error": "wrong token"}, status=401)
        response = web.json_response({"ok": True})
        response.set_cookie(SESSION_COOKIE, self.access.session_value(), httponly=True, samesite="Strict",
                            secure=request.secure, path="/")
        return response

    async def _logout(self, request: web.Request) -> web.Response:
        refusal = self._refusal(request, need_sign_in=False)
        if refusal is not None:
            return refusal
        response = web.json_response({"ok": True})
        response.del_cookie(SESSION_COOKIE, path="/")
        return response

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        refusal = self._refusal(request, need_sign_in=True)
        if refusal is not None:
            return refusal  # before the upgrade: nothing of the chat is sent
        ws = web.WebSocketResponse(heartbeat=30.0)
        await ws.prepare(request)
        chat_id = _valid_chat_id(request.query.get("chat")) or uuid.uuid4().hex
        self._sockets[chat_id].add(ws)
        try:
            await ws.send_json({"type": "hello", "chat_id": chat_id})
            if self.banner:
                await ws.send_json({"type": "banner", "text": self.banner})
            async for frame in ws:
                if frame.type == WSMsgType.TEXT:
                    await self._on_frame(chat_id, frame.data, ws)
        finally:
            self._sockets[chat_id].discard(ws)
            if not self._sockets[chat_id]:
                del self._sockets[chat_id]
        return ws

    async def _on_frame(self, chat_id: str, data: str, ws: web.WebSocketResponse) -> None:
        try:
            frame: Any = json.loads(data)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deeply to parse
            await ws.send_json({"type": "error", "text": "frames must be JSON objects"})
            return
        if not isinstance(frame, dict) or frame.get("type") != "message" or not isinstance(frame.get("text"), str):
            await ws.send_json({"type": "error", "text": 'expected {"type": "message", "text": "..."}'})
            return
        text = frame["text"][:MAX_INBOUND_CHARS]
        client_id = str(frame.get("client_id") or uuid.uuid4().hex)[:MAX_CHAT_ID_CHARS]
        message = normalize_inbound(InboundMessage(
            platform=PLATFORM,
            chat_id=chat_id,
            chat_type="dm",
            user_id=chat_id,
            user_name=str(frame.get("name") or "you")[:64],
            text=text,
            message_id=client_id,
            timestamp=time.time(),
            delivery_id=f"{PLATFORM}:{chat_id}:{client_id}",
            language=_language_tag(frame.get("language")),
        ))
        if self._queue is not None:
            await self._queue.put(message)

    async def _broadcast(self, chat_id: str, frame: dict[str, Any]) -> int:
        sent = 0
        for ws in list(self._sockets.get(chat_id, ())):
            if ws.closed:
                continue
            try:
                await ws.send_json(frame)
                sent += 1
            except (ConnectionError, RuntimeError):
                continue
        return sent

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        """Send to every client of the chat; with none connected, raise so the reply stays pending."""
        if not self.connected(target.chat_id):
            raise AdapterError("no web client is connected to this chat", platform=PLATFORM)
        sent: list[SentMessage] = []
        for chunk in split_text(text, self.limits.max_message_chars) or [""]:
            message_id = f"{self._run}-{next(self._ids)}"
            frame = {"type": "message", "id": message_id, "text": chunk, "reply_to": reply_to}
            if not await self._broadcast(target.chat_id, frame):
                raise AdapterError("the web client went away before the message was sent", platform=PLATFORM)
            sent.append(SentMessage(target=target, message_id=message_id))
        return sent

    async def edit(self, sent: SentMessage, text: str) -> None:
        if not await self._broadcast(sent.target.chat_id, {"type": "edit", "id": sent.message_id, "text": text}):
            raise AdapterError("no web client is connected to this chat", platform=PLATFORM)

    async def typing(self, target: ChatTarget) -> None:
        await self._broadcast(target.chat_id, {"type": "typing"})

    async def delete(self, sent: SentMessage) -> None:
        await self._broadcast(sent.target.chat_id, {"type": "delete", "id": sent.message_id})

    def routes(self) -> list[web.RouteDef]:
        return []  # nothing to serve beside the admin routes

    @property
    def can_send(self) -> bool:
        return True

    async def probe(self) -> ProbeResult:
        if self._runner is None:
            return ProbeResult(PLATFORM, False, "not started")
        return ProbeResult(PLATFORM, True, f"serving http://{self.host}:{self.port}/")


__all__ = ["WEB_LIMITS", "WebAdapter"]
