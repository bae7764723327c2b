"""`TelegramAdapter`: the `PlatformAdapter` for Telegram, on python-telegram-bot's `Bot` and `Updater`.

Owns the lifecycle (long polling through PTB's `Updater`, whose network retry
loop survives dropped connections and 5xx answers, or a webhook on our own
aiohttp route after `setWebhook` with a secret), the inbound pump, and
`probe`. Outbound calls are delegated to `TelegramOutbound`, bound to the
started `Bot`; the edit throttle outlives restarts. Knows nothing of agents, sessions or configuration files: it is given plain
values and turns updates into `InboundMessage`s on the queue it is started with.

`message`, `edited_message` and `callback_query` (button presses) updates are requested (`ALLOWED_UPDATES`):
an edit reaches the gateway as `InboundMessage(edited=True)`, and `gateway.edits` decides what it does.
"""
from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import certifi
import structlog
from aiohttp import web
from telegram import Bot, Update
from telegram import BotCommand as TgBotCommand
from telegram.error import BadRequest, NetworkError, TelegramError
from telegram.ext import Updater
from telegram.request import HTTPXRequest

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
    Reaction,
    SentMessage,
)
from adapters.decisions import Ignored
from adapters.fetch import FileFetcher
from adapters.listeners import ListenerLimits, serve
from adapters.liveness import LivenessClock
from adapters.receipts import Receipts
from adapters.telegram._calls import Caller, Redactor
from adapters.telegram._inbound import PLATFORM, BotIdentity, to_inbound
from adapters.telegram._media import AlbumBuffer, download, file_policy
from adapters.telegram._outbound import MAX_MESSAGE_CHARS, TelegramOutbound
from adapters.telegram._polling import PollingRequest
from adapters.telegram._presses import choices_markup, press_to_inbound
from adapters.telegram._throttle import EditThrottle
from adapters.telegram._webhook import WebhookOptions, webhook_routes

ALLOWED_UPDATES = ("message", "edited_message", "callback_query")
POLL_TIMEOUT = 10.0  # seconds a getUpdates long poll waits for an update (a hang is noticed after this + grace)
HANG_GRACE = 5.0
# Telegram allows bots a fixed set of reaction emoji: 👀 is one; ✅ and ⚠️ are not, so 👌 and 🤷 stand in.
REACTIONS: dict[Reaction, str] = {"received": "👀", "answered": "👌", "failed": "🤷"}
DEFAULT_API_ROOT = "https://api.telegram.org"
# What PTB's de_json raises on bad shapes (RecursionError: a reply chain nested thousands deep).
_MALFORMED = (TypeError, KeyError, ValueError, AttributeError, RecursionError)
_STOP = object()  # ends the pump after the updater has handed over its last updates

