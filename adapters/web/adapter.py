"""`WebAdapter`: a chat page and a websocket, one chat per browser tab or client.

Owns the page route (`/`), its scripts (`/static/*.js`, the page's own modules; `/vendor/marked.umd.js`,
`/vendor/purify.min.js`), the sign-in routes (`GET|POST /login`, `POST /logout`), the upload route
(`POST /upload?chat=<id>&name=<file name>`, `adapters/web/_uploads.py`), the websocket route
(`/ws?chat=<id>`) and its JSON frames. With a token required (`WebAccess`, `adapters/web/_access.py`),
the websocket, the uploads and the sign-in POSTs answer only a signed-in client from an allowed Origin;
the page itself (a sign-in form until then), its scripts and `GET /login` (is a token required, am I
signed in?) hold no chat data and are open. Each client keeps its chat id (the page stores it in
localStorage); every chat is a DM.

Client → server: `{"type": "message", "text": ..., "client_id": ..., "attachments": [{"id", "name",
"mime_type"}]}` (ids from `/upload`). Server → client: `hello` (chat_id, upload_limit, transcript: will
`history` follow), `banner`,
`history` (the stored conversation, from the `TranscriptSource` the gateway sets, on every connect and
when a command such as `/undo` changed it), `message` (id, text), `edit` (id, text), `delete` (id),
`typing`, `error`. After `history`, the drafts still streaming are sent again as `message` frames.
Knows nothing of the gateway or agents: inbound messages go on the queue handed to `start`.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any, TypeAlias

import structlog
from aiohttp import WSMsgType, web

from adapters.base import (
    AdapterError,
    Attachment,
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
from adapters.web._transcript import LiveDrafts, ShownAnswers, TranscriptSource
from adapters.web._uploads import (
    CHAT_BUDGET_FILES,
    MAX_ATTACHMENTS,
    STORE_BUDGET_FILES,
    UPLOAD_TEXTS,
    UploadsFull,
    UploadStore,
    too_large_text,
)

log = structlog.get_logger(__name__)

Handler: TypeAlias = Callable[[web.Request], Awaitable[web.StreamResponse]]

PLATFORM = "web"
MAX_CHAT_ID_CHARS = 64
MAX_INBOUND_CHARS = 100_000
MAX_LOGIN_BYTES = 4096
MAX_LANGUAGE_CHARS = 35  # a BCP 47 tag (navigator.language) is short
WEB_LIMITS = PlatformLimits(max_message_chars=20_000, supports_edit=True, min_edit_interval_seconds=1.0)


# The page's scripts: its own modules under /static/, the vendored ones (from npm, licences beside them)
# under /vendor/; nothing else of the package is served.
SCRIPTS = {
    "/static/chat.js": "chat.js", "/static/bubbles.js": "bubbles.js", "/static/attach.js": "attach.js",
    "/vendor/marked.umd.js": "marked.umd.js", "/vendor/purify.min.js": "purify.min.js",
}


def _page() -> str:
    return resources.files("adapters.web").joinpath("page.html").read_text(encoding="utf-8")


def _script_text(name: str) -> str:
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
        uploads_dir: where uploaded files wait for their turn (None: a temporary directory, removed at stop).
        max_upload_bytes: the largest upload taken (`gateway.max_attachment_bytes`); a larger one is refused.
    """

    name = PLATFORM
    limits = WEB_LIMITS

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 8080, banner: str = "", limits: ListenerLimits | None = None,
        access: WebAccess | None = None, uploads_dir: Path | None = None, max_upload_bytes: int = 10_000_000,
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
        self._uploads_dir = uploads_dir
        self._uploads: UploadStore | None = None
        self.max_upload_bytes = max_upload_bytes
        self._drafts = LiveDrafts()
        self._answers = ShownAnswers()
        self.transcript: TranscriptSource | None = None  # set by the gateway: the stored conversation of a chat

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
        directory = self._uploads_dir or Path(tempfile.mkdtemp(prefix="chorus-web-uploads-"))
        self._uploads = UploadStore(directory, chat_budget=CHAT_BUDGET_FILES * self.max_upload_bytes,
                                    store_budget=STORE_BUDGET_FILES * self.max_upload_bytes)
        await asyncio.to_thread(self._uploads.open)
        # The body cap is checked while the body arrives (aiohttp stops reading past it): an upload's size.
        app = web.Application(client_max_size=max(MAX_LOGIN_BYTES, self.max_upload_bytes) + 1,
                              middlewares=[self._upload_cap])  # outside the listener's body deadline
        app.router.add_get("/", self._index)
        for path in SCRIPTS:
            app.router.add_get(path, self._script)
        app.router.add_post("/upload", self._upload)
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
        if self._uploads_dir is None and self._uploads is not None:
            shutil.rmtree(self._uploads.directory, ignore_errors=True)

    async def _index(self, _request: web.Request) -> web.Response:
        return web.Response(text=_page(), content_type="text/html")

    async def _script(self, request: web.Request) -> web.Response:
        # The page's own modules are revalidated (they change with the gateway); the vendored ones are cached.
        cache = "max-age=3600" if request.path.startswith("/vendor/") else "no-cache"
        return web.Response(text=_script_text(SCRIPTS[request.path]), content_type="text/javascript",
                            headers={"Cache-Control": cache})

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
            await ws.send_json({"type": "hello", "chat_id": chat_id, "upload_limit": self.max_upload_bytes,
                                "transcript": self.transcript is not None})
            if self.banner:
                await ws.send_json({"type": "banner", "text": self.banner})
            await self._send_transcript(chat_id, ws)
            async for frame in ws:
                if frame.type == WSMsgType.TEXT:
                    await self._on_frame(chat_id, frame.data, ws)
        finally:
            self._sockets[chat_id].discard(ws)
            if not self._sockets[chat_id]:
                del self._sockets[chat_id]
        return ws

    async def _send_transcript(self, chat_id: str, ws: web.WebSocketResponse) -> None:
        """The stored conversation, then this run's drafts still streaming (each once, under its id)."""
        if self.transcript is None:
            return
        try:
            lines = await self.transcript(chat_id)
        except Exception as exc:  # noqa: BLE001 - the page keeps what it shows; the chat itself still works
            log.warning("web.transcript_failed", error=type(exc).__name__)
            await ws.send_json({"type": "history", "messages": None})  # unavailable: the page sends what it holds
            return
        await ws.send_json({"type": "history", "messages": [line.as_frame() for line in lines]})
        if self._answers.shown(ws, lines):
            return  # the last question is answered in the store: a draft still open is that answer's
        for message_id, text in self._drafts.of(chat_id):
            await ws.send_json({"type": "message", "id": message_id, "text": text})

    async def transcript_changed(self, chat_id: str) -> None:
        """The stored conversation changed other than by a new reply (`/undo`, `/new`): every page redraws it."""
        for ws in list(self._sockets.get(chat_id, ())):
            if not ws.closed:
                try:
                    await self._send_transcript(chat_id, ws)
                except (ConnectionError, RuntimeError):
                    continue

    def _too_large(self) -> web.Response:
        return web.json_response({"error": too_large_text(self.max_upload_bytes)}, status=413)

    @web.middleware
    async def _upload_cap(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """An upload over the cap gets the one-line refusal: at once on its Content-Length, else when the body
        reading stops at the cap (aiohttp's `client_max_size`, checked while the body arrives)."""
        if request.path != "/upload":
            return await handler(request)
        if (request.content_length or 0) > self.max_upload_bytes:
            return self._too_large()
        try:
            return await handler(request)
        except web.HTTPRequestEntityTooLarge:
            return self._too_large()

    async def _upload(self, request: web.Request) -> web.Response:
        """One file, raw in the body; its id for the next message frame, or one short line why not."""
        refusal = self._refusal(request, need_sign_in=True)
        if refusal is not None:
            return refusal
        chat_id = _valid_chat_id(request.query.get("chat"))
        if chat_id is None or self._uploads is None:
            return web.json_response({"error": "expected /upload?chat=<chat id>&name=<file name>"}, status=400)
        data = await request.read()  # read already, within the cap (`_upload_cap`)
        if len(data) > self.max_upload_bytes:
            return self._too_large()
        if not data:
            return web.json_response({"error": UPLOAD_TEXTS["empty"]}, status=400)
        mime_type = request.headers.get("Content-Type", "").split(";", 1)[0].strip()[:100]
        try:
            upload = await asyncio.to_thread(self._uploads.put, chat_id, request.query.get("name", ""), mime_type, data)
        except UploadsFull:
            log.warning("web.upload_refused", reason="upload budget full", size=len(data))
            return web.json_response({"error": UPLOAD_TEXTS["full"]}, status=429)
        log.info("web.uploaded", kind=upload.as_frame()["kind"], size=upload.size)
        return web.json_response(upload.as_frame())

    def _attachments(self, chat_id: str, raw: object) -> tuple[Attachment, ...] | str:
        """The frame's attachments (uploads of this chat), or the short line that refuses them."""
        if not isinstance(raw, list) or not raw:
            return ()
        if len(raw) > MAX_ATTACHMENTS or self._uploads is None:
            return UPLOAD_TEXTS["too_many"].format(n=MAX_ATTACHMENTS)
        found: list[Attachment] = []
        for item in raw:
            named = item if isinstance(item, dict) else {}
            attachment = self._uploads.attachment(chat_id, str(named.get("id", "")), name=str(named.get("name", "")),
                                                  mime_type=str(named.get("mime_type", ""))[:100])
            if attachment is None:
                return UPLOAD_TEXTS["not_found"]
            found.append(attachment)
        return tuple(found)

    async def fetch_attachment(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """An uploaded file's bytes (`AttachmentSource`): `AttachmentTooLarge` over `max_bytes`."""
        if self._uploads is None or attachment.ref is None:
            raise AdapterError("the web chat holds no such upload", platform=PLATFORM)
        return await asyncio.to_thread(self._uploads.read, attachment.ref, max_bytes=max_bytes, platform=PLATFORM)

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
        attachments = self._attachments(chat_id, frame.get("attachments"))
        if isinstance(attachments, str):
            await ws.send_json({"type": "error", "text": attachments})
            return
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
            attachments=attachments,
        ))
        if self._queue is not None:
            await self._queue.put(message)

    async def _broadcast(self, chat_id: str, frame: dict[str, Any], *, reply_text: str | None = None) -> int:
        """Send `frame` to the chat's pages; how many have it. `reply_text`: a finished reply, which a page
        whose transcript already holds it (it was stored before a resend reached it) counts without a copy."""
        sent = 0
        for ws in list(self._sockets.get(chat_id, ())):
            if ws.closed:
                continue
            if reply_text is not None and self._answers.take(ws, reply_text):
                sent += 1
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
            if not await self._broadcast(target.chat_id, frame, reply_text=chunk):
                raise AdapterError("the web client went away before the message was sent", platform=PLATFORM)
            self._drafts.shown(target.chat_id, message_id, chunk)
            sent.append(SentMessage(target=target, message_id=message_id))
        return sent

    async def edit(self, sent: SentMessage, text: str) -> None:
        self._drafts.shown(sent.target.chat_id, sent.message_id, text)  # a page connecting meanwhile sees it too
        frame = {"type": "edit", "id": sent.message_id, "text": text}
        if not await self._broadcast(sent.target.chat_id, frame, reply_text=text):
            raise AdapterError("no web client is connected to this chat", platform=PLATFORM)

    async def typing(self, target: ChatTarget) -> None:
        await self._broadcast(target.chat_id, {"type": "typing"})

    async def delete(self, sent: SentMessage) -> None:
        self._drafts.gone(sent.target.chat_id, sent.message_id)
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
