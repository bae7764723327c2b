"""`Coordinator`: the five coordination services of one gateway process, and the two ways to build it.

Owns the `Coordinator` value and its factories `memory_coordinator` (embedded,
one machine) and `redis_coordinator` (shared Redis, fail-open by default).
Knows which implementation goes with which backend; knows nothing of the
gateway that uses them.
"""
from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from gateway.coord.authority import StoreAuthorityLock
from gateway.coord.base import AgentCache, CoordUnavailable, Deduplicator, Outbox, PollerLease, SessionLock
from gateway.coord.counter import FailOpenWindowCounter, MemoryWindowCounter, RedisWindowCounter, WindowCounter
from gateway.coord.failopen import (
    RETRY_AFTER,
    BackendHealth,
    FailOpenAgentCache,
    FailOpenDeduplicator,
    FailOpenOutbox,
    FailOpenPollerLease,
    FailOpenSessionLock,
)
from gateway.coord.memory import (
    MemoryAgentCache,
    MemoryDeduplicator,
    MemoryOutbox,
    MemoryPollerLease,
    MemorySessionLock,
)
from gateway.coord.redis import (
    SOCKET_TIMEOUT,
    RedisAgentCache,
    RedisConnection,
    RedisDeduplicator,
    RedisOutbox,
    RedisPollerLease,
    RedisSessionLock,
)


class Lifecycle(Protocol):
    """What a backend needs around its use: `start()` connects, `stop()` closes."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class _Embedded:
    """The embedded backend holds no connection: start and stop have nothing to do."""

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


class _FailOpenStart:
    """Starting with Redis down is an outage like any other, not a reason to refuse to run."""

    def __init__(self, conn: RedisConnection, health: BackendHealth, store_lock: StoreAuthorityLock | None) -> None:
        self._conn = conn
        self._health = health
        self._store_lock = store_lock

    async def start(self) -> None:
        try:
            await self._conn.start()
        except CoordUnavailable as exc:
            self._health.failed(exc)

    async def stop(self) -> None:
        await self._conn.stop()
        if self._store_lock is not None:
            await self._store_lock.close()


@dataclass(frozen=True, slots=True)
class Coordinator:
    """The coordination services of one gateway process.

    `health` is set for a fail-open shared backend; its `errors` counter is
    what metrics read (also exposed as `Coordinator.errors`). `lock` is a
    `StoreAuthorityLock` when replicas share a PostgreSQL store.
    """

    lock: SessionLock
    agent_cache: AgentCache
    dedup: Deduplicator
    poller_lease: PollerLease
    outbox: Outbox
    lifecycle: Lifecycle
    backend: Literal["memory", "redis"]
    health: BackendHealth | None = None
    counter: WindowCounter = field(default_factory=MemoryWindowCounter)  # e.g. replies to other bots per chat

    @property
    def errors(self) -> int:
        """Failed calls to the shared backend since start (0 for the embedded one)."""
        return 0 if self.health is None else self.health.errors

    def state(self) -> tuple[bool, str]:
        """What `/readyz` says of coordination: whether one turn per session still holds across processes, and
        the backend's real state in words (`embedded`, `redis`, `degraded: …`, `down: …`)."""
        store = self.lock if isinstance(self.lock, StoreAuthorityLock) else None
        locks = "" if store is None else "; session locks on PostgreSQL"
        if store is not None and store.degraded is not None:
            return False, f"down: the PostgreSQL store's session locks are unreachable ({store.degraded})"
        if self.health is None or not self.health.down:
            return True, ("embedded" if self.backend == "memory" else "redis") + locks
        if store is not None:
            return True, "degraded: redis unreachable; session locks on PostgreSQL, de-duplication and agent cache local"
        return False, "down: redis unreachable; session locks, de-duplication and agent cache are this process's own"

    async def start(self) -> None:
        """Connect the backend (Redis: a fail-open coordinator starts even when Redis is down)."""
        await self.lifecycle.start()

    async def stop(self) -> None:
        """Close the backend; safe to call again or after a failed start."""
        await self.lifecycle.stop()