log = structlog.get_logger(__name__)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verified TLS context for every client: building one reads the CA bundle (~0.2 s)."""
    return ssl.create_default_context(cafile=certifi.where())


def api_urls(base_url: str | None) -> tuple[str, str]:
    """The Bot API and file URL prefixes for a server root such as `http://localhost:8081` (or `.../bot`)."""
    root = (base_url or DEFAULT_API_ROOT).rstrip("/")
    root = root.removesuffix("/bot")
    return f"{root}/bot", f"{root}/file/bot"


@dataclass
class _Running:
    bot: Bot
    identity: BotIdentity
    inbound: asyncio.Queue[InboundMessage]
    outbound: TelegramOutbound
    updater: Updater | None = None
    updates: asyncio.Queue[object] | None = None
    pump: asyncio.Task[None] | None = None
    runner: web.AppRunner | None = None
    port: int | None = None
    albums: AlbumBuffer | None = None


class TelegramAdapter:
    """Telegram through the Bot API (or a self-hosted Bot API server at `base_url`).

    Args:
        token: the bot token from @BotFather (may be empty: `probe` then says so).
        base_url: a self-hosted Bot API server's root; None for api.telegram.org.
        mode: "polling" (getUpdates) or "webhook" (needs `webhook`).
        webhook: the webhook's URL, secret and where it is served.
        poll_timeout: the getUpdates long-poll timeout in seconds.
        hang_grace: a poll that has not answered this long after `poll_timeout` is cancelled (and retried with
            backoff); with no successful poll for `poll_timeout + hang_grace` the adapter reports itself down.
        edit_interval: the minimum seconds between two edits in one chat.
        max_retry_after: the longest 429 wait honoured in place; longer ones raise.
        retry_attempts: tries per call when Telegram answers 429.
        request_timeout: connect/read/write timeout of each API call, in seconds.
        token_setting: how to name the token in error messages (e.g. its config key).
        max_attachment_bytes: the largest photo size within this cap is the one offered for download.
        commands: the command menu set with setMyCommands at start (empty: left as it is).
        listener_limits: read timeout and connection cap of the webhook listener (`listen` set).
        clock: monotonic seconds, for the edit throttle.
        sleep: waits for 429s and the edit throttle.
    """

    name = PLATFORM

    def __init__(
        self,
        token: str,
        *,
        base_url: str | None = None,
        mode: Literal["polling", "webhook"] = "polling",
        webhook: WebhookOptions | None = None,
        poll_timeout: float = POLL_TIMEOUT,
        hang_grace: float = HANG_GRACE,
        edit_interval: float = 1.0,
        max_retry_after: float = 30.0,
        retry_attempts: int = 3,
        request_timeout: float = 10.0,
        token_setting: str = "the bot token",
        max_attachment_bytes: int | None = None,
        commands: tuple[BotCommand, ...] = (),
        listener_limits: ListenerLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if mode == "webhook":
            if webhook is None:
                raise ValueError("mode 'webhook' needs webhook options (url and secret_token)")
            if problems := webhook.problems():
                raise ValueError("; ".join(problems))
        if retry_attempts < 1:
            raise ValueError(f"retry_attempts must be at least 1, got {retry_attempts}")
        self.limits = PlatformLimits(
            max_message_chars=MAX_MESSAGE_CHARS,
            supports_edit=True,
            min_edit_interval_seconds=edit_interval,
            markup="markdown_v2",
            throttles_edits=True,  # `_throttle.EditThrottle` merges superseded edits per chat
        )
        self._token = token
        self._call = Caller(
            redact=Redactor(token), token_setting=token_setting, attempts=retry_attempts,
            max_wait=max_retry_after, sleep=sleep,
        )
        self._api_url, self._file_url = api_urls(base_url)
        self._files = FileFetcher(file_policy(base_url))
        self._mode = mode
        self._webhook = webhook
        self._poll_timeout = poll_timeout
        self._hang_after = poll_timeout + hang_grace
        self._liveness = LivenessClock(self._hang_after, clock=clock)
        self._request_timeout = request_timeout
        self._token_setting = token_setting
        self._max_attachment_bytes = max_attachment_bytes
        self._commands = commands
        self._listener_limits = listener_limits or ListenerLimits()
        self._throttle = EditThrottle(interval=edit_interval, clock=clock, sleep=sleep)
        self._running: _Running | None = None
        self._transition = False
        self._receipts = Receipts()

    def __repr__(self) -> str:
        return f"TelegramAdapter(mode={self._mode!r}, api={self._api_url!r}, running={self.running})"

    @property
    def running(self) -> bool:
        return self._running is not None

    @property
    def webhook_port(self) -> int | None:
        """The port the webhook is served on when the adapter serves it itself (after `start`)."""
        return self._running.port if self._running is not None else None

    # lifecycle ---------------------------------------------------------------

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        """Check the token (getMe), then poll or register the webhook; updates go to `inbound`.

        Raises:
            RuntimeError: already started (call `stop()` first).
            AdapterError: no token, a rejected token, or Telegram unreachable.
        """
        self._check_not_transitioning("start")
        if self._running is not None:
            raise RuntimeError("TelegramAdapter is already started: call stop() before starting it again")
        if not self._token:
            raise AdapterError(f"no Telegram bot token: set {self._token_setting}", platform=PLATFORM, status=401)
        self._transition = True
        await asyncio.to_thread(_tls_context)  # read the CA bundle off the event loop (once per process)
        bot = self._new_bot()
        running: _Running | None = None
        try:
            await self._call("getMe", bot.initialize)
            running = _Running(
                bot=bot, identity=BotIdentity(bot.bot.id, bot.bot.username or ""), inbound=inbound,
                outbound=TelegramOutbound(bot, call=self._call, throttle=self._throttle),
            )
            running.albums = AlbumBuffer(inbound.put)
            await self._set_menu(bot)
            if self._mode == "polling":
                await self._start_polling(running)
            else:
                await self._start_webhook(running)
        except BaseException:
            self._running = None
            await (self._teardown(running) if running is not None else bot.shutdown())
            raise
        finally:
            self._transition = False
        log.info("telegram.started", mode=self._mode, bot=f"@{running.identity.username}", api=self._api_url,
                 port=running.port)  # the webhook's bound port (its config may say 0: any free one)

    async def _start_polling(self, running: _Running) -> None:
        self._liveness.restart()
        running.updates = asyncio.Queue()
        updater = Updater(running.bot, running.updates)
        await updater.initialize()
        running.updater = updater
        try:
            await updater.start_polling(
                poll_interval=0.0,
                timeout=int(self._poll_timeout),
                allowed_updates=list(ALLOWED_UPDATES),
                error_callback=self._on_poll_error,
            )
        except TelegramError as exc:  # the bootstrap's deleteWebhook failed
            raise self._call.translate(exc, "deleteWebhook") from None
        running.pump = asyncio.create_task(self._pump(running), name="telegram-pump")
        self._running = running

    async def _start_webhook(self, running: _Running) -> None:
        options = self._webhook
        assert options is not None  # checked in __init__
        await self._call(
            "setWebhook",
            lambda: running.bot.set_webhook(
                options.url,
                secret_token=options.secret_token,
                allowed_updates=list(ALLOWED_UPDATES),
                max_connections=options.max_connections,
            ),
        )
        self._running = running
        if options.listen is not None:
            app = web.Application()
            app.add_routes(webhook_routes(options, self._accept_webhook))
            try:
                running.runner, running.port = await serve(app, options.listen, options.port, self._listener_limits)
            except OSError as exc:
                raise AdapterError(
                    f"cannot serve the Telegram webhook on {options.listen}:{options.port}: {exc}", platform=PLATFORM
                ) from None

    async def stop(self) -> None:
        """Stop polling (confirming what was fetched) or serving the webhook; queue every update already taken.

        The webhook stays registered with Telegram, which keeps updates until we are back.

        Raises:
            RuntimeError: not started.
        """
        self._check_not_transitioning("stop")
        running = self._running
        if running is None:
            raise RuntimeError("TelegramAdapter is not started: call start() first")
        self._transition = True
        try:
            await self._teardown(running)
        finally:
            self._running = None
            self._transition = False
        log.info("telegram.stopped", mode=self._mode)

    def _check_not_transitioning(self, what: str) -> None:
        if self._transition:
            raise RuntimeError(f"TelegramAdapter.{what}() called while a start() or stop() is in progress: await it first")

    async def _teardown(self, running: _Running) -> None:
        """Undo whatever part of `start` happened, in reverse order (also after a failed start)."""
        if running.updater is not None:
            if running.updater.running:
                await running.updater.stop()
            if running.pump is not None and running.updates is not None:
                await running.updates.put(_STOP)  # the pump queues what the updater handed over, then ends
                await running.pump
            await running.updater.shutdown()
        if running.runner is not None:
            await running.runner.cleanup()
        if running.albums is not None:
            await running.albums.flush()
        await running.bot.shutdown()

    def routes(self) -> list[web.RouteDef]:
        """The webhook route for the host application to mount (webhook mode without `listen`), else none."""
        if self._mode != "webhook" or self._webhook is None or self._webhook.listen is not None:
            return []
        return webhook_routes(self._webhook, self._accept_webhook)

    # inbound -------------------------------------------------------------------

    async def _pump(self, running: _Running) -> None:
        assert running.updates is not None
        while (item := await running.updates.get()) is not _STOP:
            if isinstance(item, Update):
                await self._deliver(item, running)

    async def _deliver(self, update: Update, running: _Running) -> InboundMessage | None:
        """Queue the update's message; returns it (None: ignored, unreadable, or held for its album)."""
        try:
            if update.callback_query is not None:
                decision = press_to_inbound(update)
            else:
                decision = to_inbound(update, running.identity, max_photo_bytes=self._max_attachment_bytes)
        except Exception as exc:  # noqa: BLE001 - one unreadable update must not stop the stream
            log.warning("telegram.update.unreadable", update_id=update.update_id, error=repr(exc))
            return None
        if isinstance(decision, Ignored):
            log.debug("telegram.update.ignored", update_id=update.update_id, reason=decision.reason)
            return None
        group = update.message.media_group_id if update.message is not None else None
        if group and running.albums is not None:
            running.albums.add(group, decision)  # an album's parts become one message
            return None
        await running.inbound.put(decision)
        return decision

    def expect_receipts(self) -> None:
        """Answer each webhook only once the gateway recorded its message (`adapters.receipts`)."""
        self._receipts.expect()

    def received(self, message: InboundMessage) -> None:
        self._receipts.settle(message.dedup_key)

    async def _accept_webhook(self, payload: dict[str, Any]) -> int:
        running = self._running
        if running is None:
            return 503  # Telegram retries later; nothing is lost
        try:
            update = Update.de_json(payload, running.bot)
        except _MALFORMED as exc:
            log.warning("telegram.webhook.rejected", reason="malformed update", error=repr(exc))
            return 400
        message = await self._deliver(update, running)
        if message is not None and not await self._receipts.wait(message.dedup_key):
            return 503  # not recorded in time: Telegram delivers it again (de-duplicated if it was recorded after all)
        return 200

    def liveness(self) -> Liveness:
        """Polling: alive while a getUpdates succeeded within the poll timeout plus grace. Webhook: while served."""
        if self._running is None:
            return Liveness(alive=False, last_ok_seconds_ago=None, detail="not started")
        if self._mode == "webhook":
            return Liveness(alive=True, last_ok_seconds_ago=None)
        return self._liveness.report()

    def _on_poll_error(self, exc: TelegramError) -> None:
        # PTB's retry loop keeps polling (backing off up to 30 s); we only report.
        log.warning("telegram.polling.error", error=type(exc).__name__, detail=self._call.redact(exc.message))

    # outbound ------------------------------------------------------------------

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        """Send `text` as MarkdownV2 (plain text if rejected), split at 4,096 characters.

        Args:
            target: the chat, and the forum topic as `thread_id`.
            text: the reply, in common Markdown.
            reply_to: a message id the first chunk replies to (sent anyway if it is gone).

        Returns:
            Every message sent, in order.

        Raises:
            RuntimeError: not started.
            ValueError: empty text or a target of another platform.
            AdapterError: Telegram refused (with `retry_after` when rate limited past the cap).
        """
        return await self._outbound("send", target).send(target, text, reply_to=reply_to)

    async def send_choices(self, target: ChatTarget, text: str, choices: Sequence[Choice]) -> list[SentMessage]:
        """Send plain `text` with one row of inline-keyboard buttons under it (a press comes back as a message)."""
        return await self._outbound("send", target).send_choices(target, text, choices_markup(choices))

    async def answer_privately(self, message: InboundMessage, text: str) -> bool:
        """answerCallbackQuery: `text` shown to the presser alone (an alert), or just the spinner stopped."""
        running = self._running
        if running is None or message.interaction is None:
            return False
        try:
            await self._call("answerCallbackQuery", lambda: running.bot.answer_callback_query(
                message.interaction or "", text=text or None, show_alert=bool(text)))
        except AdapterError:
            return False  # the press expired (Telegram allows about 15 minutes): the gateway answers in the chat
        return True

    async def edit(self, sent: SentMessage, text: str) -> None:
        """Replace a sent message's text; throttled per chat, superseded edits skipped, "not modified" ignored.

        Raises:
            RuntimeError: not started.
            ValueError: empty text.
            AdapterError: longer than one message (nothing is sent), or Telegram refused.
        """
        await self._outbound("edit", sent.target).edit(sent, text)

    async def fetch_attachment(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """An attachment's bytes through getFile and the file endpoint (`base_url` respected)."""
        if self._running is None:
            raise RuntimeError("TelegramAdapter.fetch_attachment() needs a started adapter: call start() first")
        return await download(self._running.bot, attachment, fetcher=self._files, max_bytes=max_bytes)

    async def _set_menu(self, bot: Bot) -> None:
        """The bot's command menu (setMyCommands), the default then one per translated language (`language_code`:
        Telegram shows each user the menu of their app's language). A failure is logged, never fatal."""
        if not self._commands:
            return
        menus: dict[str | None, list[TgBotCommand]] = {None: [TgBotCommand(c.name, c.description[:256]) for c in self._commands]}
        for command in self._commands:
            for code, description in command.translations:
                menus.setdefault(code, []).append(TgBotCommand(command.name, description[:256]))
        for language, menu in menus.items():
            try:
                await self._call("setMyCommands", functools.partial(bot.set_my_commands, menu, language_code=language))
            except AdapterError as exc:
                log.warning("telegram.commands_not_set", language=language, error=str(exc))

    async def typing(self, target: ChatTarget) -> None:
        """Show "typing…" for about 5 s (repeat every 4 s while working). Best effort: failures are only logged."""
        await self._outbound("typing", target).typing(target)

    async def react(self, target: ChatTarget, message_id: str, reaction: Reaction) -> None:
        """setMessageReaction with the closest emoji a bot may use (Telegram has no ✅ or ⚠️ for bots)."""
        await self._outbound("react", target).react(target, message_id, REACTIONS[reaction])

    async def delete(self, sent: SentMessage) -> None:
        """Delete a message the bot sent.

        Raises:
            AdapterError: Telegram refused (e.g. too old, or already deleted).
        """
        await self._outbound("delete", sent.target).delete(sent)

    @property
    def can_send(self) -> bool:
        return True

    async def probe(self) -> ProbeResult:
        """Call getMe with a throwaway client: the bot's name, or why not and how to fix it."""
        if not self._token:
            return ProbeResult(PLATFORM, False, f"no bot token: set {self._token_setting}")
        server = self._api_url.removesuffix("/bot")
        await asyncio.to_thread(_tls_context)
        bot = self._new_bot()
        try:
            await bot.initialize()
            me = bot.bot
            return ProbeResult(PLATFORM, True, f"@{me.username} (id {me.id}) via {server}")
        except NetworkError as exc:
            if isinstance(exc, BadRequest):
                return ProbeResult(PLATFORM, False, str(self._call.translate(exc, "getMe")))
            return ProbeResult(PLATFORM, False, f"cannot reach {server}: {self._call.redact(exc.message)}")
        except TelegramError as exc:
            return ProbeResult(PLATFORM, False, str(self._call.translate(exc, "getMe")))
        finally:
            await bot.shutdown()

    # plumbing ------------------------------------------------------------------

    def _new_bot(self) -> Bot:
        timeout = self._request_timeout

        def request(pool: int) -> HTTPXRequest:
            return HTTPXRequest(
                connection_pool_size=pool, read_timeout=timeout, write_timeout=timeout,
                connect_timeout=timeout, pool_timeout=timeout, httpx_kwargs={"verify": _tls_context()},
            )

        polling = PollingRequest(
            liveness=self._liveness, hang_after=self._hang_after, connection_pool_size=1, read_timeout=timeout,
            write_timeout=timeout, connect_timeout=timeout, pool_timeout=timeout, httpx_kwargs={"verify": _tls_context()},
        )
        return Bot(
            self._token, base_url=self._api_url, base_file_url=self._file_url,
            request=request(32), get_updates_request=polling,
        )

    def _outbound(self, what: str, target: ChatTarget) -> TelegramOutbound:
        if self._running is None:
            raise RuntimeError(f"TelegramAdapter.{what}() needs a started adapter: call start() first")
        if target.platform != PLATFORM:
            raise ValueError(f"TelegramAdapter.{what}() got a {target.platform!r} target")
        return self._running.outbound
