"""Fixtures for the coordination contract suite: coordinator pairs ("two processes") per backend."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest
import redis.asyncio as aioredis

from gateway.coord import Coordinator, memory_coordinator, redis_coordinator

CAPACITY = 3
BACKENDS = ["memory", "redis", "redis-raw"]


@dataclass(frozen=True)
class Pair:
    """Two gateway processes sharing one backend; the embedded backend has one process, so a is b."""

    a: Coordinator
    b: Coordinator
    backend: str


async def eventually(check: Callable[[], Awaitable[bool]], *, timeout: float = 3.0, interval: float = 0.02) -> bool:
    """Poll `check` until it is true or `timeout` seconds pass; return its last answer."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if await check():
            return True
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(interval)


async def delete_prefix(url: str, prefix: str) -> None:
    """Remove every key a test wrote under its prefix (the server is shared)."""
    raw = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in raw.scan_iter(match=f"{prefix}:*", count=500)]
        if keys:
            await raw.delete(*keys)
    finally:
        await raw.aclose()


@pytest.fixture(params=BACKENDS)
async def pair(request: pytest.FixtureRequest, redis_url: str, redis_prefix: str) -> AsyncIterator[Pair]:
    """Two coordinators on one backend: memory (one process), Redis fail-open, and raw Redis."""
    backend: str = request.param
    if backend == "memory":
        only = memory_coordinator(agent_cache_size=CAPACITY, node="proc-a")
        await only.start()
        yield Pair(only, only, backend)
        await only.stop()
        return
    fail_open = backend == "redis"
    a = redis_coordinator(redis_url, prefix=redis_prefix, agent_cache_size=CAPACITY, node="proc-a", fail_open=fail_open)
    b = redis_coordinator(redis_url, prefix=redis_prefix, agent_cache_size=CAPACITY, node="proc-b", fail_open=fail_open)
    await a.start()
    await b.start()
    try:
        yield Pair(a, b, backend)
        assert a.errors == 0 and b.errors == 0  # the shared server never failed during a contract test
    finally:
        await a.stop()
        await b.stop()
        await delete_prefix(redis_url, redis_prefix)
