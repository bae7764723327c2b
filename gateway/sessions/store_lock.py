"""`StoreSessionLock`: a `SessionLock` on PostgreSQL advisory locks, for when Redis is unreachable.

Owns `StoreSessionLock`. Replicas sharing a PostgreSQL store fall back to it
while Redis is down (`FailOpenSessionLock(during_outage=...)`), so one turn per
session still runs across machines instead of each replica trusting only its
own memory. Each lease holds a session-level `pg_try_advisory_lock` on its own
connection, opened for the lease and closed on release: the lock lives exactly
as long as the holder's connection, so a replica that dies frees it when the
server notices the dropped connection, and the pool of the stores is never
tied up by held locks. TTLs are moot here: a held connection is the lease.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import psycopg
import structlog

from gateway.coord.base import DEFAULT_LOCK_TTL, CoordUnavailable, LockLease, new_token

log = structlog.get_logger(__name__)

# First key of the two-key advisory lock space taken by session locks (the second is a hash of the session key).
SESSION_LOCK_CLASS = 0x7365  # "se"
POLL_SECONDS = 0.05
CONNECT_TIMEOUT_SECONDS = 5


class StoreSessionLock:
    """Session locks as PostgreSQL advisory locks (a `SessionLock`).

    Args:
        url: the shared store's `store.url`.
        node: this process's name in lock tokens.
        now: epoch seconds for `acquired_at`.
    """

    def __init__(self, url: str, *, node: str, now: Callable[[], float] = time.time) -> None:
        self._url = url
        self._node = node
        self._now = now
        self._held: dict[str, tuple[LockLease, psycopg.AsyncConnection[tuple[object, ...]]]] = {}

    async def _connect(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        try:
            return await psycopg.AsyncConnection.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS)
        except psycopg.Error as exc:
            raise CoordUnavailable(
                f"the PostgreSQL store is unreachable too ({exc.sqlstate or 'no connection'})", op="store_lock.acquire"
            ) from exc

    async def acquire(self, key: str, *, ttl: float = DEFAULT_LOCK_TTL, wait: float | None = None) -> LockLease | None:
        conn = await self._connect()
        deadline = time.monotonic() + (wait or 0.0)
        try:
            while True:
                row = await (await conn.execute(
                    "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (SESSION_LOCK_CLASS, key))).fetchone()
                if row is not None and row[0]:
                    lease = LockLease(key=key, token=new_token(self._node), acquired_at=self._now())
                    self._held[lease.token] = (lease, conn)
                    return lease
                if time.monotonic() >= deadline:
                    await conn.close()
                    return None
                await asyncio.sleep(POLL_SECONDS)  # advisory locks have no timed wait; poll until `wait` is up
        except BaseException:
            await conn.close()
            raise

    async def renew(self, lease: LockLease, *, ttl: float = DEFAULT_LOCK_TTL) -> bool:
        """True while the lease's connection (and so its lock) is alive."""
        held = self._held.get(lease.token)
        if held is None:
            return False
        try:
            await held[1].execute("SELECT 1")
        except psycopg.Error:
            await self._forget(lease.token)
            return False
        return True

    async def release(self, lease: LockLease) -> bool:
        held = self._held.get(lease.token)
        if held is None:
            return False
        try:
            row = await (await held[1].execute(
                "SELECT pg_advisory_unlock(%s, hashtext(%s))", (SESSION_LOCK_CLASS, lease.key))).fetchone()
            freed = bool(row and row[0])
        except psycopg.Error:
            freed = False  # the connection is gone, and its lock with it
        await self._forget(lease.token)
        return freed

    async def holder(self, key: str) -> str | None:
        """This process's token for `key` (another replica's holding is not named by PostgreSQL)."""
        return next((lease.token for lease, _conn in self._held.values() if lease.key == key), None)

    async def _forget(self, token: str) -> None:
        held = self._held.pop(token, None)
        if held is not None:
            await held[1].close()


__all__ = ["SESSION_LOCK_CLASS", "StoreSessionLock"]
