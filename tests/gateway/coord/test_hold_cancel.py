"""`hold` leaves its block even when a renewal swallows the cancellation meant to stop it."""
from __future__ import annotations

import asyncio
import time

from gateway.coord.base import LockLease
from gateway.coord.hold import hold
from gateway.coord.memory import MemorySessionLock


class SwallowingLock(MemorySessionLock):
    """A renewal that turns a cancellation into an answer, as a socket timeout firing at that moment can."""

    def __init__(self) -> None:
        super().__init__(now=time.time)
        self.renewing = asyncio.Event()

    async def renew(self, lease: LockLease, *, ttl: float = 30.0) -> bool:
        self.renewing.set()
        try:
            await asyncio.sleep(30)  # a renewal stuck on the network
        except asyncio.CancelledError:
            return True
        return True


async def test_exit_does_not_wait_forever_for_a_renewal_that_swallowed_its_cancel() -> None:
    lock = SwallowingLock()
    async with asyncio.timeout(5):
        async with hold(lock, "session", ttl=0.3):
            await lock.renewing.wait()
    assert await lock.holder("session") is None
