"""The home channel (`gateway.home_channel`): restart and outage notices for the operator.

Owns `HomeChannel`. At start it says how long this replica was away (from the last moment it recorded
itself alive under home, read on the injected clock) and how many journaled messages it answered again;
while running it says when an adapter stops receiving (and when it is back), and when the model has been
failing for `MODEL_OUTAGE_MINUTES`. Results of operator jobs without a chat go there through the
scheduler. Texts come from the catalogues (`schedule.*`), in the home chat's language. Knows platforms only through `Notify`.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import structlog

from adapters.base import ChatTarget
from gateway.config import ChorusConfig
from gateway.i18n import Phrase, language_for, msgid, say
from gateway.ops.events import GatewayEvent, TurnFailed, TurnFinished

log = structlog.get_logger(__name__)

ALIVE_FILE = "alive_at"  # under home: epoch seconds this replica last recorded itself running
ALIVE_INTERVAL = 5.0  # how often it is written (a crash's downtime is overstated by at most this)
MODEL_OUTAGE_MINUTES = 5.0  # model failures for this long (no turn answered in between) make one notice
# TurnFailed error names that are the model's fault (chorus_errors), not a chat's or the store's.
MODEL_ERRORS = frozenset({"ModelError", "ModelUnavailable", "RateLimited", "ModelAuthError", "ModelNotConfigured",
                          "ContextOverflow"})

Notify = Callable[[ChatTarget, Phrase], Awaitable[None]]


def home_target(channel: str | None) -> ChatTarget | None:
    if not channel:
        return None
    platform, _, chat_id = channel.partition(":")
    return ChatTarget(platform=platform, chat_id=chat_id)


class HomeChannel:
    """Notices to `gateway.home_channel` (live: nothing is sent while it is unset).

    Args:
        config: the running config.
        home: this replica's home directory (the alive mark).
        clock: epoch seconds (the injected test clock under `chorus run`).
    """

    def __init__(self, config: Callable[[], ChorusConfig], *, home: Path, clock: Callable[[], float]) -> None:
        self._config = config
        self._alive = home / ALIVE_FILE
        self._clock = clock
        self._notify: Notify | None = None
        self._down: set[str] = set()
        self._model_failing_since: float | None = None
        self._model_told = False
        self._pending: set[asyncio.Task[None]] = set()

    def bind(self, notify: Notify) -> None:
        self._notify = notify

    async def say(self, key: str, **fields: object) -> None:
        """The catalogue's text `key` in the home chat's language (`chats."…".language`, else a fixed
        `gateway.language`, else English)."""
        config = self._config()
        target = home_target(config.gateway.home_channel)
        if target is None or self._notify is None:
            return
        language = language_for(config, config.gateway.home_channel or "", None)
        await self._notify(target, say(language, key, **fields))

    def _say_later(self, key: str, **fields: object) -> None:
        """From a synchronous caller (the event bus, the adapter watch)."""
        task = asyncio.get_running_loop().create_task(self.say(key, **fields))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def started(self, *, resumed: int) -> None:
        """The restart notice, when an earlier run of this home left its alive mark."""
        try:
            last = float(self._alive.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            last = None
        self._mark_alive()
        if last is not None:
            seconds = max(0, round(self._clock() - last))
            log.info("home.restarted", away_seconds=seconds, resumed=resumed)
            await self.say(msgid("schedule.restarted"), seconds=seconds, replies=resumed)

    def _mark_alive(self) -> None:
        try:
            self._alive.parent.mkdir(parents=True, exist_ok=True)
            self._alive.write_text(repr(self._clock()), encoding="utf-8")
        except OSError as exc:
            log.warning("home.alive_mark_failed", error=type(exc).__name__)

    async def loop(self) -> None:
        """Keep the alive mark current (the last one is written as the loop stops)."""
        try:
            while True:
                await asyncio.sleep(ALIVE_INTERVAL)  # a heartbeat timer
                self._mark_alive()
        finally:
            self._mark_alive()

    def adapters(self, down: Mapping[str, str]) -> None:
        """The adapters not receiving now (name -> why): a notice when one stops, and when it is back."""
        for name, reason in down.items():
            if name not in self._down:
                self._down.add(name)
                self._say_later(msgid("schedule.adapter_down"), platform=name, reason=reason)
        for name in list(self._down - set(down)):
            self._down.discard(name)
            self._say_later(msgid("schedule.adapter_back"), platform=name)

    def on_event(self, event: GatewayEvent) -> None:
        """Model failures from the event bus: one notice once they last `MODEL_OUTAGE_MINUTES`, one when it answers."""
        if isinstance(event, TurnFinished):
            if self._model_told:
                self._say_later(msgid("schedule.model_back"))
            self._model_failing_since, self._model_told = None, False
        elif isinstance(event, TurnFailed) and event.error in MODEL_ERRORS:
            now = self._clock()
            if self._model_failing_since is None:
                self._model_failing_since = now
            minutes = (now - self._model_failing_since) / 60
            if minutes >= MODEL_OUTAGE_MINUTES and not self._model_told:
                self._model_told = True
                self._say_later(msgid("schedule.model_failing"), minutes=round(minutes), error=event.error)


__all__ = ["ALIVE_FILE", "HomeChannel", "MODEL_OUTAGE_MINUTES", "home_target"]
