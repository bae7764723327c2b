"""Operator records kept across replicas in Redis when it is configured, else in this process: the common plumbing.

Owns `BackgroundWrites` (event subscribers are synchronous; a Redis write they cause runs as a task on the
loop, at most `MAX_PENDING` at a time, so a flood of events drops writes instead of growing memory) and
`RedisHandle` (one lazily started client per record kind, closed with the admin app). The records
themselves are `audit.py` and `refused.py`. Knows nothing of HTTP.
"""
from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import redis.asyncio as aioredis
import structlog
from redis.exceptions import RedisError

log = structlog.get_logger(__name__)

MAX_PENDING = 200  # writes in flight; beyond it a write is dropped (logged once per burst)
SOCKET_TIMEOUT = 5.0
REDIS_FAILURES = (RedisError, OSError)


class BackgroundWrites:
    """Runs the coroutines synchronous subscribers hand it on the running loop, bounded."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._tasks: set[asyncio.Task[None]] = set()
        self._warned = False
        self.dropped = 0

    def spawn(self, write: Coroutine[Any, Any, None]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a test or a shutdown path): nothing can be written now
            write.close()
            return
        if len(self._tasks) >= MAX_PENDING:
            write.close()
            self.dropped += 1
            if not self._warned:
                log.warning("admin.record_dropped", record=self._name, pending=len(self._tasks))
                self._warned = True
            return
        self._warned = False
        task = loop.create_task(self._guarded(write))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, write: Coroutine[Any, Any, None]) -> None:
        try:
            await write
        except REDIS_FAILURES as exc:
            log.warning("admin.record_unwritten", record=self._name, error=type(exc).__name__)

    async def drain(self) -> None:
        """Wait for the writes in flight (before closing the client)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


class RedisHandle:
    """A Redis client made on first use inside the loop, closed by `close()` (the admin app's cleanup)."""

    def __init__(self, url: str) -> None:
        self._url = url  # may carry a password: never logged
        self._client: aioredis.Redis | None = None

    @property
    def client(self) -> aioredis.Redis:
        if self._client is None:
            self._client = aioredis.Redis.from_url(self._url, socket_timeout=SOCKET_TIMEOUT, decode_responses=True)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


__all__ = ["MAX_PENDING", "REDIS_FAILURES", "BackgroundWrites", "RedisHandle"]
