"""Fixtures for the spend-limiter contract suite: two "processes" per backend (memory: one, so a is b)."""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.coord.redis import RedisConnection
from gateway.limits import MemorySpendLimiter, RedisSpendLimiter, SpendLimiter
from tests.gateway.coord.conftest import delete_prefix

BACKENDS = ["memory", "redis"]


@dataclass(frozen=True)
class Limiters:
    a: SpendLimiter
    b: SpendLimiter
    backend: str
    state: Path  # the memory backend's kept counters


@pytest.fixture(params=BACKENDS)
async def limiters(
    request: pytest.FixtureRequest, redis_url: str, redis_prefix: str, tmp_path: Path
) -> AsyncIterator[Limiters]:
    state = tmp_path / "limits.json"
    if request.param == "memory":
        only = MemorySpendLimiter(state)
        await only.start()
        yield Limiters(only, only, "memory", state)
        await only.stop()
        return
    a = RedisSpendLimiter(RedisConnection(redis_url), prefix=redis_prefix)
    b = RedisSpendLimiter(RedisConnection(redis_url), prefix=redis_prefix)
    await a.start()
    await b.start()
    try:
        yield Limiters(a, b, "redis", state)
    finally:
        await a.stop()
        await b.stop()
        await delete_prefix(redis_url, redis_prefix)
