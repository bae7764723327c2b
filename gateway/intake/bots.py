"""Messages from other bots: whether one may reach the model, and the loop guard across replicas.

Owns `BotsMode`, `bot_refusal` (a pure rule: `gateway.allow_bots` none |
mentions | all) and `BotLoopGuard` (replies to bots per chat, counted in the
coordination backend's `WindowCounter`, so two replicas share one budget and
two bots mentioning each other stop within `gateway.bot_loop_guard`). Our own
messages never arrive here: each adapter drops them. Knows nothing of sessions.
"""
from __future__ import annotations

from typing import Literal, TypeAlias

from adapters.base import InboundMessage
from gateway.commands.table import COMMANDS
from gateway.coord.counter import WindowCounter

BotsMode: TypeAlias = Literal["none", "mentions", "all"]


def bot_refusal(message: InboundMessage, mode: BotsMode) -> str | None:
    """Why a bot's message is dropped before any trigger rule, or None when the rules may go on."""
    if not message.sender_is_bot:
        return None
    if mode == "none":
        return "message from a bot (gateway.allow_bots: none)"
    if COMMANDS.parse(message.text) is not None:
        return "command from a bot"
    if mode == "mentions" and not (message.mentions_bot or message.replies_to_bot):
        return "bot did not address us (gateway.allow_bots: mentions)"
    return None


def loop_key(message: InboundMessage) -> str:
    """The counter of replies to bots in one chat (all its threads and topics together)."""
    return f"botloop:{message.platform}:{message.chat_id}"


class BotLoopGuard:
    """Counts each reply to a bot per chat; beyond `max_replies` in `window_seconds` the next ones are dropped.

    Args:
        counter: the coordination backend's counter (Redis when `redis.url` is set, else in-process).
    """

    def __init__(self, counter: WindowCounter) -> None:
        self._counter = counter

    async def allows(self, message: InboundMessage, *, max_replies: int, window_seconds: float) -> bool:
        """Count this reply; False once the chat is over its budget for the current window."""
        count = await self._counter.hit(loop_key(message), window=window_seconds)
        return count <= max_replies


__all__ = ["BotLoopGuard", "BotsMode", "bot_refusal", "loop_key"]
