"""The Redis coordination backend: every Protocol of `base.py` on a Redis shared by many processes.

Owns `RedisConnection` (one redis-py asyncio client with short socket
timeouts, created by `start()`, never by a constructor) and the Redis
implementations. Every key lives under `{prefix}:`. Each check-then-act step
is one Lua script (`_lua.py`) so two processes never interleave inside it.
Connection failures are translated here, at the edge, into
`CoordUnavailable`; this module never falls back by itself (see `failopen.py`).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import redis.asyncio as aioredis
import structlog
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import ClusterDownError, OutOfMemoryError, ReadOnlyError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from gateway.coord import _lua
from gateway.coord.base import (
    AGENT_STATE_TTL,
    DEFAULT_DEDUP_TTL,
    DEFAULT_LOCK_TTL,
    CoordUnavailable,
    LockLease,
    OutboundItem,
    PendingOutbound,
    check_ttl,
    dump_state,
    new_token,
)

log = structlog.get_logger(__name__)

SOCKET_TIMEOUT = 0.5
"""Seconds before a silent Redis counts as down: a chat turn must never wait long on coordination."""
RETRIES = 1
"""One immediate retry, so a pooled connection broken by a Redis restart is replaced transparently."""
POLL_FIRST, POLL_MAX = 0.01, 0.2
"""Seconds between lock attempts while waiting: start short, back off to at most POLL_MAX."""

# Unreachable, or reachable but unable to serve (a replica after failover, out of memory):
# either way the chat must not wait for it. Anything else is a bug and propagates.
_UNREACHABLE = (
    RedisConnectionError, RedisTimeoutError, OSError, TimeoutError,
    ReadOnlyError, OutOfMemoryError, ClusterDownError, TryAgainError,
)


def _text(value: bytes | str | None) -> str | None:
    """Responses are decoded (decode_responses=True); the bytes branch only satisfies the client's types."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


@contextlib.contextmanager
def _translate(op: str) -> Iterator[None]:
    try:
        yield
    except _UNREACHABLE as exc:
        raise CoordUnavailable(f"redis unreachable during {op}: {type(exc).__name__}", op=op) from exc


translate_errors = _translate
"""For other packages' Redis calls on a `RedisConnection` (the spend limits): unreachable -> `CoordUnavailable`."""


