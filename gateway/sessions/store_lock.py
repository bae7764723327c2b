"""`StoreSessionLock`: a `SessionLock` on PostgreSQL advisory locks, the authority when replicas share the store.

Owns `StoreSessionLock`. Replicas sharing a PostgreSQL store take every
session lock here (`StoreAuthorityLock` in `gateway/coord/authority.py`), not
in Redis: PostgreSQL holds the lock exactly as long as the holder's
connection lives, whatever Redis does meanwhile (dies, restarts empty,
restores an old snapshot), so one turn per session holds across a Redis
outage and its recovery. All leases of a process share one connection
opened on first use (a lock costs one round trip, not a new connection); a
replica that dies frees its locks the moment the server sees its connection
close. When that connection breaks, every lease on it is lost (the server
freed them): `renew` says so, and the next acquisition opens a new one.
TTLs are moot here: the live connection is the lease.
"""
from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import Callable
from typing import Any

import psycopg
import structlog

from gateway.coord.base import DEFAULT_LOCK_TTL, CoordUnavailable, LockLease, new_token

log = structlog.get_logger(__name__)

# First key of the two-key advisory lock space taken by session locks (the second is a hash of the session key).
SESSION_LOCK_CLASS = 0x7365  # "se"
POLL_FIRST, POLL_MAX = 0.02, 0.2
"""Seconds between attempts while another replica holds the lock: start short, back off (advisory locks have
no timed wait, and a blocking wait would tie up the shared connection)."""
CONNECT_TIMEOUT_SECONDS = 5
CHECK_EVERY = 1.0
"""Seconds a successful round trip vouches for the connection: renewals within it cost nothing."""

RESERVED = ""  # in `_keys` while this process asks PostgreSQL for a key

Conn = psycopg.AsyncConnection[tuple[Any, ...]]
Row = tuple[tuple[Any, ...] | None, int]  # a query's row, and the generation of the connection that answered


