"""A fake Discord on loopback: the REST API (`/api/v10/...`) and the gateway websocket (`/gw`, `/resume`).

Speaks the real wire protocol to the real discord.py client: `Bot <token>`
authorization, JSON bodies answered with `Content-Type: application/json`
exactly (discord.py parses nothing else), HTTP 429 with `retry_after`,
`Via` and `X-RateLimit-*` headers; on the gateway HELLO, heartbeat ACKs,
IDENTIFY → READY + GUILD_CREATE, RESUME → replay of missed events + RESUMED
(or INVALID_SESSION when the session is gone), close code 4004 for a bad
token, and plain text frames. Events pushed while no socket is live are kept
in the session's log and replayed on RESUME, as Discord does.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.loopback import serve_loopback

TOKEN = "fake-discord-bot-token.Gx1Yz2"
DISCORD_EPOCH_MS = 1_420_070_400_000
BOT_ID = "1100000000000000001"
GUILD_ID = "1200000000000000001"
BOT_ROLE_ID = "1200000000000000050"
MODS_ROLE_ID = "1200000000000000051"
GENERAL_ID = "1300000000000000001"
RANDOM_ID = "1300000000000000002"
THREAD_A_ID = "1400000000000000001"
DM_CHANNEL_ID = "1500000000000000001"
ALICE_ID = "1600000000000000001"
BOB_ID = "1600000000000000002"
OTHER_BOT_ID = "1600000000000000003"
WAIT_SECONDS = 5.0
MESSAGE_CONTENT_INTENT = 1 << 15

Json = dict[str, Any]


def snowflake(seq: int) -> str:
    """A Discord snowflake for now (its creation time is what discord.py's `created_at` reads)."""
    return str(((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (seq & 0xFFF))


def iso_now() -> str:
    return datetime.now(UTC).isoformat()


def user(user_id: str, name: str, *, bot: bool = False) -> Json:
    return {"id": user_id, "username": name, "discriminator": "0", "global_name": name.title(),
            "avatar": None, "bot": bot, "public_flags": 0}


BOT_USER = user(BOT_ID, "chorus", bot=True)
USERS: dict[str, Json] = {
    ALICE_ID: user(ALICE_ID, "alice"),
    BOB_ID: user(BOB_ID, "bob"),
    OTHER_BOT_ID: user(OTHER_BOT_ID, "otherbot", bot=True),
}


def text_channel(channel_id: str, name: str) -> Json:
    return {"id": channel_id, "type": 0, "guild_id": GUILD_ID, "name": name, "position": 0,
            "permission_overwrites": [], "nsfw": False, "parent_id": None, "topic": None,
            "rate_limit_per_user": 0, "last_message_id": None, "flags": 0}


def thread_channel(thread_id: str, name: str, *, parent_id: str = GENERAL_ID) -> Json:
    return {"id": thread_id, "type": 11, "guild_id": GUILD_ID, "parent_id": parent_id, "owner_id": ALICE_ID,
            "name": name, "last_message_id": None, "rate_limit_per_user": 0, "message_count": 0,
            "member_count": 1, "flags": 0,
            "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                "archive_timestamp": iso_now(), "locked": False}}


def role(role_id: str, name: str, *, bot_id: str | None = None) -> Json:
    payload: Json = {"id": role_id, "name": name, "permissions": "0", "position": 1 if bot_id else 0,
                     "color": 0, "hoist": False, "managed": bot_id is not None, "mentionable": True, "flags": 0}
    if bot_id is not None:
        payload["tags"] = {"bot_id": bot_id}
    return payload


@dataclass(frozen=True)
class RestCall:
    method: str
    route: str  # the template, e.g. "POST /channels/{channel_id}/messages"
    path: str
    body: Json | None
    authorization: str | None
    at: float


@dataclass(frozen=True)
class GatewayOp:
    """One payload the client sent on the gateway, with the connection it came on."""

    connection: int
    op: int
    d: Any


@dataclass
class Failure:
    """A scripted answer for the next call of one route (default: a 429 the client must wait out)."""

    status: int = 429
    body: Json = field(default_factory=lambda: {"message": "You are being rate limited.", "retry_after": 0.3,
                                                "global": False, "code": 0})
    headers: dict[str, str] = field(default_factory=lambda: {
        "Via": "1.1 google", "Retry-After": "1", "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset-After": "0.3", "X-RateLimit-Bucket": "fakebucket", "X-RateLimit-Scope": "user"})


@dataclass
class Session:
    session_id: str
    seq: int = 0
    valid: bool = True
    log: list[tuple[int, str, Json]] = field(default_factory=list)


@dataclass
class Connection:
    index: int
    path: str
    ws: web.WebSocketResponse
    session: Session | None = None
    silent: bool = False  # half-open: reads but never answers (no ACKs, no events)


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py parses a body only when Content-Type is exactly application/json (no charset).
    return web.Response(body=json.dumps(payload).encode(), status=status,
                        headers={"Content-Type": "application/json", **(headers or {})})


class FakeDiscord:
    """Use as `async with FakeDiscord() as fake:`; point the adapter at `api_base_url` and `gateway_url`."""

    def __init__(self, *, heartbeat_interval_ms: int = 41_250) -> None:
        self.calls: list[RestCall] = []
        self.ops: list[GatewayOp] = []
        self.connections: list[Connection] = []
        self.failures: dict[str, list[Failure]] = {}
        self.posted: dict[str, Json] = {}
        self.history: dict[str, Json] = {}  # older messages GET /channels/{id}/messages/{id} serves (besides `posted`)
        self._nonces: dict[tuple[str, str], Json] = {}  # (channel, nonce) of posts made with enforce_nonce
        self.channels: dict[str, Json] = {GENERAL_ID: text_channel(GENERAL_ID, "general"),
                                          RANDOM_ID: text_channel(RANDOM_ID, "random"),
                                          THREAD_A_ID: thread_channel(THREAD_A_ID, "thread-a")}
        self.guild_threads = [THREAD_A_ID]
        self.reject_identify = False  # close 4004 on IDENTIFY even with the right token (a revoked token)
        self.port = 0
        self.commands: list[Json] = []  # the slash-command menu last PUT by the bot
        self.interaction_replies: list[Json] = []
        self.interaction_followups: list[Json] = []
        self.cdn: dict[str, bytes] = {}  # path under /attachments/ -> bytes, served like Discord's CDN
        self._heartbeat_ms = heartbeat_interval_ms
        self._sessions: dict[str, Session] = {}
        self._current: Session | None = None
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._routes: list[tuple[str, str, re.Pattern[str], Callable[..., Awaitable[web.Response]]]] = [
            ("GET", "/users/@me", re.compile(r"/users/@me"), self._me),
            ("GET", "/oauth2/applications/@me", re.compile(r"/oauth2/applications/@me"), self._application),
            ("GET", "/channels/{channel_id}", re.compile(r"/channels/(\d+)"), self._get_channel),
            ("POST", "/channels/{channel_id}/messages", re.compile(r"/channels/(\d+)/messages"), self._create),
            ("GET", "/channels/{channel_id}/messages/{message_id}", re.compile(r"/channels/(\d+)/messages/(\d+)"),
             self._get_message),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", re.compile(r"/channels/(\d+)/messages/(\d+)"), self._edit),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", re.compile(r"/channels/(\d+)/messages/(\d+)"), self._delete),
            ("POST", "/channels/{channel_id}/typing", re.compile(r"/channels/(\d+)/typing"), self._typing),
            ("PUT", "/applications/{application_id}/commands", re.compile(r"/applications/(\d+)/commands"),
             self._put_commands),
            ("POST", "/interactions/{interaction_id}/{token}/callback", re.compile(r"/interactions/(\d+)/([^/]+)/callback"),
             self._interaction_callback),
            ("POST", "/webhooks/{application_id}/{token}", re.compile(r"/webhooks/(\d+)/([^/?]+)"), self._followup),
        ]

    @property
    def api_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gw"

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_route("*", "/api/v10/{tail:.*}", self._api)
        app.router.add_get("/gw", self._gateway)
        app.router.add_get("/attachments/{path:.+}", self._cdn)
        app.router.add_get("/resume", self._gateway)
        self._runner, self.port = await serve_loopback(app)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for connection in self.connections:
            if not connection.ws.closed:
                await connection.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- test helpers ----------------------------------------------------------------

    def new_id(self) -> str:
        return snowflake(next(self._ids))

    def fail_next(self, route: str, failure: Failure) -> None:
        """Answer the next call of `route` (e.g. "POST /channels/{channel_id}/messages") with `failure`."""
        self.failures.setdefault(route, []).append(failure)

    def calls_to(self, route: str) -> list[RestCall]:
        return [call for call in self.calls if call.route == route]

    def client_ops(self, op: int) -> list[GatewayOp]:
        return [entry for entry in self.ops if entry.op == op]

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = WAIT_SECONDS) -> None:
        """Wait until `predicate()` holds (re-checked on every REST call, gateway payload and connection)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    def message(
        self,
        content: str,
        *,
        channel_id: str = GENERAL_ID,
        author: Json | None = None,
        guild: bool = True,
        mentions: tuple[Json, ...] = (),
        mention_roles: tuple[str, ...] = (),
        reply_to: Json | None = None,
        message_type: int = 0,
        attachments: tuple[Json, ...] = (),
    ) -> Json:
        """A MESSAGE_CREATE payload as Discord sends it (`mentions` filled in, as Discord does)."""
        author = author or USERS[ALICE_ID]
        payload: Json = {
            "id": self.new_id(), "channel_id": channel_id, "author": author, "content": content,
            "timestamp": iso_now(), "edited_timestamp": None, "tts": False, "mention_everyone": False,
            "mentions": [dict(m) for m in mentions], "mention_roles": list(mention_roles),
            "attachments": list(attachments), "embeds": [], "pinned": False, "type": message_type, "flags": 0,
            "components": [],
        }
        if guild:
            payload["guild_id"] = GUILD_ID
            payload["member"] = {"roles": [], "joined_at": iso_now(), "deaf": False, "mute": False, "flags": 0,
                                 "nick": None}
        if reply_to is not None:
            payload["type"] = 19
            payload["message_reference"] = {"type": 0, "message_id": reply_to["id"],
                                            "channel_id": reply_to["channel_id"], "guild_id": GUILD_ID if guild else None}
            payload["referenced_message"] = reply_to
        return payload

    async def dispatch(self, event: str, data: Json) -> int:
        """Send a DISPATCH on the current session; kept for replay if no socket is live. Returns its seq."""
        await self.wait_until(lambda: self._current is not None)
        session = self._current
        assert session is not None
        session.seq += 1
        session.log.append((session.seq, event, data))
        live = self._live(session)
        if live is not None:
            await self._send(live.ws, {"op": 0, "t": event, "s": session.seq, "d": data})
        return session.seq

    async def send_message(self, payload: Json) -> int:
        return await self.dispatch("MESSAGE_CREATE", payload)

    async def edit_message(self, payload: Json, content: str) -> Json:
        """Dispatch MESSAGE_UPDATE for `payload` with new `content` (as Discord sends a user's edit); returns it."""
        edited = {**payload, "content": content, "edited_timestamp": iso_now()}
        await self.dispatch("MESSAGE_UPDATE", edited)
        return edited

    async def send_raw(self, text: str) -> None:
        """Send a raw text frame on the live socket (for malformed-payload tests)."""
        await self.wait_until(lambda: self._current is not None and self._live(self._current) is not None)
        assert self._current is not None
        live = self._live(self._current)
        assert live is not None
        await live.ws.send_str(text)

    async def drop(self, *, code: int = 4000, invalidate: bool = False) -> None:
        """Close the live socket from the server side; `invalidate` forgets the session (RESUME then fails)."""
        if invalidate and self._current is not None:
            self._current.valid = False
        for connection in self.connections:
            if not connection.ws.closed:
                await connection.ws.close(code=code, message=b"fake discord closing")

    def go_silent(self) -> None:
        """Make the live connection half-open: it stops answering heartbeats and events wait for a RESUME."""
        for connection in self.connections:
            connection.silent = not connection.ws.closed

    async def create_thread(self, thread_id: str, name: str, *, parent_id: str = GENERAL_ID) -> None:
        """Create a thread the way Discord announces it (THREAD_CREATE) and serve it over REST."""
        self.channels[thread_id] = thread_channel(thread_id, name, parent_id=parent_id)
        await self.dispatch("THREAD_CREATE", {**self.channels[thread_id], "newly_created": True})

    # -- REST ----------------------------------------------------------------------------

    def attachment(self, filename: str, data: bytes, content_type: str) -> Json:
        """An attachment payload whose url this fake serves (as the CDN would)."""
        attachment_id = self.new_id()
        path = f"{GENERAL_ID}/{attachment_id}/{filename}"
        self.cdn[path] = data
        return {"id": attachment_id, "filename": filename, "size": len(data), "content_type": content_type,
                "url": f"http://127.0.0.1:{self.port}/attachments/{path}",
                "proxy_url": f"http://127.0.0.1:{self.port}/attachments/{path}"}

    def slash_command(self, name: str, args: str = "", *, channel_id: str = GENERAL_ID, author: Json | None = None,
                      locale: str = "en-US") -> Json:
        """An INTERACTION_CREATE payload for the slash command `name` picked from the menu in a guild channel
        (`locale`: the language of the user's Discord client)."""
        member = {"user": author or USERS[ALICE_ID], "roles": [], "joined_at": iso_now(), "deaf": False, "mute": False,
                  "flags": 0, "nick": None, "permissions": "0"}
        options = [{"name": "args", "type": 3, "value": args}] if args else []
        return {"id": self.new_id(), "application_id": BOT_ID, "type": 2, "token": f"itoken-{self.new_id()}",
                "version": 1, "guild_id": GUILD_ID, "channel_id": channel_id, "member": member,
                "channel": self.channels.get(channel_id, text_channel(channel_id, "general")),
                "data": {"id": self.new_id(), "name": name, "type": 1, "options": options},
                "locale": locale, "guild_locale": "en-US", "app_permissions": "0", "entitlements": [],
                "authorizing_integration_owners": {}, "context": 0, "attachment_size_limit": 10485760}

    async def _put_commands(self, body: Json | None, application_id: str) -> web.Response:
        self.commands = list(body or [])
        return _json([{**c, "id": self.new_id(), "application_id": application_id, "version": "1"}
                      for c in self.commands])

    async def _interaction_callback(self, body: Json | None, interaction_id: str, token: str) -> web.Response:
        self.interaction_replies.append(body or {})
        await self._record()
        # `with_response=1`: Discord answers with the interaction callback object.
        return _json({"interaction": {"id": interaction_id, "type": 2, "response_message_loading": False,
                                      "response_message_ephemeral": True}})

    async def _followup(self, body: Json | None, application_id: str, token: str) -> web.Response:
        """A followup message to an acknowledged interaction (ephemeral when flags has 64)."""
        self.interaction_followups.append(body or {})
        await self._record()
        return _json({"id": self.new_id(), "channel_id": GENERAL_ID, "content": (body or {}).get("content", ""),
                      "author": BOT_USER, "timestamp": iso_now(), "type": 0, "flags": (body or {}).get("flags", 0),
                      "attachments": [], "embeds": [], "mentions": [], "mention_roles": [], "pinned": False,
                      "mention_everyone": False, "tts": False, "edited_timestamp": None})

    def button_press(self, custom_id: str, *, message_id: str, channel_id: str = GENERAL_ID,
                     author: Json | None = None) -> Json:
        """An INTERACTION_CREATE payload for a press on the button `custom_id` under message `message_id`."""
        payload = self.slash_command("unused", channel_id=channel_id, author=author)
        message = self.posted.get(message_id) or {"id": message_id, "channel_id": channel_id}
        return {**payload, "type": 3, "message": message,
                "data": {"custom_id": custom_id, "component_type": 2}}

    async def _cdn(self, request: web.Request) -> web.Response:
        data = self.cdn.get(request.match_info["path"])
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def _record(self, call: RestCall | GatewayOp | None = None) -> None:
        async with self._changed:
            if isinstance(call, RestCall):
                self.calls.append(call)
            elif isinstance(call, GatewayOp):
                self.ops.append(call)
            self._changed.notify_all()

    async def _api(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body = await request.json() if request.can_read_body and request.content_type == "application/json" else None
        for method, template, pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if method != request.method or match is None:
                continue
            route = f"{method} {template}"
            await self._record(RestCall(method, route, path, body, request.headers.get("Authorization"), time.monotonic()))
            queued = self.failures.get(route)
            if queued:
                failure = queued.pop(0)
                return _json(failure.body, failure.status, failure.headers)
            # Interaction callbacks and followups are authorised by the token in their path, not the bot token.
            if not route.startswith(("POST /interactions/", "POST /webhooks/")) and request.headers.get("Authorization") != f"Bot {TOKEN}":
                return _json({"message": "401: Unauthorized", "code": 0}, 401)
            return await handler(body, *match.groups())
        await self._record(RestCall(request.method, "unknown", path, body, request.headers.get("Authorization"), time.monotonic()))
        return _json({"message": "404: Not Found", "code": 0}, 404)

    async def _me(self, body: Json | None) -> web.Response:
        return _json({**BOT_USER, "verified": True, "mfa_enabled": False, "flags": 0})

    async def _application(self, body: Json | None) -> web.Response:
        return _json({"id": BOT_ID, "name": "Chorus", "description": "", "icon": None, "bot_public": True,
                      "bot_require_code_grant": False, "owner": USERS[ALICE_ID], "verify_key": "00", "flags": 0,
                      "team": None, "summary": ""})

    async def _get_channel(self, body: Json | None, channel_id: str) -> web.Response:
        if channel_id not in self.channels:
            return _json({"message": "Unknown Channel", "code": 10003}, 404)
        return _json(self.channels[channel_id])

    async def _create(self, body: Json | None, channel_id: str) -> web.Response:
        body = body or {}
        nonce = body.get("nonce")
        if body.get("enforce_nonce") and nonce is not None and (channel_id, str(nonce)) in self._nonces:
            return _json(self._nonces[(channel_id, str(nonce))])  # Discord: the first message, no second post
        message = self.message(str(body.get("content") or ""), channel_id=channel_id, author=BOT_USER,
                               guild=channel_id != DM_CHANNEL_ID)
        if body.get("message_reference"):
            message["type"] = 19
            message["message_reference"] = body["message_reference"]
        self.posted[message["id"]] = message
        if body.get("enforce_nonce") and nonce is not None:
            self._nonces[(channel_id, str(nonce))] = message
        return _json(message)

    async def _get_message(self, body: Json | None, channel_id: str, message_id: str) -> web.Response:
        found = self.posted.get(message_id) or self.history.get(message_id)
        if found is None:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        return _json(found)

    async def _edit(self, body: Json | None, channel_id: str, message_id: str) -> web.Response:
        if message_id not in self.posted:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        self.posted[message_id] = {**self.posted[message_id], "content": (body or {}).get("content"),
                                   "edited_timestamp": iso_now()}
        return _json(self.posted[message_id])

    async def _delete(self, body: Json | None, channel_id: str, message_id: str) -> web.Response:
        if self.posted.pop(message_id, None) is None:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        return web.Response(status=204)

    async def _typing(self, body: Json | None, channel_id: str) -> web.Response:
        return web.Response(status=204)

    # -- gateway -------------------------------------------------------------------------

    def _live(self, session: Session) -> Connection | None:
        for connection in reversed(self.connections):
            if connection.session is session and not connection.ws.closed and not connection.silent:
                return connection
        return None

    @staticmethod
    async def _send(ws: web.WebSocketResponse, payload: Json) -> None:
        await ws.send_str(json.dumps(payload))

    async def _emit(self, connection: Connection, session: Session, event: str, data: Json) -> None:
        session.seq += 1
        session.log.append((session.seq, event, data))
        await self._send(connection.ws, {"op": 0, "t": event, "s": session.seq, "d": data})

    def _guild_create(self) -> Json:
        return {
            "id": GUILD_ID, "name": "Fake Guild", "icon": None, "owner_id": ALICE_ID, "unavailable": False,
            "member_count": 3, "large": False, "features": [], "verification_level": 0, "afk_timeout": 300,
            "roles": [role(GUILD_ID, "@everyone"), role(BOT_ROLE_ID, "Chorus", bot_id=BOT_ID),
                      role(MODS_ROLE_ID, "mods")],
            "channels": [self.channels[GENERAL_ID], self.channels[RANDOM_ID]],
            "threads": [self.channels[t] for t in self.guild_threads],
            "members": [{"user": BOT_USER, "roles": [BOT_ROLE_ID], "joined_at": iso_now(), "deaf": False,
                         "mute": False, "flags": 0}],
            "emojis": [], "stickers": [], "voice_states": [], "presences": [], "stage_instances": [],
            "guild_scheduled_events": [], "soundboard_sounds": [], "joined_at": iso_now(),
        }

    async def _identify(self, connection: Connection, d: Json) -> None:
        session = Session(session_id=f"session-{len(self._sessions) + 1}")
        self._sessions[session.session_id] = session
        self._current = session
        connection.session = session
        ready = {"v": 10, "user": BOT_USER, "guilds": [{"id": GUILD_ID, "unavailable": True}],
                 "session_id": session.session_id, "session_type": "normal",
                 "resume_gateway_url": f"ws://127.0.0.1:{self.port}/resume",
                 "application": {"id": BOT_ID, "flags": 0}, "private_channels": [], "relationships": []}
        await self._emit(connection, session, "READY", ready)
        await self._emit(connection, session, "GUILD_CREATE", self._guild_create())

    async def _resume(self, connection: Connection, d: Json) -> None:
        session = self._sessions.get(str(d.get("session_id")))
        if session is None or not session.valid or d.get("token") != TOKEN:
            await self._send(connection.ws, {"op": 9, "d": False, "s": None, "t": None})
            return
        connection.session = session
        self._current = session
        after = int(d.get("seq") or 0)
        for seq, event, data in list(session.log):
            if seq > after:
                await self._send(connection.ws, {"op": 0, "t": event, "s": seq, "d": data})
        await self._emit(connection, session, "RESUMED", {})

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        connection = Connection(index=len(self.connections), path=request.path, ws=ws)
        async with self._changed:
            self.connections.append(connection)
            self._changed.notify_all()
        await self._send(ws, {"op": 10, "d": {"heartbeat_interval": self._heartbeat_ms}, "s": None, "t": None})
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            payload = json.loads(frame.data)
            op, d = payload.get("op"), payload.get("d")
            await self._record(GatewayOp(connection.index, op, d))
            if connection.silent:
                continue
            if op == 1:
                await self._send(ws, {"op": 11, "d": None, "s": None, "t": None})
            elif op == 2 and (self.reject_identify or d.get("token") != TOKEN):
                await ws.close(code=4004, message=b"Authentication failed.")
            elif op == 2:
                await self._identify(connection, d)
            elif op == 6:
                await self._resume(connection, d)
        await self._record()
        return ws