def default_node() -> str:
    """This process's name in lock tokens and owner fields: `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def memory_coordinator(
    *, agent_cache_size: int, now: Callable[[], float] = time.time, node: str | None = None
) -> Coordinator:
    """Build the embedded coordinator (no I/O): everything in this process's memory.

    Args:
        agent_cache_size: The LRU bound (`gateway.agent_cache_size`).
        now: Wall clock in epoch seconds, for TTLs and outbox ages.
        node: This process's name in lock tokens (default `host:pid`).
    """
    return Coordinator(
        lock=MemorySessionLock(now=now, node=node or default_node()),
        agent_cache=MemoryAgentCache(capacity=agent_cache_size, now=now),
        dedup=MemoryDeduplicator(now=now),
        poller_lease=MemoryPollerLease(now=now),
        outbox=MemoryOutbox(now=now),
        lifecycle=_Embedded(),
        backend="memory",
        counter=MemoryWindowCounter(now=now),
    )


def redis_coordinator(
    url: str,
    *,
    prefix: str,
    agent_cache_size: int,
    node: str | None = None,
    fail_open: bool = True,
    socket_timeout: float = SOCKET_TIMEOUT,
    retry_after: float = RETRY_AFTER,
    now: Callable[[], float] = time.time,
    store_lock: SessionLock | None = None,
) -> Coordinator:
    """Build the Redis coordinator (no I/O; `start()` connects).

    Args:
        url: `redis.url` (may carry a password; never logged).
        prefix: `redis.key_prefix`; every key lives under `{prefix}:`.
        agent_cache_size: The LRU bound, shared by all processes on this prefix.
        node: This process's name in lock tokens (default `host:pid`).
        fail_open: Wrap each service so an unreachable Redis falls back to
            this process's memory (production). False raises `CoordUnavailable`.
        socket_timeout: Seconds before a silent Redis counts as down.
        retry_after: Seconds to skip Redis after a failure before trying again.
        now: Wall clock in epoch seconds (lease timestamps, outbox ages).
        store_lock: Session locks of the store the replicas share (the PostgreSQL store's advisory
            locks): then the only authority on session locks, Redis or not (`authority.py`), and live
            agents are checked against the store while Redis is down (another replica may have run).
    """
    if not prefix.strip():
        raise ValueError("redis_coordinator: prefix is empty; set redis.key_prefix (default 'chorus')")
    name = node or default_node()
    conn = RedisConnection(url, socket_timeout=socket_timeout)
    authority = None if store_lock is None else StoreAuthorityLock(MemorySessionLock(now=now, node=name), store_lock)
    redis_lock = RedisSessionLock(conn, prefix=prefix, node=name, now=now)
    cache = RedisAgentCache(conn, prefix=prefix, capacity=agent_cache_size)
    dedup = RedisDeduplicator(conn, prefix=prefix)
    lease = RedisPollerLease(conn, prefix=prefix)
    outbox = RedisOutbox(conn, prefix=prefix, now=now)
    counter = RedisWindowCounter(conn, prefix=prefix)
    if not fail_open:
        return Coordinator(authority or redis_lock, cache, dedup, lease, outbox, lifecycle=conn, backend="redis",
                           counter=counter)
    health = BackendHealth(backend="redis", retry_after=retry_after)
    return Coordinator(
        lock=authority or FailOpenSessionLock(redis_lock, MemorySessionLock(now=now, node=name), health),
        agent_cache=FailOpenAgentCache(
            cache, MemoryAgentCache(capacity=agent_cache_size, now=now), health, replicas_share_store=store_lock is not None,
        ),
        dedup=FailOpenDeduplicator(dedup, MemoryDeduplicator(now=now), health),
        poller_lease=FailOpenPollerLease(lease, MemoryPollerLease(now=now), health),
        outbox=FailOpenOutbox(outbox, MemoryOutbox(now=now), health),
        lifecycle=_FailOpenStart(conn, health, authority),
        backend="redis",
        health=health,
        counter=FailOpenWindowCounter(counter, MemoryWindowCounter(), health),
    )
