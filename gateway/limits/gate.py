"""The one place a message meets the spend limits: admit or refuse, and count what the model calls cost.

Owns `SpendGate`. `admit(message, route)` builds the rules from the running
config (`limits`, the chat's `chats."…".limits`; admins are exempt with
`limits.exempt_admins`) and asks the `SpendLimiter` in one call; a refusal is
published (`LimitHit`, counted for Prometheus) and logged once per window
(`limits.hit`). `metered(message, route)` sets the agent's usage sink for a
job: every model call inside it (tool rounds, summaries, transcription, and
the background review started from it) is charged to the sender, the chat,
the whole bot and the model, priced from `pricing`, and tallied for the reply's
footer. An unreachable Redis never stops a chat: the check admits and spend
is dropped, logged once per outage. Reads the config through `ChatPolicy`, so
every key follows a live reload.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import structlog

from adapters.base import InboundMessage
from agent.usage_meter import ModelUsage, usage_sink
from gateway.chats.policy import ChatPolicy
from gateway.coord import Lifecycle
from gateway.coord.base import CoordUnavailable
from gateway.i18n import Phrase, say, say_n
from gateway.intake.routing import Route
from gateway.limits.base import (
    GLOBAL_FIELD,
    Charge,
    DaySpend,
    Hit,
    Rule,
    SpendLimiter,
    chat_field,
    next_midnight,
    user_field,
    wall_clock,
)
from gateway.limits.rules import price, rules_for, unknown_priced_models, usage_lines
from gateway.ops.events import EventBus, LimitHit, Spent

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class Tally:
    """What one job's model calls cost so far (the reply's footer reads it)."""

    tokens: int = 0
    cost: float = 0.0
    unpriced: bool = False  # a model without a price answered: the cost is a lower bound

    def footer(self, mode: str, language: str) -> Phrase | None:
        """The line under a reply for `gateway.usage_footer` (None: off, or no model call)."""
        if mode == "off" or self.tokens == 0:
            return None
        if mode == "tokens":
            return say_n(language, "footer.tokens", self.tokens)
        if self.unpriced and self.cost == 0:
            return say_n(language, "footer.cost", self.tokens, cost=say(language, "footer.cost_unknown"))
        return say_n(language, "footer.cost", self.tokens, cost=f"{self.cost:.4g}" + ("+" if self.unpriced else ""))


class SpendGate:
    """Spend and rate limits for one gateway process.

    Args:
        limiter: the counters (Redis across replicas, else this process's).
        policy: the running config (`limits`, `pricing`, `chats`, admins) as reloads change it.
        bus: where `LimitHit` and `Spent` are published (metrics read them).
        lifecycle: what `start()`/`stop()` open and close (the limiter's connection or state file).
        clock: epoch seconds (tests inject one; see `limits_clock` in gateway/config.py).
    """

    def __init__(
        self, limiter: SpendLimiter, *, policy: ChatPolicy, bus: EventBus, lifecycle: Lifecycle,
        clock: Callable[[], float] = wall_clock,
    ) -> None:
        self.limiter = limiter
        self._policy = policy
        self._bus = bus
        self._lifecycle = lifecycle
        self.clock = clock
        self._down = False

    async def start(self) -> None:
        try:
            await self._lifecycle.start()
        except CoordUnavailable as exc:
            self._unavailable(exc)
        self.warn_unknown_prices()

    async def stop(self) -> None:
        await self._lifecycle.stop()

    def warn_unknown_prices(self) -> None:
        """`pricing` names no model this gateway can use: probably a typo (warned, not refused)."""
        config = self._policy.config
        models = [c.name for c in self._policy.models()] + [config.auxiliary.compression.model or "", config.transcription.model]
        for name in unknown_priced_models(config.pricing, models):
            log.warning("limits.pricing_unknown_model", model=name, fix="use a name from model.name, model.allowed, "
                        "model.fallbacks, auxiliary.model or transcription.model")

    def footer_mode(self) -> str:
        """`gateway.usage_footer` as the running config says."""
        return self._policy.config.gateway.usage_footer

    def rules(self, message: InboundMessage, route: Route) -> list[Rule]:
        config = self._policy.config
        chat = self._policy.chat(route.chat_scope)
        return rules_for(config.limits, chat.limits if chat is not None else None, platform=message.platform,
                         user_id=message.user_id, chat_scope=route.chat_scope)

    def exempt(self, message: InboundMessage) -> bool:
        return self._policy.config.limits.exempt_admins and message.user_id in self._policy.admins(message.platform)

    async def admit(self, message: InboundMessage, route: Route) -> Hit | None:
        """None: the message may reach the model (counted in its windows); else the limit it hit."""
        if self.exempt(message):
            return None
        rules = self.rules(message, route)
        if not rules:
            return None
        try:
            hit = await self.limiter.admit(rules, now=self.clock(), message_id=message.dedup_key)
        except CoordUnavailable as exc:
            self._unavailable(exc)
            return None  # fail open: a Redis outage never silences the bot
        self._available()
        if hit is not None:
            self._bus.publish(LimitHit(hit.rule.scope, hit.rule.name))
            if hit.first:
                log.info("limits.hit", limit=hit.rule.name, subject=hit.rule.field, resets_at=round(hit.resets_at))
        return hit

    @contextlib.contextmanager
    def metered(self, message: InboundMessage, route: Route) -> Iterator[Tally]:
        """Charge every model call made inside (and in tasks started inside) to this sender and chat."""
        tally = Tally()
        fields = (user_field(message.platform, message.user_id), chat_field(route.chat_scope), GLOBAL_FIELD)

        async def charge(usage: ModelUsage) -> None:
            cost = price(self._policy.config.pricing, usage.model, usage.input_tokens, usage.output_tokens)
            tally.tokens += usage.total
            tally.cost += cost or 0.0
            tally.unpriced = tally.unpriced or cost is None
            self._bus.publish(Spent(usage.model, usage.total, cost))
            try:
                await self.limiter.spend(Charge(fields, usage.model, usage.total, cost), now=self.clock())
            except CoordUnavailable as exc:
                self._unavailable(exc)
            except Exception as exc:  # noqa: BLE001 - counting must never fail a turn
                log.warning("limits.spend_failed", error=type(exc).__name__)

        token = usage_sink.set(charge)
        try:
            yield tally
        finally:
            usage_sink.reset(token)

    async def usage(self, message: InboundMessage, route: Route, language: str) -> list[Phrase]:
        """`/usage`'s lines: what is left of each limit on this sender in this chat, and when it resets."""
        rules = self.rules(message, route)
        if self.exempt(message) and rules:
            return [say(language, "limit.exempt")]
        now = self.clock()
        try:
            spend = await self.limiter.day(now=now)
            windows = await self.limiter.in_window([r.field for r in rules if r.metric == "messages"], now=now)
        except CoordUnavailable as exc:
            self._unavailable(exc)
            return [say(language, "limit.unreadable")]
        return usage_lines(rules, spend, windows, resets=next_midnight(now), language=language)

    async def today(self) -> DaySpend:
        return await self.limiter.day(now=self.clock())

    def _unavailable(self, exc: Exception) -> None:
        if not self._down:
            log.warning("limits.unavailable", error=str(exc), note="limits admit everything until Redis answers")
        self._down = True

    def _available(self) -> None:
        if self._down:
            log.info("limits.available")
        self._down = False


__all__ = ["SpendGate", "Tally"]
