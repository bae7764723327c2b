"""One long-poller per bot token across gateway processes (docs/design.md §2.2): a lease around an adapter.

Owns `LeasedAdapter`, a wrapper (not a subclass) around a polling adapter:
`start` tries to take the token's `PollerLease`; the holder starts the inner
adapter and renews the lease every third of its TTL; the others keep trying
and take over within one TTL when the holder stops or dies. Losing the lease
stops the inner adapter. Sends go through the inner adapter (a process that
does not poll cannot send: its replies stay pending in the outbox for the
poller to deliver). Knows only the `PlatformAdapter` and `PollerLease` Protocols.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web

from adapters.base import (
    AdapterError,
    ChatTarget,
    InboundMessage,
    PlatformAdapter,
    PlatformLimits,
    ProbeResult,
    Reacting,
    Reaction,
    SentMessage,
)
from gateway.coord.base import CoordUnavailable, PollerLease

log = structlog.get_logger(__name__)

POLLER_LEASE_TTL = 30.0


class LeasedAdapter:
    """`PlatformAdapter` that polls only while this process holds the token's lease.

    Args:
        inner: the polling adapter.
        lease: the cross-process poller lease.
        name: the lease name (`poller_lease_name(platform, token)`, never the token).
        owner: this process's id.
        ttl: lease seconds; renewed every ttl/3.
    """

    def __init__(
        self, inner: PlatformAdapter, *, lease: PollerLease, name: str, owner: str, ttl: float = POLLER_LEASE_TTL
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.limits: PlatformLimits = inner.limits
        self._lease = lease
        self._lease_name = name
        self._owner = owner
        self._ttl = ttl
        self._task: asyncio.Task[None] | None = None
        self.polling = asyncio.Event()

    async def start(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        if self._task is not None:
            raise RuntimeError(f"{self.name}: already started; call stop() first")
        if await self._try(self._lease.acquire):
            await self._begin(inbound)
        self._task = asyncio.create_task(self._keep(inbound), name=f"poller-lease:{self.name}")

    async def _try(self, call: Callable[..., Awaitable[bool]]) -> bool:
        try:
            return bool(await call(self._lease_name, owner=self._owner, ttl=self._ttl))
        except CoordUnavailable:
            return False

    async def _begin(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        await self.inner.start(inbound)
        self.polling.set()
        log.info("poller.lease_taken", platform=self.name)

    async def _end(self) -> None:
        if self.polling.is_set():
            self.polling.clear()
            await self.inner.stop()

    async def _keep(self, inbound: asyncio.Queue[InboundMessage]) -> None:
        while True:
            await asyncio.sleep(self._ttl / 3)  # a renewal timer
            if self.polling.is_set():
                if not await self._try(self._lease.renew):
                    log.warning("poller.lease_lost", platform=self.name)
                    await self._end()
            elif await self._try(self._lease.acquire):
                await self._begin(inbound)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        was_polling = self.polling.is_set()
        await self._end()
        if was_polling:
            with contextlib.suppress(CoordUnavailable):
                await self._lease.release(self._lease_name, owner=self._owner)

    @property
    def can_send(self) -> bool:
        """Only the poller sends; the others leave pending replies to it."""
        return self.polling.is_set()

    def _require(self) -> PlatformAdapter:
        if not self.polling.is_set():
            raise AdapterError(f"{self.name}: another process holds the poller lease", platform=self.name)
        return self.inner

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        return await self._require().send(target, text, reply_to=reply_to)

    async def edit(self, sent: SentMessage, text: str) -> None:
        await self._require().edit(sent, text)

    async def typing(self, target: ChatTarget) -> None:
        if self.polling.is_set():
            await self.inner.typing(target)

    async def delete(self, sent: SentMessage) -> None:
        await self._require().delete(sent)

    async def react(self, target: ChatTarget, message_id: str, reaction: Reaction) -> None:
        inner = self._require()
        if isinstance(inner, Reacting):
            await inner.react(target, message_id, reaction)

    def routes(self) -> list[web.RouteDef]:
        return self.inner.routes()

    async def probe(self) -> ProbeResult:
        return await self.inner.probe()


__all__ = ["POLLER_LEASE_TTL", "LeasedAdapter"]