class StoreSessionLock:
    """Session locks as PostgreSQL advisory locks (a `SessionLock`), on one connection per process.

    PostgreSQL advisory locks are re-entrant within a connection, so exclusion between this process's own
    callers is kept here too: a key this process holds is busy for its other callers.

    Args:
        url: the shared store's `store.url`.
        node: this process's name in lock tokens.
        now: epoch seconds for `acquired_at`.
        clock: monotonic seconds, for waits and connection checks.
    """

    def __init__(
        self, url: str, *, node: str, now: Callable[[], float] = time.time, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url = url
        self._node = node
        self._now = now
        self._clock = clock
        self._conn: Conn | None = None
        self._generation = 0  # counts connections: a lease taken on an earlier one is gone
        self._checked_at = float("-inf")
        self._connecting = asyncio.Lock()
        self._held: dict[str, tuple[LockLease, int]] = {}  # token -> (lease, connection generation)
        self._keys: dict[str, str] = {}  # key -> token of this process's lease
        self._running: set[asyncio.Task[Row]] = set()  # queries whose callers may have stopped waiting

    async def _connection(self) -> tuple[Conn, int]:
        async with self._connecting:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                if conn is not None:
                    self._lost_connection()
                try:
                    conn = await psycopg.AsyncConnection.connect(
                        self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS,
                        keepalives=1, keepalives_idle=5, keepalives_interval=2, keepalives_count=3,  # a vanished server: ~11 s
                    )
                except psycopg.Error as exc:
                    raise CoordUnavailable(
                        f"the PostgreSQL store is unreachable ({exc.sqlstate or 'no connection'})", op="store_lock.connect"
                    ) from exc
                self._conn = conn
                self._generation += 1
            return conn, self._generation

    def _query(self, sql: str, params: tuple[object, ...], *, op: str) -> asyncio.Task[Row]:
        """The row and the generation of the connection that answered, from a query its callers cannot cancel.

        A cancelled caller (a turn's renewal cut short by its end, a job stopped while it waits for the lock)
        must not cancel the query: psycopg would interrupt it mid-protocol and leave the connection that
        holds every lock of this process unusable. Await it through `asyncio.shield`: the query runs on, the
        caller stops waiting.
        """
        task = asyncio.ensure_future(self._answer(sql, params, op=op))
        self._running.add(task)
        task.add_done_callback(self._settled)
        return task

    def _settled(self, task: asyncio.Task[Row]) -> None:
        self._running.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved here too: a caller that stopped waiting never will

    async def _answer(self, sql: str, params: tuple[object, ...], *, op: str) -> Row:
        conn, generation = await self._connection()
        try:
            row = await (await conn.execute(sql, params)).fetchone()
        except psycopg.Error as exc:
            if generation == self._generation:
                await self._close_broken(conn)
            raise CoordUnavailable(f"the PostgreSQL store did not answer ({exc.sqlstate or 'connection lost'})", op=op) from exc
        self._checked_at = self._clock()
        return row, generation

    async def _close_broken(self, conn: Conn) -> None:
        """The connection failed: its locks are gone (the server frees them when it closes), so are our leases."""
        if self._conn is conn:
            self._conn = None
            self._lost_connection()
        try:
            await conn.close()
        except psycopg.Error:
            pass  # closing a broken connection: nothing more to free

    def _lost_connection(self) -> None:
        if self._held:
            log.warning("coord.store_lock_connection_lost", leases=len(self._held))
        self._held.clear()
        self._keys.clear()

    async def acquire(self, key: str, *, ttl: float = DEFAULT_LOCK_TTL, wait: float | None = None) -> LockLease | None:
        deadline = self._clock() + (wait or 0.0)
        pause = POLL_FIRST
        while True:
            if key not in self._keys:
                self._keys[key] = RESERVED  # our other callers wait while we ask (the lock is re-entrant for us)
                asked = self._query(
                    "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (SESSION_LOCK_CLASS, key), op="store_lock.acquire"
                )
                try:
                    row, generation = await asyncio.shield(asked)
                except asyncio.CancelledError:
                    # The answer still comes: a lock it grants nobody holds, so it is given back then.
                    asked.add_done_callback(functools.partial(self._give_back, key))
                    raise
                except BaseException:
                    self._unreserve(key)
                    raise
                self._unreserve(key)
                if row is not None and row[0]:
                    lease = LockLease(key=key, token=new_token(self._node), acquired_at=self._now())
                    self._held[lease.token] = (lease, generation)
                    self._keys[key] = lease.token
                    return lease
            remaining = deadline - self._clock()
            if remaining <= 0:
                return None
            # Polling with jitter: replicas waiting on one key spread out instead of retrying in lockstep.
            await asyncio.sleep(min(remaining, pause * random.uniform(0.5, 1.0)))
            pause = min(pause * 2, POLL_MAX)

    def _unreserve(self, key: str) -> None:
        if self._keys.get(key) == RESERVED:
            del self._keys[key]

    def _give_back(self, key: str, asked: asyncio.Task[Row]) -> None:
        """The answer to an acquisition whose caller was cancelled: unlock what it granted, then free the key."""
        granted = not asked.cancelled() and asked.exception() is None and bool((asked.result()[0] or (False,))[0])
        if not granted or asked.result()[1] != self._generation:
            self._unreserve(key)
            return
        unlock = self._query("SELECT pg_advisory_unlock(%s, hashtext(%s))", (SESSION_LOCK_CLASS, key), op="store_lock.release")
        unlock.add_done_callback(functools.partial(self._given_back, key))

    def _given_back(self, key: str, unlock: asyncio.Task[Row]) -> None:
        self._unreserve(key)
        if not unlock.cancelled():
            unlock.exception()  # retrieved: an unlock that failed lost the connection, and the lock with it

    async def renew(self, lease: LockLease, *, ttl: float = DEFAULT_LOCK_TTL) -> bool:
        """True while the connection holding the lease's lock is alive (checked at most every `CHECK_EVERY`)."""
        held = self._held.get(lease.token)
        if held is None or held[1] != self._generation:
            return False
        if self._clock() - self._checked_at < CHECK_EVERY:
            return True
        try:
            await asyncio.shield(self._query("SELECT 1", (), op="store_lock.renew"))
        except CoordUnavailable:
            return False
        return lease.token in self._held

    async def release(self, lease: LockLease) -> bool:
        held = self._held.pop(lease.token, None)
        if held is None:
            return False
        if self._keys.get(lease.key) == lease.token:
            del self._keys[lease.key]
        if held[1] != self._generation:
            return False  # its connection is gone, and the lock with it
        try:
            row, _ = await asyncio.shield(self._query(
                "SELECT pg_advisory_unlock(%s, hashtext(%s))", (SESSION_LOCK_CLASS, lease.key), op="store_lock.release"
            ))
        except CoordUnavailable:
            return False  # the connection is gone, and its lock with it
        return bool(row and row[0])

    async def holder(self, key: str) -> str | None:
        """This process's token for `key` (another replica's holding is not named by PostgreSQL)."""
        return self._keys.get(key) or None

    async def close(self) -> None:
        """Close the connection: every lock this process holds is freed."""
        async with self._connecting:
            conn, self._conn = self._conn, None
            self._held.clear()
            self._keys.clear()
            if conn is not None:
                await conn.close()


__all__ = ["SESSION_LOCK_CLASS", "StoreSessionLock"]
