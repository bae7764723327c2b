"""`gateway.reactions`: 👀 when a message is taken for a turn, ✅ when it was answered, ⚠️ when the turn failed.

Owns `Reactions`, which asks the message's adapter to react where it can
(`adapters.base.Reacting`: Telegram setMessageReaction, Discord, Slack
reactions.add; each picks its platform's emoji). A reaction is a courtesy: one
the platform refuses is logged and never fails a turn. Reads the switch live.
"""
from __future__ import annotations

from collections.abc import Callable

import structlog

from adapters.base import InboundMessage, Reacting, Reaction
from gateway.delivery.outbound import Delivery

log = structlog.get_logger(__name__)


class Reactions:
    """Reacts to inbound messages while `enabled()` says so.

    Args:
        delivery: where the adapters are.
        enabled: `gateway.reactions` as the running config says.
    """

    def __init__(self, delivery: Delivery, enabled: Callable[[], bool]) -> None:
        self._delivery = delivery
        self._enabled = enabled

    async def mark(self, message: InboundMessage, reaction: Reaction) -> None:
        if not self._enabled() or message.scheduled:  # a scheduled turn has no platform message to react to
            return
        adapter = self._delivery.adapter(message.platform)
        if not isinstance(adapter, Reacting):
            return
        try:
            await adapter.react(message.target, message.message_id, reaction)
        except Exception as exc:  # noqa: BLE001 - a reaction must never fail a turn
            log.warning("reaction.failed", reaction=reaction, error=type(exc).__name__)


__all__ = ["Reactions"]