class RedisConnection:
    """One shared redis-py client for all coordination objects of a process.

    The URL is kept private and never logged (it may carry a password).
    """

    def __init__(self, url: str, *, socket_timeout: float = SOCKET_TIMEOUT, retries: int = RETRIES) -> None:
        self._url = url
        self._socket_timeout = socket_timeout
        self._retries = retries
        self._client: aioredis.Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}

    @property
    def client(self) -> aioredis.Redis:
        if self._client is None:
            raise RuntimeError("Redis coordination used before start(): call `await coordinator.start()` first")
        return self._client

    async def start(self) -> None:
        """Create the client and check Redis answers.

        Raises:
            RuntimeError: already started (call stop() first).
            CoordUnavailable: Redis did not answer; the client stays, so later
                operations retry by themselves (stop() still closes it).
        """
        if self._client is not None:
            raise RuntimeError("RedisConnection.start() called twice; call stop() before starting again")
        self._client = aioredis.Redis.from_url(
            self._url,
            socket_timeout=self._socket_timeout,
            socket_connect_timeout=self._socket_timeout,
            decode_responses=True,
            retry=Retry(NoBackoff(), self._retries),
        )
        self._scripts = {}
        with _translate("connect"):
            await self._client.ping()

    async def stop(self) -> None:
        """Close the client; a no-op when not started, so cleanup paths may always call it."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def script(self, op: str, source: str, keys: Sequence[str], args: Sequence[str | int | float]) -> Any:
        """Run a Lua script (loaded once, re-loaded by redis-py after a Redis restart)."""
        client = self.client
        script = self._scripts.get(source)
        if script is None:
            script = self._scripts[source] = client.register_script(source)
        with _translate(op):
            return await script(keys=list(keys), args=list(args))


class RedisSessionLock:
    """`SessionLock` on Redis: `SET key token NX PX ttl`; renew/release compare the token in Lua."""

    def __init__(self, conn: RedisConnection, *, prefix: str, node: str, now: Callable[[], float] = time.time) -> None:
        self._conn = conn
        self._prefix = prefix
        self._node = node
        self._now = now

    def _key(self, key: str) -> str:
        return f"{self._prefix}:lock:{key}"

    async def acquire(self, key: str, *, ttl: float = DEFAULT_LOCK_TTL, wait: float | None = None) -> LockLease | None:
        check_ttl(ttl, "SessionLock.acquire")
        loop = asyncio.get_running_loop()
        deadline = None if wait is None else loop.time() + wait
        token = new_token(self._node)
        pause = POLL_FIRST
        while True:
            with _translate("lock.acquire"):
                taken = await self._conn.client.set(self._key(key), token, nx=True, px=_ms(ttl))
            if taken:
                return LockLease(key=key, token=token, acquired_at=self._now())
            remaining = 0.0 if deadline is None else deadline - loop.time()
            if remaining <= 0:
                return None
            # Polling with jitter: waiters on one key spread out instead of retrying in lockstep.
            await asyncio.sleep(min(remaining, pause * random.uniform(0.5, 1.0)))
            pause = min(pause * 2, POLL_MAX)

    async def renew(self, lease: LockLease, *, ttl: float = DEFAULT_LOCK_TTL) -> bool:
        check_ttl(ttl, "SessionLock.renew")
        args: list[str | int] = [lease.token, _ms(ttl)]
        kept = await self._conn.script("lock.renew", _lua.COMPARE_AND_PEXPIRE, [self._key(lease.key)], args)
        return bool(kept)

    async def release(self, lease: LockLease) -> bool:
        freed = await self._conn.script("lock.release", _lua.COMPARE_AND_DELETE, [self._key(lease.key)], [lease.token])
        return bool(freed)

    async def holder(self, key: str) -> str | None:
        with _translate("lock.holder"):
            token = await self._conn.client.get(self._key(key))
        return _text(token)


class RedisAgentCache:
    """`AgentCache` on Redis: LRU order in a sorted set, owners in a hash, each state a JSON string."""

    def __init__(self, conn: RedisConnection, *, prefix: str, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"AgentCache: capacity must be >= 1 (gateway.agent_cache_size), got {capacity}")
        self._conn = conn
        self._capacity = capacity
        self._order = f"{prefix}:agents:lru"
        self._owners = f"{prefix}:agents:owner"
        self._tick = f"{prefix}:agents:tick"
        self._state_prefix = f"{prefix}:agents:state:"

    async def touch(self, key: str, *, owner: str) -> list[str]:
        keys = [self._order, self._owners, self._tick, self._state_prefix + key]
        evicted = await self._conn.script(
            "agent_cache.touch", _lua.LRU_TOUCH, keys, [key, owner, self._capacity, int(AGENT_STATE_TTL)]
        )
        return [str(k) for k in evicted]

    async def load_state(self, key: str) -> dict[str, Any] | None:
        with _translate("agent_cache.load_state"):
            raw = _text(await self._conn.client.get(self._state_prefix + key))
        if raw is None:
            return None
        state: dict[str, Any] = json.loads(raw)
        return state

    async def save_state(self, key: str, state: Mapping[str, Any]) -> None:
        raw = dump_state(key, state)
        with _translate("agent_cache.save_state"):
            await self._conn.client.set(self._state_prefix + key, raw, ex=int(AGENT_STATE_TTL))

    async def owner(self, key: str) -> str | None:
        with _translate("agent_cache.owner"):
            found = await self._conn.client.hget(self._owners, key)
        return _text(found)

    async def evict(self, key: str) -> None:
        keys = [self._order, self._owners, self._state_prefix + key]
        await self._conn.script("agent_cache.evict", _lua.LRU_EVICT, keys, [key])


class RedisDeduplicator:
    """`Deduplicator` on Redis: `SET id 1 NX PX ttl` answers exactly one caller with OK."""

    def __init__(self, conn: RedisConnection, *, prefix: str) -> None:
        self._conn = conn
        self._prefix = prefix

    async def claim(self, delivery_id: str, *, ttl: float = DEFAULT_DEDUP_TTL) -> bool:
        check_ttl(ttl, "Deduplicator.claim")
        with _translate("dedup.claim"):
            first = await self._conn.client.set(f"{self._prefix}:dedup:{delivery_id}", "1", nx=True, px=_ms(ttl))
        return bool(first)


class RedisPollerLease:
    """`PollerLease` on Redis: a lease key whose value is the owner, extended only by that owner."""

    def __init__(self, conn: RedisConnection, *, prefix: str) -> None:
        self._conn = conn
        self._prefix = prefix

    def _key(self, name: str) -> str:
        return f"{self._prefix}:poller:{name}"

    async def acquire(self, name: str, *, owner: str, ttl: float) -> bool:
        check_ttl(ttl, "PollerLease.acquire")
        held = await self._conn.script("poller.acquire", _lua.ACQUIRE_OR_EXTEND, [self._key(name)], [owner, _ms(ttl)])
        return bool(held)

    async def renew(self, name: str, *, owner: str, ttl: float) -> bool:
        check_ttl(ttl, "PollerLease.renew")
        kept = await self._conn.script("poller.renew", _lua.COMPARE_AND_PEXPIRE, [self._key(name)], [owner, _ms(ttl)])
        return bool(kept)

    async def release(self, name: str, *, owner: str) -> None:
        await self._conn.script("poller.release", _lua.COMPARE_AND_DELETE, [self._key(name)], [owner])


class RedisOutbox:
    """`Outbox` on Redis: items in a hash, pending ids in a sorted set by creation time, claims as keys."""

    def __init__(self, conn: RedisConnection, *, prefix: str, now: Callable[[], float] = time.time) -> None:
        self._conn = conn
        self._now = now
        self._items = f"{prefix}:outbox:items"
        self._pending = f"{prefix}:outbox:pending"
        self._attempts = f"{prefix}:outbox:attempts"
        self._claim_prefix = f"{prefix}:outbox:claim:"

    async def put(self, item: OutboundItem) -> str:
        item_id = uuid.uuid4().hex
        with _translate("outbox.put"):
            async with self._conn.client.pipeline(transaction=True) as pipe:
                pipe.hset(self._items, item_id, item.to_json())
                pipe.zadd(self._pending, {item_id: item.created_at})
                await pipe.execute()
        return item_id

    async def ack(self, item_id: str) -> None:
        with _translate("outbox.ack"):
            async with self._conn.client.pipeline(transaction=True) as pipe:
                pipe.hdel(self._items, item_id)
                pipe.zrem(self._pending, item_id)
                pipe.hdel(self._attempts, item_id)
                pipe.delete(self._claim_prefix + item_id)
                await pipe.execute()

    async def pending(self, *, older_than: float = 0.0) -> list[PendingOutbound]:
        cutoff = self._now() - older_than
        with _translate("outbox.pending"):
            found_ids = await self._conn.client.zrangebyscore(self._pending, "-inf", cutoff)
            ids = [i.decode("utf-8") if isinstance(i, bytes) else str(i) for i in found_ids]
            if not ids:
                return []
            raws = [_text(r) for r in await self._conn.client.hmget(self._items, ids)]
            counts = [_text(c) for c in await self._conn.client.hmget(self._attempts, ids)]
        found: list[PendingOutbound] = []
        for item_id, raw, count in zip(ids, raws, counts):
            if raw is None:
                continue  # acked between the two reads
            try:
                item = OutboundItem.from_json(raw)
            except ValueError as exc:
                # Kept, not deleted: an operator can inspect it; it is only skipped here.
                log.warning("coord.outbox_bad_item", item_id=item_id, error=str(exc))
                continue
            found.append(PendingOutbound(id=item_id, item=item, attempts=int(count or 0)))
        return found

    async def claim(self, item_id: str, *, owner: str, ttl: float) -> bool:
        check_ttl(ttl, "Outbox.claim")
        keys = [self._items, self._claim_prefix + item_id, self._attempts]
        claimed = await self._conn.script("outbox.claim", _lua.OUTBOX_CLAIM, keys, [item_id, owner, _ms(ttl)])
        return bool(claimed)
