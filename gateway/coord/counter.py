"""`WindowCounter`: how many times something happened in a key's current window, shared by replicas.

Owns the Protocol and its three implementations: `MemoryWindowCounter` (one
process), `RedisWindowCounter` (one `INCR` + expiry in a Lua script, so every
replica on the prefix counts into the same number) and `FailOpenWindowCounter`
(Redis when it answers, this process's memory when it does not). A window is
fixed: it starts at the first hit of a key and lasts `window` seconds; the
next hit after it starts a new one. What is counted (replies to other bots,
per chat) is the caller's business.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from gateway.coord.failopen import DOWN, BackendHealth
from gateway.coord.redis import RedisConnection

COUNT_IN_WINDOW = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return count
"""
"""KEYS[1] counter; ARGV[1] window ms. The count in the window, this hit included (the first hit opens it)."""

MAX_KEYS = 10_000
"""The memory backend forgets windows that ended once it holds this many keys."""


def _check_window(window: float) -> None:
    if window <= 0:
        raise ValueError(f"WindowCounter.hit: window must be > 0 seconds, got {window}")


class WindowCounter(Protocol):
    """Counts hits per key in a fixed window that opens at the key's first hit."""

    async def hit(self, key: str, *, window: float) -> int:
        """Count one hit of `key`; returns the hits in its current window, this one included.

        Raises:
            ValueError: `window` is not positive.
        """
        ...


class MemoryWindowCounter:
    """`WindowCounter` for one process, on an injected clock."""

    def __init__(self, *, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._windows: dict[str, tuple[float, int]] = {}  # key -> (window ends at, hits)

    async def hit(self, key: str, *, window: float) -> int:
        _check_window(window)
        now = self._now()
        ends, count = self._windows.get(key, (0.0, 0))
        if ends <= now:
            ends, count = now + window, 0
            if len(self._windows) >= MAX_KEYS:
                self._windows = {k: v for k, v in self._windows.items() if v[0] > now}
        self._windows[key] = (ends, count + 1)
        return count + 1


class RedisWindowCounter:
    """`WindowCounter` on Redis: every replica on the prefix counts into one key per counted thing."""

    def __init__(self, conn: RedisConnection, *, prefix: str) -> None:
        self._conn = conn
        self._prefix = prefix

    async def hit(self, key: str, *, window: float) -> int:
        _check_window(window)
        count = await self._conn.script(
            "counter.hit", COUNT_IN_WINDOW, [f"{self._prefix}:count:{key}"], [max(1, int(window * 1000))]
        )
        return int(count)


class FailOpenWindowCounter:
    """The shared counter, or this process's own while the shared one is unreachable."""

    def __init__(self, primary: WindowCounter, fallback: WindowCounter, health: BackendHealth) -> None:
        self._primary = primary
        self._fallback = fallback
        self._health = health

    async def hit(self, key: str, *, window: float) -> int:
        _check_window(window)
        count = await self._health.attempt(lambda: self._primary.hit(key, window=window))
        if count is DOWN:
            return await self._fallback.hit(key, window=window)
        assert isinstance(count, int)
        return count


__all__ = ["FailOpenWindowCounter", "MemoryWindowCounter", "RedisWindowCounter", "WindowCounter"]
