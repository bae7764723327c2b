"""One contract suite for `WindowCounter`: memory, Redis fail-open and raw Redis."""
from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from gateway.coord.counter import MemoryWindowCounter
from tests.gateway.coord.conftest import Pair


async def test_hits_in_one_window_are_counted_across_processes(pair: Pair) -> None:
    """Hits from two processes on one key add up: 1, 2, 3, 4 in turn."""
    counts = [await (pair.a if i % 2 else pair.b).counter.hit("chat-1", window=60) for i in range(4)]
    assert counts == [1, 2, 3, 4]


async def test_concurrent_hits_are_never_lost(pair: Pair) -> None:
    """Twenty hits at once from both processes give every count from 1 to 20 exactly once."""
    counts = await asyncio.gather(*((pair.a if i % 2 else pair.b).counter.hit("chat-1", window=60) for i in range(20)))
    assert sorted(counts) == list(range(1, 21))


async def test_keys_are_counted_apart(pair: Pair) -> None:
    """A hit on one key does not count for another."""
    await pair.a.counter.hit("chat-1", window=60)
    await pair.a.counter.hit("chat-1", window=60)
    assert await pair.b.counter.hit("chat-2", window=60) == 1


async def test_a_window_that_is_not_positive_is_refused(pair: Pair) -> None:
    """window=0 is a caller's mistake, named in the error."""
    with pytest.raises(ValueError, match="window must be > 0"):
        await pair.a.counter.hit("chat-1", window=0)


@pytest.mark.parametrize("pair", ["redis", "redis-raw"], indirect=True)  # memory: on its clock, below
async def test_the_redis_window_expires_with_the_key(redis_url: str, redis_prefix: str, pair: Pair) -> None:
    """On Redis the window is the key's expiry, set by its first hit and not extended by later ones."""
    await pair.a.counter.hit("chat-1", window=30)
    raw = aioredis.Redis.from_url(redis_url)
    try:
        [key] = [k async for k in raw.scan_iter(match=f"{redis_prefix}:count:*")]
        first = await raw.pttl(key)
        await pair.b.counter.hit("chat-1", window=3000)
        assert 0 < await raw.pttl(key) <= first <= 30_000
    finally:
        await raw.aclose()


async def test_the_memory_window_ends_on_its_clock() -> None:
    """After `window` seconds the count starts again at 1."""
    now = [100.0]
    counter = MemoryWindowCounter(now=lambda: now[0])
    assert [await counter.hit("k", window=10) for _ in range(3)] == [1, 2, 3]
    now[0] += 9.9
    assert await counter.hit("k", window=10) == 4
    now[0] += 0.2
    assert await counter.hit("k", window=10) == 1
