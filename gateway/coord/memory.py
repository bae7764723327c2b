"""The embedded coordination backend: every Protocol of `base.py` in one process's memory.

Owns the in-process implementations used when no Redis is configured (a
single machine needs nothing else) and as the local fallback of the
fail-open wrappers. All state lives in plain dicts touched only from the
event loop, so no operation needs a lock of its own. Knows no Redis.

`now` is an injected wall clock (epoch seconds): TTLs and outbox ages are
measured with it, while `wait` in `acquire` is real waiting on the loop.
"""
from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from gateway.coord.base import (
    AGENT_STATE_TTL,
    DEFAULT_DEDUP_TTL,
    DEFAULT_LOCK_TTL,
    LockLease,
    OutboundItem,
    PendingOutbound,
    check_ttl,
    dump_state,
    new_token,
)

Clock = Callable[[], float]
WAIT_SLICE = 0.1
"""Longest single wait in `acquire`, so an injected clock that jumps is noticed promptly."""


class MemorySessionLock:
    """`SessionLock` for one process. `node` names this process in tokens."""

    def __init__(self, *, now: Clock = time.time, node: str = "local") -> None:
        self._now = now
        self._node = node
        self._held: dict[str, tuple[str, float]] = {}  # key -> (token, expires_at)
        self._changed = asyncio.Condition()
        self._waiting = 0  # acquirers waiting on `_changed`: a release with none notifies nobody

    def _current(self, key: str) -> str | None:
        entry = self._held.get(key)
        if entry is None:
            return None
        if entry[1] <= self._now():
            del self._held[key]
            return None
        return entry[0]

    async def acquire(self, key: str, *, ttl: float = DEFAULT_LOCK_TTL, wait: float | None = None) -> LockLease | None:
        check_ttl(ttl, "SessionLock.acquire")
        loop = asyncio.get_running_loop()
        deadline = None if wait is None else loop.time() + wait
        while True:
            if self._current(key) is None:
                now = self._now()
                token = new_token(self._node)
                self._held[key] = (token, now + ttl)
                return LockLease(key=key, token=token, acquired_at=now)
            remaining = 0.0 if deadline is None else deadline - loop.time()
            if remaining <= 0:
                return None
            expires_in = self._held[key][1] - self._now()
            self._waiting += 1
            try:
                async with self._changed:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(min(remaining, expires_in, WAIT_SLICE)):
                            await self._changed.wait()
            finally:
                self._waiting -= 1

    async def renew(self, lease: LockLease, *, ttl: float = DEFAULT_LOCK_TTL) -> bool:
        check_ttl(ttl, "SessionLock.renew")
        if self._current(lease.key) != lease.token:
            return False
        self._held[lease.key] = (lease.token, self._now() + ttl)
        return True

    async def release(self, lease: LockLease) -> bool:
        if self._current(lease.key) != lease.token:
            return False
        del self._held[lease.key]
        if self._waiting:  # most releases (one turn per session at a time) have nobody to wake
            async with self._changed:
                self._changed.notify_all()
        return True

    async def holder(self, key: str) -> str | None:
        return self._current(key)


class MemoryAgentCache:
    """`AgentCache` for one process: an LRU of at most `capacity` keys, plus states."""

    def __init__(self, *, capacity: int, now: Clock = time.time) -> None:
        if capacity < 1:
            raise ValueError(f"AgentCache: capacity must be >= 1 (gateway.agent_cache_size), got {capacity}")
        self._capacity = capacity
        self._now = now
        self._order: OrderedDict[str, str] = OrderedDict()  # key -> owner, least recent first
        self._states: dict[str, tuple[str, float]] = {}  # key -> (json, expires_at)

    async def touch(self, key: str, *, owner: str) -> list[str]:
        self._order[key] = owner
        self._order.move_to_end(key)
        if key in self._states:
            self._states[key] = (self._states[key][0], self._now() + AGENT_STATE_TTL)
        evicted: list[str] = []
        while len(self._order) > self._capacity:
            evicted.append(self._order.popitem(last=False)[0])
        return evicted

    async def load_state(self, key: str) -> dict[str, Any] | None:
        entry = self._states.get(key)
        if entry is None:
            return None
        if entry[1] <= self._now():
            del self._states[key]
            return None
        state: dict[str, Any] = json.loads(entry[0])
        return state

    async def save_state(self, key: str, state: Mapping[str, Any]) -> None:
        raw = dump_state(key, state)  # stored as text so callers never share mutable state
        now = self._now()
        self._states[key] = (raw, now + AGENT_STATE_TTL)
        if len(self._states) > 2 * self._capacity + 64:
            for stale in [k for k, (_, expires) in self._states.items() if expires <= now]:
                del self._states[stale]

    async def owner(self, key: str) -> str | None:
        return self._order.get(key)

    async def evict(self, key: str) -> None:
        self._order.pop(key, None)
        self._states.pop(key, None)


