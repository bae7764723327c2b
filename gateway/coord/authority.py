"""`StoreAuthorityLock`: session locks held in the shared store alone, Redis or not.

Owns `StoreAuthorityLock` and `Closable`. When replicas share a PostgreSQL
store, its advisory locks are the one authority on who runs a session: a
lease is this process's local lock (its own callers queue there) plus the
store's lock, and Redis plays no part. The earlier scheme (Redis locks, the
store's only while Redis was down) let two turns of a session run at once
across every change of backend: a lease held in Redis when Redis died was
invisible to the store, one taken from the store during the outage was
invisible to Redis when it came back, and a restarted Redis forgot every
lock. With one authority there is no switch, so nothing to get wrong at it.
If the store itself is unreachable, the local lease stands alone (the turn
cannot store its result then anyway) and `degraded` says so.
Knows only the `SessionLock` Protocol, never PostgreSQL itself.
"""
from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

import structlog

from gateway.coord.base import DEFAULT_LOCK_TTL, CoordUnavailable, LockLease, SessionLock

log = structlog.get_logger(__name__)

LOCAL_TTL = 3600.0
"""Seconds this process's own half of a lease lives without renewal. The store's lock is what excludes other
processes, and it lives with the connection, not a TTL; the local half only queues this process's callers, and
must not lapse under a slow event loop (a loaded machine delays renewals by seconds) while the store's is held."""


@runtime_checkable
class Closable(Protocol):
    """A lock that holds a connection, closed at shutdown (freeing what it holds)."""

    async def close(self) -> None: ...


class StoreAuthorityLock:
    """This process's lock, then the shared store's; the returned lease is the store's (or the local one alone).

    Args:
        local: this process's locks (its callers wait here without polling the store).
        store: the shared store's locks, the authority between processes.
    """

    def __init__(self, local: SessionLock, store: SessionLock) -> None:
        self._local = local
        self._store = store
        self._pairs: dict[str, LockLease] = {}  # returned token -> local lease
        self._alone: set[str] = set()  # returned tokens that are local leases only (the store was unreachable)
        self.degraded: str | None = None  # why the store's locks are not taken, while they are not

    async def acquire(self, key: str, *, ttl: float = DEFAULT_LOCK_TTL, wait: float | None = None) -> LockLease | None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        local = await self._local.acquire(key, ttl=LOCAL_TTL, wait=wait)
        if local is None:
            return None
        remaining = None if wait is None else max(0.0, wait - (loop.time() - started))
        try:
            shared = await self._store.acquire(key, ttl=ttl, wait=remaining)
        except CoordUnavailable as exc:
            if self.degraded is None:
                log.warning("coord.store_lock_unavailable", op=exc.op, error=str(exc))
            self.degraded = str(exc)
            self._alone.add(local.token)
            return local
        except BaseException:
            await self._local.release(local)  # cancelled or a bug: don't leave the local lock held
            raise
        if self.degraded is not None:
            log.info("coord.store_lock_restored")
            self.degraded = None
        if shared is None:
            await self._local.release(local)
            return None
        self._pairs[shared.token] = local
        return shared

    async def renew(self, lease: LockLease, *, ttl: float = DEFAULT_LOCK_TTL) -> bool:
        if lease.token in self._alone:
            return await self._local.renew(lease, ttl=LOCAL_TTL)
        local = self._pairs.get(lease.token)
        if local is None or not await self._local.renew(local, ttl=LOCAL_TTL):
            return False
        return await self._store.renew(lease, ttl=ttl)

    async def release(self, lease: LockLease) -> bool:
        if lease.token in self._alone:
            self._alone.discard(lease.token)
            return await self._local.release(lease)
        local = self._pairs.pop(lease.token, None)
        if local is None:
            return False
        freed = await self._local.release(local)
        try:
            return await self._store.release(lease) and freed
        except CoordUnavailable:
            return False  # the store's connection is gone, and the lock with it

    async def holder(self, key: str) -> str | None:
        token = await self._store.holder(key)
        if token is not None:
            return token
        return await self._local.holder(key)

    async def close(self) -> None:
        """Close the store's connection (every lock this process holds is freed)."""
        if isinstance(self._store, Closable):
            await self._store.close()


__all__ = ["Closable", "StoreAuthorityLock"]
