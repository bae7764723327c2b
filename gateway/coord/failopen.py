"""Fail-open wrappers: a shared backend when it answers, this process's memory when it does not.

Owns `BackendHealth` (the outage state, the `errors` counter, the one warning
per outage) and one wrapper per Protocol, each composing a primary (Redis)
and a fallback (memory) implementation. Coordination must never freeze a
chat: when the primary raises `CoordUnavailable`, the wrapper answers from
the fallback and the chat goes on; when it answers again, it is used again.
Knows only the Protocols of `base.py`, never Redis itself.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

import structlog

from gateway.coord.base import (
    DEFAULT_DEDUP_TTL,
    DEFAULT_LOCK_TTL,
    AgentCache,
    CoordUnavailable,
    Deduplicator,
    LockLease,
    OutboundItem,
    Outbox,
    PendingOutbound,
    PollerLease,
    SessionLock,
)

log = structlog.get_logger(__name__)
T = TypeVar("T")

RETRY_AFTER = 1.0
"""Seconds to skip the primary after a failure, so an outage costs one timeout per second, not one per call."""
LOCAL_LEASES_BOUND = 1024
"""Above this many tracked leases, forget the ones whose local lock already expired (crashed callers)."""


class _Down:
    """Marker: the primary was not reached (or skipped during an outage)."""


DOWN: Final = _Down()


class BackendHealth:
    """Outage state of the shared backend; `errors` counts failed calls (read by metrics)."""

    def __init__(
        self, *, backend: str = "redis", retry_after: float = RETRY_AFTER, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.errors = 0
        self._backend = backend
        self._retry_after = retry_after
        self._now = now
        self._down_since: float | None = None
        self._last_failure = 0.0

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, exc: CoordUnavailable) -> None:
        """Count a failure; warn once per outage."""
        self.errors += 1
        self._last_failure = self._now()
        if self._down_since is None:
            self._down_since = self._last_failure
            log.warning("coord.redis_unavailable", backend=self._backend, op=exc.op, error=str(exc))

    async def attempt(self, call: Callable[[], Awaitable[T]]) -> T | _Down:
        """Run `call` on the primary; DOWN if it is unreachable or still in its retry pause."""
        if self._down_since is not None and self._now() - self._last_failure < self._retry_after:
            return DOWN
        try:
            result = await call()
        except CoordUnavailable as exc:
            self.failed(exc)
            return DOWN
        if self._down_since is not None:
            log.info("coord.redis_restored", backend=self._backend, outage_s=round(self._now() - self._down_since, 3))
            self._down_since = None
        return result


class FailOpenSessionLock:
    """Takes this process's lock first, then the shared one; if the shared one is down, the local lease alone.

    The local lock keeps one process exclusive across an outage boundary (a
    lease taken during an outage still excludes a later one taken on Redis).
    The returned lease carries the shared token when there is one. Between
    processes this holds only while Redis answers: replicas that share a
    PostgreSQL store take their session locks there instead (`authority.py`).
    """

    def __init__(self, primary: SessionLock, fallback: SessionLock, health: BackendHealth) -> None:
        self._primary = primary
        self._fallback = fallback
        self._health = health
        self._local: dict[str, LockLease] = {}  # returned token -> local lease
        self._shared: set[str] = set()  # returned tokens that are also shared leases

    async def acquire(self, key: str, *, ttl: float = DEFAULT_LOCK_TTL, wait: float | None = None) -> LockLease | None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        local = await self._fallback.acquire(key, ttl=ttl, wait=wait)
        if local is None:
            return None
        remaining = None if wait is None else max(0.0, wait - (loop.time() - started))
        try:
            shared = await self._health.attempt(lambda: self._primary.acquire(key, ttl=ttl, wait=remaining))
        except BaseException:
            await self._fallback.release(local)  # cancelled or a bug: don't leave the local lock held
            raise
        if shared is None:
            await self._fallback.release(local)
            return None
        await self._forget_expired()
        if isinstance(shared, _Down):
            self._local[local.token] = local
            return local
        self._local[shared.token] = local
        self._shared.add(shared.token)
        return shared

    async def renew(self, lease: LockLease, *, ttl: float = DEFAULT_LOCK_TTL) -> bool:
        local = self._local.get(lease.token)
        if local is None or not await self._fallback.renew(local, ttl=ttl):
            return False
        if lease.token not in self._shared:
            return True
        kept = await self._health.attempt(lambda: self._primary.renew(lease, ttl=ttl))
        return True if isinstance(kept, _Down) else kept  # unreachable: keep going rather than freeze the turn

    async def release(self, lease: LockLease) -> bool:
        local = self._local.pop(lease.token, None)
        if local is None:
            return False
        freed = await self._fallback.release(local)
        if lease.token in self._shared:
            self._shared.discard(lease.token)
            shared = await self._health.attempt(lambda: self._primary.release(lease))
            freed = freed if isinstance(shared, _Down) else shared  # unreachable: the TTL frees it
        return freed

    async def holder(self, key: str) -> str | None:
        shared = await self._health.attempt(lambda: self._primary.holder(key))
        if isinstance(shared, str):
            return shared
        local = await self._fallback.holder(key)
        if local is None:
            return None
        # Report the token the caller got back (the shared one when there was one).
        return next((token for token, lease in self._local.items() if lease.token == local), local)

    async def _forget_expired(self) -> None:
        if len(self._local) <= LOCAL_LEASES_BOUND:
            return
        for token, lease in list(self._local.items()):
            if await self._fallback.holder(lease.key) != lease.token:
                del self._local[token]
                self._shared.discard(token)


class FailOpenAgentCache:
    """The shared agent cache, or this process's own while it is unreachable.

    States saved during an outage are written back on the next `load_state`
    once the shared backend answers, so the newer local state wins. With
    `replicas_share_store`, `owner` answers None during an outage: another
    replica may have run a turn this process cannot hear of, so a live agent
    is rebuilt from the shared store rather than trusted.
    """

    def __init__(
        self, primary: AgentCache, fallback: AgentCache, health: BackendHealth, *, replicas_share_store: bool = False
    ) -> None:
        self._primary = primary
        self._fallback = fallback
        self._health = health
        self._replicas_share_store = replicas_share_store
        self._dirty: set[str] = set()  # keys whose newest state is only local

    async def touch(self, key: str, *, owner: str) -> list[str]:
        evicted = await self._health.attempt(lambda: self._primary.touch(key, owner=owner))
        return await self._fallback.touch(key, owner=owner) if isinstance(evicted, _Down) else evicted

    async def load_state(self, key: str) -> dict[str, Any] | None:
        if key in self._dirty:
            state = await self._fallback.load_state(key)
            if state is not None:
                written = await self._health.attempt(lambda: self._primary.save_state(key, state))
                if not isinstance(written, _Down):
                    self._dirty.discard(key)
            return state
        shared = await self._health.attempt(lambda: self._primary.load_state(key))
        return await self._fallback.load_state(key) if isinstance(shared, _Down) else shared

    async def save_state(self, key: str, state: Mapping[str, Any]) -> None:
        written = await self._health.attempt(lambda: self._primary.save_state(key, state))
        if isinstance(written, _Down):
            await self._fallback.save_state(key, state)
            self._dirty.add(key)
        else:
            self._dirty.discard(key)

    async def owner(self, key: str) -> str | None:
        shared = await self._health.attempt(lambda: self._primary.owner(key))
        if not isinstance(shared, _Down):
            return shared
        return None if self._replicas_share_store else await self._fallback.owner(key)

    async def evict(self, key: str) -> None:
        await self._health.attempt(lambda: self._primary.evict(key))
        await self._fallback.evict(key)
        self._dirty.discard(key)


class FailOpenDeduplicator:
    """Shared de-duplication, or this process's own while the shared one is unreachable.

    After an outage, ids claimed locally during it are still refused when
    the platform redelivers them.
    """

    def __init__(self, primary: Deduplicator, fallback: Deduplicator, health: BackendHealth) -> None:
        self._primary = primary
        self._fallback = fallback
        self._health = health
        self._used_fallback = False

    async def claim(self, delivery_id: str, *, ttl: float = DEFAULT_DEDUP_TTL) -> bool:
        first = await self._health.attempt(lambda: self._primary.claim(delivery_id, ttl=ttl))
        if isinstance(first, _Down):
            self._used_fallback = True
            return await self._fallback.claim(delivery_id, ttl=ttl)
        if first and self._used_fallback:
            return await self._fallback.claim(delivery_id, ttl=ttl)
        return first


class FailOpenPollerLease:
    """The shared poller lease, or a process-local one while it is unreachable.

    During an outage two processes may both poll one token; the platform
    rejects one of them (Telegram: 409 Conflict) until the lease works again.
    That beats no process polling at all.
    """

    def __init__(self, primary: PollerLease, fallback: PollerLease, health: BackendHealth) -> None:
        self._primary = primary
        self._fallback = fallback
        self._health = health

    async def acquire(self, name: str, *, owner: str, ttl: float) -> bool:
        held = await self._health.attempt(lambda: self._primary.acquire(name, owner=owner, ttl=ttl))
        return await self._fallback.acquire(name, owner=owner, ttl=ttl) if isinstance(held, _Down) else held

    async def renew(self, name: str, *, owner: str, ttl: float) -> bool:
        kept = await self._health.attempt(lambda: self._primary.renew(name, owner=owner, ttl=ttl))
        # Unreachable: keep polling under a local lease rather than stop the bot.
        return await self._fallback.acquire(name, owner=owner, ttl=ttl) if isinstance(kept, _Down) else kept

    async def release(self, name: str, *, owner: str) -> None:
        await self._health.attempt(lambda: self._primary.release(name, owner=owner))
        await self._fallback.release(name, owner=owner)


class FailOpenOutbox:
    """The shared outbox, or this process's memory while it is unreachable.

    Items recorded locally move to the shared outbox at the next `pending`
    that reaches it (their ids keep working), and acks that could not be
    delivered are retried then. Recovery claims fail closed during an outage:
    resending waits for the shared record instead of risking a duplicate.
    """

    def __init__(self, primary: Outbox, fallback: Outbox, health: BackendHealth) -> None:
        self._primary = primary
        self._fallback = fallback
        self._health = health
        self._local: set[str] = set()  # ids that live only in the fallback
        self._moved: dict[str, str] = {}  # local id -> shared id, after a move
        self._unacked: set[str] = set()  # shared ids whose ack did not reach the primary

    async def put(self, item: OutboundItem) -> str:
        shared_id = await self._health.attempt(lambda: self._primary.put(item))
        if not isinstance(shared_id, _Down):
            return shared_id
        local_id = await self._fallback.put(item)
        self._local.add(local_id)
        return local_id

    async def ack(self, item_id: str) -> None:
        if item_id in self._local:
            self._local.discard(item_id)
            await self._fallback.ack(item_id)
            return
        shared_id = self._moved.pop(item_id, item_id)
        done = await self._health.attempt(lambda: self._primary.ack(shared_id))
        if isinstance(done, _Down):
            self._unacked.add(shared_id)

    async def pending(self, *, older_than: float = 0.0) -> list[PendingOutbound]:
        if await self._sync():
            shared = await self._health.attempt(lambda: self._primary.pending(older_than=older_than))
            found = [] if isinstance(shared, _Down) else [p for p in shared if p.id not in self._unacked]
        else:
            found = []
        found += await self._fallback.pending(older_than=older_than)
        return sorted(found, key=lambda p: (p.item.created_at, p.id))

    async def claim(self, item_id: str, *, owner: str, ttl: float) -> bool:
        if item_id in self._local:
            return await self._fallback.claim(item_id, owner=owner, ttl=ttl)
        shared_id = self._moved.get(item_id, item_id)
        claimed = await self._health.attempt(lambda: self._primary.claim(shared_id, owner=owner, ttl=ttl))
        return False if isinstance(claimed, _Down) else claimed

    async def _sync(self) -> bool:
        """Deliver backlogged acks and move local items to the primary; False if it is unreachable."""
        for unacked in list(self._unacked):
            if isinstance(await self._health.attempt(lambda: self._primary.ack(unacked)), _Down):  # noqa: B023 - awaited before the loop moves on
                return False
            self._unacked.discard(unacked)
        for pending in await self._fallback.pending() if self._local else []:
            moved = await self._health.attempt(lambda: self._primary.put(pending.item))  # noqa: B023 - awaited before the loop moves on
            if isinstance(moved, _Down):
                return False
            self._moved[pending.id] = moved
            self._local.discard(pending.id)
            await self._fallback.ack(pending.id)
        return True
