"""Receipts: an adapter answers its platform only once the gateway recorded the message.

Owns `IntakeReceipts` (the capability the gateway looks for) and `Receipts`
(the waiters an adapter keeps). A webhook answered 200 before the message is
recorded loses it if the process dies in between; answered after, a dead
process answers nothing and the platform (or the load balancer) delivers
it again, to a replica that is alive. Keyed by `InboundMessage.dedup_key`.
"""
from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from adapters.base import InboundMessage

RECEIPT_TIMEOUT = 10.0
"""Seconds a webhook waits for the receipt before answering 503 (the platform retries; de-duplication holds)."""


@runtime_checkable
class IntakeReceipts(Protocol):
    """An adapter that can wait for the consumer's word that each queued message is recorded."""

    def expect_receipts(self) -> None:
        """From now on the consumer calls `received` for every message it takes from the queue."""
        ...

    def received(self, message: InboundMessage) -> None:
        """`message` is recorded (or was decided not to need recording)."""
        ...


class Receipts:
    """Waiters by dedup key; inactive (every wait returns at once) until `expect` is called."""

    def __init__(self, *, timeout: float = RECEIPT_TIMEOUT) -> None:
        self._timeout = timeout
        self._active = False
        self._waiting: dict[str, asyncio.Future[None]] = {}

    def expect(self) -> None:
        self._active = True

    def settle(self, key: str) -> None:
        waiter = self._waiting.pop(key, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, key: str) -> bool:
        """True once `key` is settled (at once when inactive); False after the timeout."""
        if not self._active:
            return True
        waiter = self._waiting.setdefault(key, asyncio.get_running_loop().create_future())
        try:
            async with asyncio.timeout(self._timeout):
                await asyncio.shield(waiter)
        except TimeoutError:
            return False
        finally:
            if self._waiting.get(key) is waiter:
                del self._waiting[key]
        return True


__all__ = ["RECEIPT_TIMEOUT", "IntakeReceipts", "Receipts"]
