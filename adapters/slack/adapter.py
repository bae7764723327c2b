"""`SlackAdapter`: Slack (Events API over HTTP, or Socket Mode) as a `PlatformAdapter`.

Owns the Bolt app's lifecycle, the inbound path (Bolt listener → `classify`
→ de-duplication → queue) and the outbound calls (chat.postMessage,
chat.update, chat.delete, auth.test). Knows nothing of agents, sessions or the
gateway: it only fills an `asyncio.Queue[InboundMessage]`.

Documented choices:
- Message limit: 4,000 characters per message (`SLACK_MESSAGE_CHARS`). Slack
  accepts up to 40,000 in `text` but recommends 4,000 and truncates beyond
  40,000; longer replies are split with `adapters.text.split_text`.
- `typing()` is a no-op: bots on the Events API / Socket Mode have no typing
  indicator (the RTM one is gone; `assistant.threads.setStatus` exists only
  for AI-assistant apps). The gateway's streamed edits show progress instead.
- `send(..., reply_to=...)` without a thread posts into the thread of
  `reply_to`: a Slack "reply" is a thread reply.
- One post reaches us twice when the app subscribes to both `app_mention`
  and `message.*`; the second is dropped here (channel+ts, bounded memory)
  and both carry `delivery_id = "slack:<channel>:<ts>"` so the gateway's
  cross-process de-duplication collapses them too. Slack's redeliveries are
  dropped by `event_id` (HTTP retries are acked without dispatch).
- Edits are throttled to one per `min_edit_interval` seconds per channel.
"""
from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal

import structlog
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier

from adapters.base import (
    AdapterError,
    Attachment,
    BotCommand,
    ChatTarget,
    Choice,
    InboundMessage,
    Liveness,
    PlatformLimits,
    ProbeResult,
    Quote,
    Reaction,
    SentMessage,
)
from adapters.decisions import Accepted, RecentKeys
from adapters.fetch import FileFetcher
from adapters.liveness import LivenessClock
from adapters.normalize import clean_line, clean_text

from ._actions import ACTION_PREFIX, MAX_TEXT_CHARS, action_inbound, choice_blocks
from ._api import build_client, translate
from ._commands import command_inbound
from ._events import EDIT_SUBTYPE, PLATFORM, classify, classify_edit
from ._files import DEFAULT_FILE_HOSTS, download, file_policy
from ._http import handle_events
from ._mrkdwn import from_slack, split_mrkdwn, to_mrkdwn

log = structlog.get_logger(__name__)

SLACK_MESSAGE_CHARS = 4_000
DEFAULT_EVENTS_PATH = "/slack/events"
DEDUP_CAPACITY = 4_096
NAME_CACHE_SIZE = 1_024
SOCKET_CONNECT_TIMEOUT = 15.0
DISCONNECTED_LIMIT = 30.0  # seconds without a connection before the adapter reports itself down
Mode = Literal["events", "socket"]


@dataclass(frozen=True, slots=True)
class SlackIdentity:
    """Who the bot is, from auth.test."""

    user_id: str
    bot_id: str | None
    team_id: str | None
    user_name: str


