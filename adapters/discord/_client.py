"""The discord.py `Client` Chorus runs, and the task that keeps its gateway connection alive.

Owns `ChorusClient` (intents with Message Content, quiet allowed mentions,
inbound messages handed to one callback, library errors logged through
structlog, a configurable pause before re-IDENTIFY, and gateway parsers that
drop a malformed event instead of dropping the connection) and
`run_gateway` (discord.py's own reconnect/RESUME loop, restarted with
backoff if anything unexpected escapes it; fatal close codes end it with a
translated `AdapterError`). Knows nothing of `InboundMessage`, sessions or
the gateway.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import discord
import structlog

from ._errors import translate

log = structlog.get_logger(__name__)

MAX_CRASH_BACKOFF = 60.0
# A crash this long after the previous one starts the backoff from the beginning again.
CRASH_RESET_SECONDS = 120.0


def intents() -> discord.Intents:
    """Guilds, guild and DM messages, plus the privileged Message Content intent (no members/presences)."""
    wanted = discord.Intents.default()
    wanted.message_content = True
    return wanted


def _guarded(event: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
    def parse_or_drop(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:  # noqa: BLE001 - one bad event must not end the connection (discord.py lets it escape)
            log.warning("discord.gateway.bad_event", gateway_event=event, error=type(exc).__name__, detail=str(exc)[:200])

    return parse_or_drop


class ChorusClient(discord.Client):
    """A `discord.Client` whose only job is to hand messages (and their edits) to its callbacks."""

    def __init__(
        self,
        *,
        on_message_cb: Callable[[discord.Message], Awaitable[None]],
        on_interaction_cb: Callable[[discord.Interaction], Awaitable[None]] | None = None,
        on_edit_cb: Callable[[discord.RawMessageUpdateEvent], Awaitable[None]] | None = None,
        guild_ready_timeout: float,
        heartbeat_timeout: float,
        max_ratelimit_timeout: float,
        reidentify_delay: float,
    ) -> None:
        super().__init__(
            intents=intents(),
            guild_ready_timeout=guild_ready_timeout,
            heartbeat_timeout=heartbeat_timeout,
            max_ratelimit_timeout=max_ratelimit_timeout,
            # The model's text must not ping @everyone or roles; replying to a user may ping them.
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=True),
        )
        self._on_message_cb = on_message_cb
        self._on_interaction_cb = on_interaction_cb
        self._on_edit_cb = on_edit_cb
        self._reidentify_delay = reidentify_delay
        # The parsers dict is shared by every websocket this client opens; wrapping its values once covers them all.
        parsers = self._connection.parsers
        for event, parse in list(parsers.items()):
            parsers[event] = _guarded(event, parse)

    async def on_message(self, message: discord.Message) -> None:
        await self._on_message_cb(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if self._on_edit_cb is not None:
            await self._on_edit_cb(payload)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        if self._on_interaction_cb is not None:
            await self._on_interaction_cb(interaction)

    async def on_ready(self) -> None:
        log.info("discord.gateway.ready", user_id=str(self.user.id) if self.user else None, guilds=len(self.guilds))

    async def on_resumed(self) -> None:
        log.info("discord.gateway.resumed")

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        log.exception("discord.event.failed", handler=event_method)

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """Pause before a re-IDENTIFY (discord.py waits 5 s; Discord allows one IDENTIFY per 5 s)."""
        if not initial:
            await asyncio.sleep(self._reidentify_delay)  # rate limiting, not synchronisation


async def run_gateway(client: discord.Client, *, crash_backoff: float) -> None:
    """Run `client.connect()` until the client is closed.

    discord.py reconnects and RESUMEs by itself after network trouble and
    resumable close codes; this loop only restarts it (a fresh IDENTIFY)
    when something unexpected escapes it, such as an undecodable frame.

    Raises:
        AdapterError: the gateway closed for good (bad token 4004, missing
            intents 4014…); discord.py has closed the client.
    """
    crashes, last_crash = 0, float("-inf")
    while not client.is_closed():
        try:
            await client.connect(reconnect=True)
            return
        except (discord.ConnectionClosed, discord.PrivilegedIntentsRequired, discord.LoginFailure) as exc:
            error = translate(exc, action="gateway connection")
            log.error("discord.gateway.failed", error=str(error), close_code=error.status)
            raise error from exc
        except Exception as exc:  # noqa: BLE001 - a task boundary
            if client.is_closed():
                return
            now = time.monotonic()
            crashes = 1 if now - last_crash > CRASH_RESET_SECONDS else crashes + 1
            last_crash = now
            delay = min(MAX_CRASH_BACKOFF, crash_backoff * 2 ** min(crashes - 1, 10))
            log.error("discord.gateway.crashed", error=type(exc).__name__, detail=str(exc)[:200], retry_in=delay)
            ws = getattr(client, "ws", None)
            if ws is not None and ws.open:
                await ws.close(code=4000)  # stops its heartbeat thread too
            await asyncio.sleep(delay)  # backoff, not synchronisation
