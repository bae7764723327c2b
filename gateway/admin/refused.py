"""People refused by the allowlist: who tried to talk to the bot, for the operator to admit (`GET /api/refused`).

Owns `RefusedSender`, the two stores and `RefusedRecorder` (subscribes to the `SenderRefused` events intake
publishes). One row per platform and user id: the name and chat of their last message, when that was, and
how many messages were refused. Never a message's text. Bounded, so a flood of strangers cannot grow
memory: at most `CAPACITY` rows (the least recently seen go first) and none older than `MAX_AGE_SECONDS`.

`MemoryRefused` keeps them in this process; `RedisRefused` in three keys every replica shares:
`{prefix}:refused` (hash: row), `{prefix}:refused:count` (hash: refusals) and `{prefix}:refused:seen`
(sorted set by last seen, which the cap and age trim by); all three expire `MAX_AGE_SECONDS` after the last
refusal. Knows nothing of HTTP.
"""
from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

from gateway.admin.shared_records import BackgroundWrites, RedisHandle
from gateway.ops.events import GatewayEvent, SenderRefused

CAPACITY = 1000
MAX_AGE_SECONDS = 30 * 86_400
MAX_FIELD_CHARS = 200  # a display name or chat id longer than this is cut (a stranger chooses them)


@dataclass(frozen=True, slots=True)
class RefusedSender:
    platform: str
    user_id: str
    name: str
    chat: str
    last_seen: float  # epoch seconds
    count: int = 1

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _field(platform: str, user_id: str) -> str:
    return json.dumps([platform, user_id])


class RefusedStore(Protocol):
    def add(self, sender: RefusedSender) -> None:
        """Count one more refusal of `sender` (its name, chat and time replace the row's)."""
        ...

    async def recent(self, limit: int) -> list[RefusedSender]:
        """Most recently seen first."""
        ...

    async def remove(self, platform: str, user_id: str) -> None:
        """Forget a sender (admitted)."""
        ...


class MemoryRefused:
    """`RefusedStore` in this process."""

    def __init__(self, *, capacity: int = CAPACITY, max_age: float = MAX_AGE_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self._rows: OrderedDict[tuple[str, str], RefusedSender] = OrderedDict()
        self._capacity = capacity
        self._max_age = max_age
        self._clock = clock

    def add(self, sender: RefusedSender) -> None:
        key = (sender.platform, sender.user_id)
        earlier = self._rows.pop(key, None)
        self._rows[key] = replace(sender, count=earlier.count + 1) if earlier is not None else sender
        while len(self._rows) > self._capacity:
            self._rows.popitem(last=False)

    async def recent(self, limit: int) -> list[RefusedSender]:
        oldest = self._clock() - self._max_age
        return [row for row in reversed(self._rows.values()) if row.last_seen >= oldest][:limit]

    async def remove(self, platform: str, user_id: str) -> None:
        self._rows.pop((platform, user_id), None)


class RedisRefused:
    """`RefusedStore` shared by every replica (see the module docstring)."""

    def __init__(self, redis: RedisHandle, prefix: str, *, capacity: int = CAPACITY,
                 max_age: float = MAX_AGE_SECONDS, clock: Callable[[], float] = time.time) -> None:
        self._redis = redis
        self._rows = f"{prefix}:refused"
        self._counts = f"{prefix}:refused:count"
        self._seen = f"{prefix}:refused:seen"
        self._capacity = capacity
        self._max_age = max_age
        self._clock = clock
        self.writes = BackgroundWrites("refused senders")

    def add(self, sender: RefusedSender) -> None:
        self.writes.spawn(self._add(sender))

    async def _add(self, sender: RefusedSender) -> None:
        field = _field(sender.platform, sender.user_id)
        row = json.dumps({"platform": sender.platform, "user_id": sender.user_id, "name": sender.name,
                          "chat": sender.chat})
        ttl = int(self._max_age)
        async with self._redis.client.pipeline(transaction=True) as pipe:
            pipe.hset(self._rows, field, row)
            pipe.hincrby(self._counts, field, 1)
            pipe.zadd(self._seen, {field: sender.last_seen})
            for key in (self._rows, self._counts, self._seen):
                pipe.expire(key, ttl)
            pipe.zcard(self._seen)
            *_, size = await pipe.execute()
        stale = await self._redis.client.zrangebyscore(self._seen, "-inf", f"({sender.last_seen - self._max_age}")
        excess = await self._redis.client.zrange(self._seen, 0, int(size) - self._capacity - 1) if size > self._capacity else []
        if stale or excess:
            await self._forget(*stale, *excess)

    async def _forget(self, *fields: str) -> None:
        async with self._redis.client.pipeline(transaction=True) as pipe:
            pipe.zrem(self._seen, *fields)
            pipe.hdel(self._rows, *fields)
            pipe.hdel(self._counts, *fields)
            await pipe.execute()

    async def recent(self, limit: int) -> list[RefusedSender]:
        await self.writes.drain()  # a refusal this replica saw is in its own answer
        client = self._redis.client
        pairs: list[Any] = await client.zrevrangebyscore(
            self._seen, "+inf", self._clock() - self._max_age, start=0, num=max(limit, 1), withscores=True)
        seen = [(str(pair[0]), float(pair[1])) for pair in pairs]
        fields = [field for field, _score in seen]
        if not fields:
            return []
        rows = await client.hmget(self._rows, fields)
        counts = await client.hmget(self._counts, fields)
        found = []
        for (_field_name, score), row, count in zip(seen, rows, counts):
            if row is None:
                continue  # trimmed between the reads
            body = json.loads(row)
            found.append(RefusedSender(platform=body["platform"], user_id=body["user_id"], name=body["name"],
                                       chat=body["chat"], last_seen=score, count=int(count or 1)))
        return found[:limit]

    async def remove(self, platform: str, user_id: str) -> None:
        await self.writes.drain()  # a refusal still being written must not bring the row back
        await self._forget(_field(platform, user_id))


class RefusedRecorder:
    """Subscribes to the bus; each `SenderRefused` becomes a row of `store` (no message text exists here)."""

    def __init__(self, store: RefusedStore, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self._clock = clock

    def __call__(self, event: GatewayEvent) -> None:
        if isinstance(event, SenderRefused):
            self.store.add(RefusedSender(
                platform=event.platform, user_id=event.user_id[:MAX_FIELD_CHARS],
                name=event.user_name[:MAX_FIELD_CHARS], chat=event.chat_id[:MAX_FIELD_CHARS], last_seen=self._clock(),
            ))


__all__ = ["CAPACITY", "MAX_AGE_SECONDS", "MemoryRefused", "RedisRefused", "RefusedRecorder", "RefusedSender",
           "RefusedStore"]