class SlackAdapter:
    """Slack as a `PlatformAdapter`; construct, then `start(queue)` … `stop()` (repeatable)."""

    name = PLATFORM
    limits = PlatformLimits(
        max_message_chars=SLACK_MESSAGE_CHARS, supports_edit=True, min_edit_interval_seconds=1.0, markup="mrkdwn",
        throttles_edits=True,  # `_edit_slot` spaces edits per channel
    )

    def __init__(
        self,
        *,
        bot_token: str,
        signing_secret: str | None = None,
        app_token: str | None = None,
        mode: Mode = "events",
        api_base_url: str | None = None,
        events_path: str = DEFAULT_EVENTS_PATH,
        thread_replies: bool = True,
        min_edit_interval: float = 1.0,
        max_retry_after: float = 10.0,
        socket_ping_interval: float = 10.0,
        commands: tuple[BotCommand, ...] = (),
        file_hosts: Sequence[str] = DEFAULT_FILE_HOSTS,
        dedup_capacity: int = DEDUP_CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Only assigns; no I/O.

        Args:
            bot_token: Bot token (`xoxb-…`).
            signing_secret: Signing secret; required in `events` mode.
            app_token: App-level token (`xapp-…`); required in `socket` mode.
            mode: `events` (HTTP endpoint mounted via `routes()`) or `socket`.
            api_base_url: Web API root (tests point it at a fake).
            events_path: Where `routes()` mounts the Events API endpoint.
            thread_replies: A top-level channel mention opens a thread (see `_events`).
            min_edit_interval: Seconds between two edits in one channel.
            max_retry_after: Longest 429 `Retry-After` waited out inside a call.
            socket_ping_interval: Socket Mode ping interval (staleness detection).
            commands: slash commands to listen for (declared in the Slack app's configuration).
            file_hosts: the origins `url_private` may point at (the only ones the bot token is sent to).
            dedup_capacity: How many event ids / posts are remembered for de-duplication.
            clock: Monotonic clock for edit throttling.

        Raises:
            ValueError: a token or secret the chosen mode needs is missing, or a file host is not an origin.
        """
        if not bot_token:
            raise ValueError("SlackAdapter needs a bot token (xoxb-…)")
        if mode == "events" and not signing_secret:
            raise ValueError("Slack events mode needs a signing secret to verify requests")
        if mode == "socket" and not app_token:
            raise ValueError("Slack socket mode needs an app-level token (xapp-…)")
        self._bot_token = bot_token
        self._files = FileFetcher(file_policy(file_hosts, token=bot_token))
        self._signing_secret = signing_secret or ""
        self._app_token = app_token
        self.mode: Mode = mode
        self._events_path = events_path
        self._thread_replies = thread_replies
        self._min_edit_interval = min_edit_interval
        self._socket_ping_interval = socket_ping_interval
        self._commands = commands
        self._clock = clock
        self._client = build_client(bot_token, base_url=api_base_url, max_retry_after=max_retry_after)
        self._verifier = SignatureVerifier(self._signing_secret) if mode == "events" else None
        self._seen_events = RecentKeys(dedup_capacity)
        self._seen_posts = RecentKeys(dedup_capacity)
        self._bot_threads = RecentKeys(dedup_capacity)
        self._names: OrderedDict[str, tuple[str, str | None]] = OrderedDict()  # user id → (name, locale)
        self._quoted = RecentKeys(dedup_capacity)  # threads whose parent was quoted already
        self._edits: dict[str, tuple[asyncio.Lock, list[float]]] = {}
        self._running: _Running | None = None
        self._liveness = LivenessClock(DISCONNECTED_LIMIT)

    # -- lifecycle -----------------------------------------------------------------

    @property
    def identity(self) -> SlackIdentity | None:
        """The bot's identity once started, else None."""
        return self._running.identity if self._running else None

    def routes(self) -> list[web.RouteDef]:
        """The aiohttp routes the gateway mounts (empty in socket mode: nothing listens)."""
        if self.mode != "events":
            return []
        return [web.post(self._events_path, self.handle_events)]

    async def handle_events(self, request: web.Request) -> web.Response:
        """The Events API endpoint (see `_http.handle_events` for the status codes)."""
        if self._verifier is None:
            return web.json_response({"ok": False, "error": "slack is in socket mode: no events endpoint"}, status=404)
        app = self._running.app if self._running else None
        return await handle_events(request, app=app, verifier=self._verifier, seen_events=self._seen_events)

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        """Learn the bot's identity (auth.test), build the Bolt app, connect Socket Mode if chosen.

        Raises:
            RuntimeError: already started.
            AdapterError: auth.test or the Socket Mode connection failed.
        """
        if self._running is not None:
            raise RuntimeError("SlackAdapter is already started; call stop() before starting it again")
        identity = await self._auth_test()
        app = AsyncApp(
            client=self._client,
            signing_secret=self._signing_secret,
            request_verification_enabled=self.mode == "events",
            process_before_response=False,
            logger=logging.getLogger("adapters.slack.bolt"),
        )
        running = _Running(identity=identity, queue=inbound, app=app, socket=None)
        app.event("app_mention")(self._on_event)
        app.event("message")(self._on_event)
        # Anything else we are subscribed to is acked and dropped, not answered 404 (Slack would retry).
        app.event(re.compile(".*"))(_ignore_event)
        for command in self._commands:  # only those declared in the Slack app's configuration arrive
            app.command(f"/{command.name}")(self._on_command)
        app.action(re.compile(f"^{ACTION_PREFIX}"))(self._on_action)
        # Set before connecting: Socket Mode may deliver (and ack) an envelope before connect returns.
        self._liveness.restart()
        self._running = running
        if self.mode == "socket":
            try:
                running.socket = await self._connect_socket(app)
            except BaseException:
                self._running = None
                raise
        log.info("slack.started", mode=self.mode, bot_user_id=identity.user_id, team_id=identity.team_id)

    async def _connect_socket(self, app: AsyncApp) -> AsyncSocketModeHandler:
        """Open the Socket Mode websocket, failing fast on a bad app token or unreachable server.

        slack_sdk's `connect()` retries forever on any error, so the URL is
        fetched here first (a clear invalid_auth) and the connection is bounded.
        """
        url = await self._socket_url()
        handler = AsyncSocketModeHandler(app, self._app_token, ping_interval=self._socket_ping_interval)
        handler.client.wss_uri = url
        try:
            async with asyncio.timeout(SOCKET_CONNECT_TIMEOUT):
                await handler.connect_async()  # type: ignore[no-untyped-call]
        except TimeoutError as exc:
            await handler.close_async()  # type: ignore[no-untyped-call]
            raise AdapterError(
                f"slack socket mode: no websocket connection within {SOCKET_CONNECT_TIMEOUT:.0f}s", platform=PLATFORM
            ) from exc
        return handler

    async def _socket_url(self) -> str:
        try:
            response = await self._client.apps_connections_open(app_token=self._app_token or "")
        except Exception as exc:
            raise translate(exc, method="apps.connections.open", token_key="platforms.slack.app_token") from exc
        return str(response["url"])

    async def stop(self) -> None:
        """Disconnect Socket Mode and stop delivering; a no-op when not started."""
        running, self._running = self._running, None
        if running is None:
            return
        if running.socket is not None:
            await running.socket.close_async()  # type: ignore[no-untyped-call]
        log.info("slack.stopped", mode=self.mode)

    # -- inbound ---------------------------------------------------------------------

    async def _on_event(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        running = self._running
        if running is None:
            return
        event_id = body.get("event_id")
        if isinstance(event_id, str) and not self._seen_events.add(event_id):
            log.info("slack.event.ignored", reason="redelivered event", event_id=event_id)
            return
        read = classify_edit if event.get("subtype") == EDIT_SUBTYPE else classify
        decision = read(
            event,
            bot_user_id=running.identity.user_id,
            bot_id=running.identity.bot_id,
            bot_threads=self._bot_threads,
            thread_replies=self._thread_replies,
        )
        if not isinstance(decision, Accepted):
            log.debug("slack.event.ignored", reason=decision.reason, event_id=event_id)
            return
        message = decision.message
        if not self._seen_posts.add(message.delivery_id):
            log.debug("slack.event.ignored", reason="post already delivered", delivery_id=message.delivery_id)
            return
        if not message.sender_is_bot:
            message = _with_sender(message, *await self._user(message.user_id))
        thread = message.reply_to_message_id
        if thread is not None and message.quote is None and thread not in self._bot_threads and thread not in self._quoted:
            # The parent is quoted once per thread (the session holds it from then on), never in a thread the
            # bot took part in: the parent reached that session already.
            self._quoted.add(thread)
            message = replace(message, quote=await self._thread_parent(message.chat_id, thread))
        await running.queue.put(message)
        log.info("slack.message.received", chat_id=message.chat_id, thread_id=message.thread_id, event_id=event_id)

    async def _on_command(self, ack: Callable[[], Awaitable[None]], command: dict[str, Any]) -> None:
        await ack()  # within Slack's 3 s; the answer follows in the channel
        running = self._running
        message = command_inbound(command, received_at=time.time())
        if running is None or message is None:
            return
        known = self._names.get(message.user_id)  # a locale seen on their messages (no lookup: the answer waits)
        await running.queue.put(replace(message, language=known[1]) if known is not None else message)
        log.info("slack.command.received", chat_id=message.chat_id, command=message.text.split(" ", 1)[0])

    async def _on_action(self, ack: Callable[[], Awaitable[None]], body: dict[str, Any]) -> None:
        await ack()  # within Slack's 3 s; the answer is an ephemeral message or a post in the channel
        running = self._running
        message = action_inbound(body)
        if running is None or message is None:
            return
        await running.queue.put(_with_sender(message, *await self._user(message.user_id)))
        log.info("slack.action.received", chat_id=message.chat_id, command=message.text.split(" ", 1)[0])

    async def send_choices(self, target: ChatTarget, text: str, choices: Sequence[Choice]) -> list[SentMessage]:
        """Post `text` with Block Kit buttons (the text is plain: it may quote arbitrary tool arguments)."""
        try:
            response = await self._client.chat_postMessage(channel=target.chat_id, text=text[:MAX_TEXT_CHARS],
                                                           blocks=choice_blocks(text, choices), thread_ts=target.thread_id)
        except Exception as exc:
            raise translate(exc, method="chat.postMessage") from exc
        return [SentMessage(target=target, message_id=str(response["ts"]))]

    async def answer_privately(self, message: InboundMessage, text: str) -> bool:
        """chat.postEphemeral to the clicker alone ("" needs nothing: the click was acked already)."""
        if not text:
            return True
        try:
            await self._client.chat_postEphemeral(channel=message.chat_id, user=message.user_id, text=text,
                                                  thread_ts=message.thread_id)
        except Exception as exc:  # noqa: BLE001 - the caller answers in the channel instead
            log.info("slack.ephemeral.failed", error=str(translate(exc, method="chat.postEphemeral")))
            return False
        return True

    async def _thread_parent(self, channel: str, thread_ts: str) -> Quote | None:
        """The thread's first post as a quote (conversations.replies); None when Slack cannot tell."""
        try:
            response = await self._client.conversations_replies(channel=channel, ts=thread_ts, limit=1)
        except Exception as exc:  # noqa: BLE001 - the message still counts, without its quote
            log.warning("slack.thread_parent.failed", error=str(translate(exc, method="conversations.replies")))
            return None
        posts = response.get("messages") or []
        parent = posts[0] if posts and isinstance(posts[0], dict) else None
        if parent is None:
            return None
        author = str(parent.get("user") or parent.get("bot_id") or "")
        is_bot = parent.get("bot_id") is not None
        name = str(parent.get("username") or author) if is_bot else await self._user_name(author)
        text = from_slack(str(parent.get("text") or ""), bot_user_id=self.identity.user_id if self.identity else None)
        return Quote(author_name=clean_line(name), text=clean_text(text), author_id=author or None,
                     message_id=thread_ts, author_is_bot=is_bot)

    async def _user_name(self, user_id: str) -> str:
        return (await self._user(user_id))[0]

    async def _user(self, user_id: str) -> tuple[str, str | None]:
        """Display name and locale ("ja-JP") from users.info, cached; the user id and None when Slack cannot tell."""
        if user_id in self._names:
            self._names.move_to_end(user_id)
            return self._names[user_id]
        try:
            response = await self._client.users_info(user=user_id, include_locale=True)
        except Exception as exc:  # noqa: BLE001 - a name is cosmetic: never lose the message over it
            log.warning("slack.users_info.failed", user_id=user_id, error=str(translate(exc, method="users.info")))
            return user_id, None
        user = response.get("user") or {}
        profile = user.get("profile") or {}
        name = str(profile.get("display_name") or profile.get("real_name") or user.get("real_name") or user.get("name") or user_id)
        locale = user.get("locale")
        self._names[user_id] = found = (name, locale if isinstance(locale, str) and locale else None)
        if len(self._names) > NAME_CACHE_SIZE:
            self._names.popitem(last=False)
        return found

    # -- outbound --------------------------------------------------------------------

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        """Post `text` as mrkdwn, split at 4,000 characters, into `target.thread_id` (or `reply_to`'s thread).

        Raises:
            AdapterError: empty text, or Slack refused (status, retry_after set).
        """
        if not text.strip():
            raise AdapterError("cannot send an empty message to Slack", platform=PLATFORM)
        thread_ts = target.thread_id or reply_to
        sent: list[SentMessage] = []
        for chunk in split_mrkdwn(text, self.limits.max_message_chars):
            try:
                response = await self._client.chat_postMessage(channel=target.chat_id, text=chunk, thread_ts=thread_ts)
            except Exception as exc:
                raise translate(exc, method="chat.postMessage") from exc
            ts = str(response["ts"])
            self._bot_threads.add(thread_ts or ts)
            sent.append(SentMessage(target=ChatTarget(PLATFORM, target.chat_id, thread_ts), message_id=ts))
        return sent

    async def edit(self, sent: SentMessage, text: str) -> None:
        """Replace a sent message's text (chat.update), at most once per interval per channel.

        Text beyond the message limit is cut with an ellipsis: an edit cannot split.
        """
        rendered = to_mrkdwn(text)
        limit = self.limits.max_message_chars
        if len(rendered) > limit:
            rendered = rendered[: limit - 1] + "…"
        async with self._edit_slot(sent.target.chat_id):
            try:
                await self._client.chat_update(channel=sent.target.chat_id, ts=sent.message_id, text=rendered)
            except Exception as exc:
                raise translate(exc, method="chat.update") from exc

    async def typing(self, target: ChatTarget) -> None:
        """No-op: Slack offers bots no typing indicator over Events API / Socket Mode."""

    async def react(self, target: ChatTarget, message_id: str, reaction: Reaction) -> None:
        """reactions.add; a reaction already there counts as added."""
        try:
            await self._client.reactions_add(channel=target.chat_id, timestamp=message_id, name=REACTIONS[reaction])
        except SlackApiError as exc:
            if exc.response.get("error") != "already_reacted":
                raise translate(exc, method="reactions.add") from exc
        except Exception as exc:
            raise translate(exc, method="reactions.add") from exc

    async def delete(self, sent: SentMessage) -> None:
        """Delete a sent message (chat.delete); one already gone counts as deleted."""
        try:
            await self._client.chat_delete(channel=sent.target.chat_id, ts=sent.message_id)
        except SlackApiError as exc:
            if exc.response.get("error") != "message_not_found":
                raise translate(exc, method="chat.delete") from exc
        except Exception as exc:
            raise translate(exc, method="chat.delete") from exc

    def liveness(self) -> Liveness:
        """Alive while connected; down once the connection has been lost for `DISCONNECTED_LIMIT` seconds."""
        running = self._running
        if running is None:
            return Liveness(alive=False, last_ok_seconds_ago=None, detail="not started")
        if running.socket is None:
            return Liveness(alive=True, last_ok_seconds_ago=None)  # Events API: Slack posts to our route
        session = running.socket.client.current_session
        connected = session is not None and not session.closed
        if connected:
            self._liveness.ok()
        else:
            self._liveness.failed("the Socket Mode connection is down (reconnecting)")
        return self._liveness.report()

    @property
    def can_send(self) -> bool:
        return True

    async def fetch_attachment(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """A file's bytes from its `url_private`, with the bot token, only from `file_hosts`."""
        return await download(attachment, fetcher=self._files, max_bytes=max_bytes)

    async def probe(self) -> ProbeResult:
        """auth.test (and, in socket mode, apps.connections.open): who we are, or why not, never showing a token."""
        try:
            identity = await self._auth_test()
            if self.mode == "socket":
                await self._socket_url()  # issues a URL without connecting to it
        except AdapterError as exc:
            return ProbeResult(platform=PLATFORM, ok=False, detail=str(exc))
        detail = f"connected as @{identity.user_name} ({identity.user_id}) in team {identity.team_id}, mode {self.mode}"
        return ProbeResult(platform=PLATFORM, ok=True, detail=detail)

    async def _auth_test(self) -> SlackIdentity:
        try:
            response = await self._client.auth_test()
        except Exception as exc:
            raise translate(exc, method="auth.test") from exc
        return SlackIdentity(
            user_id=str(response.get("user_id") or ""),
            bot_id=response.get("bot_id"),
            team_id=response.get("team_id"),
            user_name=str(response.get("user") or ""),
        )

    @asynccontextmanager
    async def _edit_slot(self, channel: str) -> AsyncIterator[None]:
        """Serialise edits per channel and space them `min_edit_interval` apart."""
        lock, last = self._edits.setdefault(channel, (asyncio.Lock(), [float("-inf")]))
        async with lock:
            wait = last[0] + self._min_edit_interval - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)  # throttling, not synchronisation
            try:
                yield
            finally:
                last[0] = self._clock()


@dataclass(slots=True)
class _Running:
    """What exists only between start() and stop()."""

    identity: SlackIdentity
    queue: asyncio.Queue[InboundMessage]
    app: AsyncApp
    socket: AsyncSocketModeHandler | None


async def _ignore_event() -> None:
    """Ack-and-drop listener for subscribed events Chorus does not use."""


REACTIONS: dict[Reaction, str] = {"received": "eyes", "answered": "white_check_mark", "failed": "warning"}


def _with_sender(message: InboundMessage, name: str, locale: str | None) -> InboundMessage:
    # users.info JSON may carry what UTF-8 cannot
    return replace(message, user_name=clean_line(name), language=locale or message.language)
