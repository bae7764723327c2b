"""`DiscordAdapter`: Discord (gateway websocket + REST, through discord.py) as a `PlatformAdapter`.

Owns the client's lifecycle (login → gateway task → READY, and back), the
inbound path (MESSAGE_CREATE → `facts_from` → `classify` → queue) and the
outbound calls (create/edit/delete message, trigger typing, GET /users/@me).
Knows nothing of agents, sessions or the gateway: it only fills an
`asyncio.Queue[InboundMessage]`.

Documented choices:
- Message limit: 2,000 characters (`DISCORD_MESSAGE_CHARS`); longer replies
  are split with `adapters.text.split_text` (code fences stay balanced).
  Only the first chunk carries the reply reference.
- Rate limits: discord.py reads `X-RateLimit-*` buckets and waits out a 429's
  `retry_after` itself; a wait longer than `max_ratelimit_timeout` (at least
  30 s, discord.py's floor) surfaces as `AdapterError(retry_after=...)`.
  Edits are not throttled here for the same reason.
- Reconnects: discord.py RESUMEs at READY's `resume_gateway_url` after a
  dropped connection and re-IDENTIFYs when the session is invalid;
  `run_gateway` restarts it if an undecodable frame escapes the library, and
  a malformed event is dropped without dropping the connection.
- A thread not in discord.py's cache (no THREAD_CREATE seen) is looked up
  once with GET /channels/{id} so its messages still get the right parent.
- Outgoing messages never ping @everyone or roles (allowed mentions).
- `api_base_url` / `gateway_url` patch discord.py's process-wide endpoints
  only while the adapter runs or probes (see `_endpoints`).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import discord
import structlog
from aiohttp import web
from discord.http import HTTPClient

from adapters.base import (
    AdapterError,
    Attachment,
    AttachmentTooLarge,
    BotCommand,
    ChatTarget,
    Choice,
    InboundMessage,
    Liveness,
    PlatformLimits,
    ProbeResult,
    Reaction,
    SentMessage,
)
from adapters.decisions import Accepted, RecentKeys
from adapters.fetch import FileFetcher
from adapters.keyed import chunk_nonce
from adapters.liveness import LivenessClock
from adapters.text import split_text

from ._client import ChorusClient, run_gateway
from ._commands import choices_view, interaction_inbound, interaction_text, menu_payload, press_text
from ._endpoints import PLATFORM, Endpoints, Lease, pointed_at
from ._errors import translate
from ._events import classify
from ._inbound import facts_from, reply_reference
from ._markdown import to_discord

log = structlog.get_logger(__name__)
REACTIONS: dict[Reaction, str] = {"received": "👀", "answered": "✅", "failed": "⚠️"}

DISCORD_MESSAGE_CHARS = 2_000
SENT_MEMORY = 4_096
PARENT_CACHE_SIZE = 1_024
PRESS_CACHE_SIZE = 256  # button presses kept to answer privately (Discord's interaction tokens last 15 minutes)
STOP_TIMEOUT = 5.0
DISCONNECTED_LIMIT = 30.0  # seconds without a connection before the adapter reports itself down


@dataclass(frozen=True, slots=True)
class DiscordIdentity:
    """Who the bot is, from login (GET /users/@me)."""

    user_id: str
    user_name: str


@dataclass(slots=True)
class _Running:
    """What exists only between start() and stop()."""

    client: ChorusClient
    queue: asyncio.Queue[InboundMessage]
    lease: Lease
    task: asyncio.Task[None] | None = None
    order: asyncio.Lock = field(default_factory=asyncio.Lock)


class DiscordAdapter:
    """Discord as a `PlatformAdapter`; construct, then `start(queue)` … `stop()` (repeatable)."""

    name = PLATFORM
    limits = PlatformLimits(
        max_message_chars=DISCORD_MESSAGE_CHARS, supports_edit=True, min_edit_interval_seconds=1.0, markup="markdown"
    )

    def __init__(
        self,
        *,
        token: str,
        api_base_url: str | None = None,
        gateway_url: str | None = None,
        ready_timeout: float = 30.0,
        guild_ready_timeout: float = 2.0,
        heartbeat_timeout: float = 60.0,
        reidentify_delay: float = 5.0,
        crash_backoff: float = 1.0,
        max_ratelimit_timeout: float = 30.0,
        commands: tuple[BotCommand, ...] = (),
    ) -> None:
        """Only validates and assigns; no I/O.

        Args:
            token: The bot token (without the `Bot ` prefix).
            api_base_url: Versioned REST root (default `https://discord.com/api/v10`); tests and proxies override it.
            gateway_url: Gateway websocket URL (default `wss://gateway.discord.gg/`).
            ready_timeout: Longest wait in `start()` for the gateway's READY.
            guild_ready_timeout: How long discord.py waits for GUILD_CREATEs before READY counts as complete.
            heartbeat_timeout: Silence on the websocket after which discord.py reconnects.
            reidentify_delay: Pause before a re-IDENTIFY (Discord's identify rate limit).
            crash_backoff: First pause before restarting the gateway after an unexpected error (doubles).
            max_ratelimit_timeout: Longest 429 wait inside one call (discord.py raises it to at least 30 s).
            commands: The slash-command menu registered after READY (empty: none); picking one sends its
                `/name args` text like a typed command.

        Raises:
            ValueError: no token, or a URL with the wrong scheme.
        """
        if not token or not token.strip():
            raise ValueError("DiscordAdapter needs a bot token")
        self._token = token.strip()
        self._endpoints = Endpoints.parse(api_base_url=api_base_url, gateway_url=gateway_url)
        self._files = FileFetcher(self._endpoints.file_policy())
        self._ready_timeout = ready_timeout
        self._guild_ready_timeout = guild_ready_timeout
        self._heartbeat_timeout = heartbeat_timeout
        self._reidentify_delay = reidentify_delay
        self._crash_backoff = crash_backoff
        self._max_ratelimit_timeout = max_ratelimit_timeout
        self._commands = commands
        self._sent = RecentKeys(SENT_MEMORY)
        self._parents: OrderedDict[int, str | None] = OrderedDict()
        self._presses: OrderedDict[str, discord.Interaction] = OrderedDict()
        self._running: _Running | None = None
        self._liveness = LivenessClock(DISCONNECTED_LIMIT)

    # -- lifecycle -----------------------------------------------------------------

    @property
    def identity(self) -> DiscordIdentity | None:
        """The bot's identity once started, else None."""
        user = self._running.client.user if self._running else None
        return DiscordIdentity(user_id=str(user.id), user_name=user.name) if user else None

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        """Log in, open the gateway and return once READY.

        Raises:
            RuntimeError: already started.
            AdapterError: bad token ("401: check platforms.discord.token"),
                unreachable Discord, a fatal gateway close, or no READY in time.
        """
        if self._running is not None:
            raise RuntimeError("DiscordAdapter is already started; call stop() before starting it again")
        lease = Lease(self._endpoints)
        try:
            client = ChorusClient(
                on_message_cb=self._on_message,
                on_interaction_cb=self._on_interaction,
                on_edit_cb=self._on_edit,
                guild_ready_timeout=self._guild_ready_timeout,
                heartbeat_timeout=self._heartbeat_timeout,
                max_ratelimit_timeout=self._max_ratelimit_timeout,
                reidentify_delay=self._reidentify_delay,
            )
        except BaseException:
            lease.release()
            raise
        running = _Running(client=client, queue=inbound, lease=lease)
        try:
            try:
                await client.login(self._token)
            except Exception as exc:
                raise translate(exc, action="login") from exc
            # Set before connecting: MESSAGE_CREATEs may arrive right after READY, before start() returns.
            self._liveness.restart()
            self._running = running
            running.task = asyncio.create_task(run_gateway(client, crash_backoff=self._crash_backoff), name="discord-gateway")
            await self._wait_ready(client, running.task)
            await self._register_menu(client)
        except BaseException:
            self._running = None
            await self._shut(running)
            raise
        log.info("discord.started", user_id=str(client.user.id) if client.user else None, guilds=len(client.guilds))

    async def _wait_ready(self, client: discord.Client, task: asyncio.Task[None]) -> None:
        ready = asyncio.create_task(client.wait_until_ready())
        try:
            done, _ = await asyncio.wait({ready, task}, timeout=self._ready_timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if ready in done:
            return
        if task in done:
            failure = task.exception()
            if failure is not None:
                raise failure
            raise AdapterError("discord gateway connection ended before READY", platform=PLATFORM)
        gateway = self._endpoints.gateway_url or "the Discord gateway"
        raise AdapterError(f"discord gateway: no READY from {gateway} within {self._ready_timeout:.0f}s", platform=PLATFORM)

    async def stop(self) -> None:
        """Close the gateway and the HTTP session; a no-op when not started."""
        running, self._running = self._running, None
        if running is None:
            return
        await self._shut(running)
        log.info("discord.stopped")

    @staticmethod
    async def _shut(running: _Running) -> None:
        try:
            await running.client.close()
            task = running.task
            if task is not None:
                done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT)
                if not done:
                    task.cancel()
                with contextlib.suppress(BaseException):
                    await task  # its failure, if any, was logged by run_gateway
        finally:
            running.lease.release()

    async def _register_menu(self, client: discord.Client) -> None:
        """The slash-command menu (a bulk overwrite: Discord keeps it in step); a failure is logged, not fatal."""
        if not self._commands or client.application_id is None:
            return
        try:
            await client.http.bulk_upsert_global_commands(client.application_id, menu_payload(self._commands))
        except discord.DiscordException as exc:
            log.warning("discord.commands_not_set", error=str(translate(exc, action="PUT commands")))

    # -- inbound ---------------------------------------------------------------------

    async def _on_interaction(self, interaction: discord.Interaction) -> None:
        running = self._running
        pressed = press_text(interaction)
        if running is not None and pressed is not None:
            await self._on_press(running, interaction, pressed)
            return
        text = interaction_text(interaction)
        if running is None or text is None:
            return
        parent_id = await self._parent_of(running.client, interaction.channel) if interaction.channel else None
        try:
            # Discord wants an answer within 3 s; the real reply follows in the channel.
            await interaction.response.send_message(f"`{text}`", ephemeral=True)
        except discord.DiscordException as exc:
            log.warning("discord.interaction_not_acknowledged", error=type(exc).__name__)
        async with running.order:
            await running.queue.put(interaction_inbound(interaction, text, parent_id=parent_id))

    async def _on_press(self, running: _Running, interaction: discord.Interaction, text: str) -> None:
        """A button press: acknowledged at once (no visible answer), kept to answer the presser alone later."""
        parent_id = await self._parent_of(running.client, interaction.channel) if interaction.channel else None
        try:
            await interaction.response.defer()  # within Discord's 3 s; the answer is a followup
        except discord.DiscordException as exc:
            log.warning("discord.interaction_not_acknowledged", error=type(exc).__name__)
        self._presses[str(interaction.id)] = interaction
        while len(self._presses) > PRESS_CACHE_SIZE:
            self._presses.popitem(last=False)
        async with running.order:
            await running.queue.put(interaction_inbound(interaction, text, parent_id=parent_id, press=True))

    async def send_choices(self, target: ChatTarget, text: str, choices: Sequence[Choice]) -> list[SentMessage]:
        """Post `text` (cut at 2,000 characters) with a row of buttons under it."""
        channel = self._channel(target, "send")
        try:
            message = await channel.send(text[:DISCORD_MESSAGE_CHARS], view=choices_view(choices))
        except Exception as exc:
            raise translate(exc, action="send") from exc
        self._sent.add(str(message.id))
        return [SentMessage(target=target, message_id=str(message.id))]

    async def answer_privately(self, message: InboundMessage, text: str) -> bool:
        """An ephemeral followup to the press only the presser sees ("" needs nothing: the press was acked)."""
        interaction = self._presses.get(message.interaction or "")
        if interaction is None:
            return False
        if not text:
            return True
        try:
            await interaction.followup.send(text, ephemeral=True)
        except discord.DiscordException as exc:
            log.info("discord.followup_failed", error=type(exc).__name__)
            return False
        return True

    async def _on_message(self, message: discord.Message) -> None:
        running = self._running
        if running is None:
            return
        # discord.py runs each on_message in its own task; one FIFO lock keeps the queue in gateway order
        # (and a thread lookup in flight is not repeated by the next message of that thread).
        async with running.order:
            await self._take_in(running, message)

    async def _on_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        running = self._running
        if running is None:
            return
        message = payload.message
        before = payload.cached_message
        if message.edited_at is None or (before is not None and before.content == message.content):
            return  # an embed unfurled or a pin: not an edit of the text
        async with running.order:
            await self._take_in(running, message, edited=True, before=before)

    async def _referenced(self, message: discord.Message) -> discord.Message | None:
        """The replied-to message when neither the payload nor discord.py's cache has it (fetched once)."""
        reply = reply_reference(message)
        if reply is None or reply[1] is not None:
            return None
        try:
            return await message.channel.fetch_message(reply[0])
        except Exception as exc:  # noqa: BLE001 - the reply still counts, without its quote
            log.warning("discord.reference.unresolved", message_id=str(reply[0]),
                        error=str(translate(exc, action="fetch message")))
            return None

    async def _take_in(
        self, running: _Running, message: discord.Message, *, edited: bool = False, before: discord.Message | None = None
    ) -> None:
        if running.client.user is None or message.author.id == running.client.user.id:
            return
        me = running.client.user
        parent_id = await self._parent_of(running.client, message.channel)
        role = message.guild.self_role if message.guild is not None else None
        decision = classify(
            facts_from(message, parent_id=parent_id, referenced=await self._referenced(message)),
            bot_user_id=str(me.id),
            bot_role_id=str(role.id) if role is not None else None,
            bot_messages=self._sent,
        )
        if not isinstance(decision, Accepted):
            log.debug("discord.message.ignored", reason=decision.reason, message_id=str(message.id))
            return
        inbound = decision.message
        if edited and message.edited_at is not None:
            inbound = dataclasses.replace(
                inbound, edited=True, previous_text=before.content if before is not None else None,
                delivery_id=f"{inbound.delivery_id}:edit:{message.edited_at.timestamp()}",
            )
        await running.queue.put(inbound)
        log.info("discord.message.received", chat_id=inbound.chat_id, thread_id=inbound.thread_id,
                 message_id=inbound.message_id, chat_type=inbound.chat_type)

    async def _parent_of(self, client: discord.Client, channel: object) -> str | None:
        """The parent channel id when `channel` is a thread, fetching threads discord.py has not cached."""
        if isinstance(channel, discord.Thread):
            return str(channel.parent_id)
        if not isinstance(channel, discord.PartialMessageable) or channel.guild_id is None:
            return None
        if channel.id in self._parents:
            self._parents.move_to_end(channel.id)
            return self._parents[channel.id]
        try:
            fetched = await client.fetch_channel(channel.id)
        except Exception as exc:  # noqa: BLE001 - the message still counts, as a plain channel message
            log.warning("discord.channel.unresolved", channel_id=str(channel.id), error=str(translate(exc, action="fetch channel")))
            return None
        parent = str(fetched.parent_id) if isinstance(fetched, discord.Thread) else None
        self._parents[channel.id] = parent
        if len(self._parents) > PARENT_CACHE_SIZE:
            self._parents.popitem(last=False)
        return parent

    # -- outbound --------------------------------------------------------------------

    def _channel(self, target: ChatTarget, action: str) -> discord.PartialMessageable:
        if self._running is None:
            raise AdapterError(f"discord {action} failed: the adapter is not started", platform=PLATFORM)
        raw = target.thread_id or target.chat_id
        if not raw.isdigit():
            raise AdapterError(f"discord {action} failed: {raw!r} is not a Discord channel id", platform=PLATFORM)
        return self._running.client.get_partial_messageable(int(raw))

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        """Post `text` (split at 2,000 characters) to the target channel or thread; the first chunk replies to `reply_to`.

        Raises:
            AdapterError: empty text, not started, or Discord refused (status, retry_after set).
        """
        return await self._post(target, text, reply_to=reply_to, key=None)

    async def send_once(self, target: ChatTarget, text: str, *, key: str, reply_to: str | None = None) -> list[SentMessage]:
        """`send` with a nonce per chunk that Discord enforces: sent again under `key`, no second post is made."""
        return await self._post(target, text, reply_to=reply_to, key=key)

    async def _post(self, target: ChatTarget, text: str, *, reply_to: str | None, key: str | None) -> list[SentMessage]:
        if not text.strip():
            raise AdapterError("cannot send an empty message to Discord", platform=PLATFORM)
        channel = self._channel(target, "send")
        reference = None
        if reply_to is not None and reply_to.isdigit():
            reference = discord.MessageReference(message_id=int(reply_to), channel_id=channel.id, fail_if_not_exists=False)
        sent: list[SentMessage] = []
        for index, chunk in enumerate(split_text(to_discord(text), DISCORD_MESSAGE_CHARS)):
            # discord.py sends `enforce_nonce` with every nonce: Discord answers a repeat with the first message.
            nonce = chunk_nonce(key, index) if key is not None else None
            try:
                message = await channel.send(
                    chunk, reference=reference if not sent else None, nonce=nonce,  # type: ignore[arg-type]
                )
            except Exception as exc:
                raise translate(exc, action="send") from exc
            self._sent.add(str(message.id))
            sent.append(SentMessage(target=target, message_id=str(message.id)))
        return sent

    async def edit(self, sent: SentMessage, text: str) -> None:
        """Replace a sent message's text; beyond 2,000 characters it is cut with an ellipsis (an edit cannot split)."""
        text = to_discord(text)
        if len(text) > DISCORD_MESSAGE_CHARS:
            text = text[: DISCORD_MESSAGE_CHARS - 1] + "…"
        channel = self._channel(sent.target, "edit")
        try:
            await channel.get_partial_message(int(sent.message_id)).edit(content=text)
        except Exception as exc:
            raise translate(exc, action="edit") from exc

    async def typing(self, target: ChatTarget) -> None:
        """Show "typing…" in the channel or thread (Discord keeps it up for about 10 s)."""
        channel = self._channel(target, "typing")
        try:
            await channel.typing()
        except Exception as exc:
            raise translate(exc, action="typing") from exc

    async def react(self, target: ChatTarget, message_id: str, reaction: Reaction) -> None:
        """Add the reaction (PUT .../reactions/{emoji}/@me)."""
        channel = self._channel(target, "react")
        try:
            await channel.get_partial_message(int(message_id)).add_reaction(REACTIONS[reaction])
        except Exception as exc:
            raise translate(exc, action="react") from exc

    async def delete(self, sent: SentMessage) -> None:
        """Delete a sent message; one already gone counts as deleted."""
        channel = self._channel(sent.target, "delete")
        try:
            await channel.get_partial_message(int(sent.message_id)).delete()
        except discord.NotFound:
            return
        except Exception as exc:
            raise translate(exc, action="delete") from exc

    def routes(self) -> list[web.RouteDef]:
        return []  # nothing to serve beside the admin routes

    def liveness(self) -> Liveness:
        """Alive while connected; down once the connection has been lost for `DISCONNECTED_LIMIT` seconds."""
        running = self._running
        if running is None:
            return Liveness(alive=False, last_ok_seconds_ago=None, detail="not started")
        client = running.client
        ws = getattr(client, "ws", None)
        connected = not client.is_closed() and ws is not None and ws.open and math.isfinite(client.latency)
        if connected:
            self._liveness.ok()
        else:
            self._liveness.failed("the gateway connection is down (discord.py is reconnecting)")
        return self._liveness.report()

    @property
    def can_send(self) -> bool:
        return True

    async def fetch_attachment(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """An attachment's bytes from Discord's CDN (or the configured `api_base_url`'s origin), streamed under the cap."""
        if self._running is None:
            raise RuntimeError("DiscordAdapter.fetch_attachment() needs a started adapter: call start() first")
        if not attachment.url:
            raise AdapterError("the attachment has no url", platform=PLATFORM)
        if attachment.size is not None and attachment.size > max_bytes:
            raise AttachmentTooLarge(f"file is {attachment.size} bytes, over {max_bytes}", platform=PLATFORM)
        return (await self._files.fetch(attachment.url, max_bytes=max_bytes)).data

    async def probe(self) -> ProbeResult:
        """GET /users/@me with the token: who we are, or why not (never showing the token)."""
        try:
            async with pointed_at(self._endpoints):
                http = HTTPClient(asyncio.get_running_loop())
                try:
                    user = await http.static_login(self._token)
                finally:
                    await http.close()
        except Exception as exc:  # noqa: BLE001 - a task boundary
            return ProbeResult(platform=PLATFORM, ok=False, detail=str(translate(exc, action="GET /users/@me")))
        return ProbeResult(platform=PLATFORM, ok=True, detail=f"connected as @{user['username']} ({user['id']})")