class MemoryDeduplicator:
    """`Deduplicator` for one process; expired ids are dropped as new ones arrive."""

    def __init__(self, *, now: Clock = time.time) -> None:
        self._now = now
        self._seen: dict[str, float] = {}  # delivery id -> expires_at
        self._expiry: list[tuple[float, str]] = []  # min-heap over the same entries

    async def claim(self, delivery_id: str, *, ttl: float = DEFAULT_DEDUP_TTL) -> bool:
        check_ttl(ttl, "Deduplicator.claim")
        now = self._now()
        while self._expiry and self._expiry[0][0] <= now:
            expires, stale = heapq.heappop(self._expiry)
            if self._seen.get(stale) == expires:
                del self._seen[stale]
        expires_at = self._seen.get(delivery_id)
        if expires_at is not None and expires_at > now:
            return False
        self._seen[delivery_id] = now + ttl
        heapq.heappush(self._expiry, (now + ttl, delivery_id))
        return True


class MemoryPollerLease:
    """`PollerLease` for one process (one poller per token within it)."""

    def __init__(self, *, now: Clock = time.time) -> None:
        self._now = now
        self._leases: dict[str, tuple[str, float]] = {}  # name -> (owner, expires_at)

    def _current(self, name: str) -> str | None:
        entry = self._leases.get(name)
        if entry is None or entry[1] <= self._now():
            self._leases.pop(name, None)
            return None
        return entry[0]

    async def acquire(self, name: str, *, owner: str, ttl: float) -> bool:
        check_ttl(ttl, "PollerLease.acquire")
        if self._current(name) not in (None, owner):
            return False
        self._leases[name] = (owner, self._now() + ttl)
        return True

    async def renew(self, name: str, *, owner: str, ttl: float) -> bool:
        check_ttl(ttl, "PollerLease.renew")
        if self._current(name) != owner:
            return False
        self._leases[name] = (owner, self._now() + ttl)
        return True

    async def release(self, name: str, *, owner: str) -> None:
        if self._current(name) == owner:
            del self._leases[name]


class MemoryOutbox:
    """`Outbox` for one process: durable only as long as the process lives."""

    def __init__(self, *, now: Clock = time.time) -> None:
        self._now = now
        self._items: dict[str, OutboundItem] = {}
        self._attempts: dict[str, int] = {}
        self._claims: dict[str, tuple[str, float]] = {}  # id -> (owner, expires_at)
        # Ids: one random prefix per outbox plus a counter, not a `uuid4` per reply.
        self._id_prefix = uuid.uuid4().hex[:12]
        self._serial = itertools.count()

    async def put(self, item: OutboundItem) -> str:
        item_id = f"{self._id_prefix}{next(self._serial):08x}"
        self._items[item_id] = item
        return item_id

    async def ack(self, item_id: str) -> None:
        self._items.pop(item_id, None)
        self._attempts.pop(item_id, None)
        self._claims.pop(item_id, None)

    async def pending(self, *, older_than: float = 0.0) -> list[PendingOutbound]:
        cutoff = self._now() - older_than
        found = [(item.created_at, item_id, item) for item_id, item in self._items.items() if item.created_at <= cutoff]
        return [
            PendingOutbound(id=item_id, item=item, attempts=self._attempts.get(item_id, 0))
            for _, item_id, item in sorted(found, key=lambda entry: (entry[0], entry[1]))
        ]

    async def claim(self, item_id: str, *, owner: str, ttl: float) -> bool:
        check_ttl(ttl, "Outbox.claim")
        if item_id not in self._items:
            return False
        now = self._now()
        current = self._claims.get(item_id)
        if current is not None and current[1] > now and current[0] != owner:
            return False
        if current is None or current[1] <= now:  # a fresh claim is a new attempt; re-claiming extends
            self._attempts[item_id] = self._attempts.get(item_id, 0) + 1
        self._claims[item_id] = (owner, now + ttl)
        return True
