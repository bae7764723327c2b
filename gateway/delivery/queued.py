"""The "queued" notice: one message per busy session, edited as more messages wait behind the running reply.

Owns `QueuedNotices`. The first message that has to wait gets a notice; the
ones after it in the same busy spell edit that notice's count (at the chat's
edit rate, the last count always shown) instead of sending one notice each:
a burst of 1,000 messages gives one notice, not 999. When a message finds
its session idle the spell is over and the next wait starts a new notice. On
a platform that cannot edit, the first notice stands alone. Knows nothing of
agents; speaks through `Delivery`.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from adapters.base import ChatTarget, SentMessage
from gateway.delivery.outbound import Delivery
from gateway.i18n import Phrase


@dataclass(slots=True)
class _Notice:
    target: ChatTarget
    position: int
    language: str
    sent: SentMessage | None = None
    flusher: asyncio.Task[None] | None = None


class QueuedNotices:
    """One edited notice per session's busy spell.

    Args:
        delivery: sends and edits (best effort: a failed notice is only logged there).
        text: the notice in a language for `n` answering jobs ahead.
    """

    def __init__(self, delivery: Delivery, *, text: Callable[[str, int], Phrase]) -> None:
        self._delivery = delivery
        self._text = text
        self._open: dict[str, _Notice] = {}
        self._flushers: set[asyncio.Task[None]] = set()

    async def busy(self, key: str, target: ChatTarget, position: int, language: str) -> None:
        """A message of session `key` waits behind `position` others: show or update the notice (in `language`)."""
        notice = self._open.get(key)
        if notice is None:
            notice = self._open[key] = _Notice(target, position, language)
            notice.sent = await self._delivery.send_notice(target, self._text(language, position))
            return
        notice.position = position
        if notice.sent is None or notice.flusher is not None or not self._delivery.can_edit(target):
            return  # the running flusher shows the newest count when its edit slot comes
        notice.flusher = asyncio.create_task(self._flush(notice), name=f"queued-notice:{key}")
        self._flushers.add(notice.flusher)
        notice.flusher.add_done_callback(self._flushers.discard)

    def idle(self, key: str) -> None:
        """A message of `key` found its session idle: the next wait gets a new notice."""
        self._open.pop(key, None)

    async def _flush(self, notice: _Notice) -> None:
        assert notice.sent is not None
        shown = -1
        try:
            while notice.position != shown:
                shown = notice.position
                await self._delivery.edit_notice(notice.sent, self._text(notice.language, shown))  # waits for the edit slot
        finally:
            notice.flusher = None

    async def close(self) -> None:
        """Stop pending edits (repeatable)."""
        for task in list(self._flushers):
            task.cancel()
        for task in list(self._flushers):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._open.clear()


__all__ = ["QueuedNotices"]
