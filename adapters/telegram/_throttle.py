"""Per-chat edit throttling: about one edit per interval per chat, intermediate edits merged away.

Owns `EditThrottle`. Streaming replies edit one message many times a second;
Telegram allows about one edit per second per chat before answering 429. Each
`submit` waits its turn on the chat; while it waits, a newer edit of the same
message supersedes it (the older call returns False without calling the API),
so the last text is always delivered and nothing in between piles up.
The clock and the sleep are injected so tests control time.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
_PRUNE_ABOVE = 1024  # chats remembered before idle ones are forgotten


@dataclass
class _ChatState:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last: float | None = None
    latest: dict[str, int] = field(default_factory=dict)  # message id -> newest ticket
    waiting: int = 0


class EditThrottle:
    """Spaces edits per chat by `interval` seconds and drops superseded ones."""

    def __init__(self, *, interval: float, clock: Clock, sleep: Sleep) -> None:
        self._interval = interval
        self._clock = clock
        self._sleep = sleep
        self._chats: dict[str, _ChatState] = {}
        self._tickets = 0

    async def submit(self, chat: str, message: str, deliver: Callable[[], Awaitable[None]]) -> bool:
        """Run `deliver` once the chat's interval has passed, unless a newer edit of `message` arrives first.

        Args:
            chat: the chat the edit goes to (the throttling key).
            message: the edited message's id (the merging key).
            deliver: performs the edit; its errors propagate to this caller.

        Returns:
            True if this edit was delivered, False if a newer one superseded it.
        """
        self._prune()
        state = self._chats.setdefault(chat, _ChatState())
        self._tickets += 1
        ticket = self._tickets
        state.latest[message] = ticket
        state.waiting += 1
        try:
            async with state.lock:
                if state.latest.get(message) != ticket:
                    return False
                if state.last is not None:
                    wait = state.last + self._interval - self._clock()
                    if wait > 0:
                        await self._sleep(wait)
                if state.latest.get(message) != ticket:
                    return False
                state.last = self._clock()  # the rate Telegram enforces is of requests started
                try:
                    await deliver()
                finally:
                    if state.latest.get(message) == ticket:
                        del state.latest[message]
                return True
        finally:
            state.waiting -= 1

    def _prune(self) -> None:
        if len(self._chats) <= _PRUNE_ABOVE:
            return
        now = self._clock()
        for chat, state in list(self._chats.items()):
            if state.waiting == 0 and (state.last is None or now - state.last >= self._interval):
                del self._chats[chat]
