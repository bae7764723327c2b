"""The config audit log: who changed which key when (`GET /api/config/audit`, the dashboard's "Config changes").

Owns `AuditEntry`, `who_label`, the two stores (`MemoryAudit`: a bounded ring in this process; `RedisAudit`:
the capped list `{prefix}:config:audit` every replica pushes to, newest first) and `AuditRecorder`, which
subscribes to the `ConfigChanged` events `LiveConfig` publishes (and `ConfigSaved`, a key that needs a restart
written to the file), so no caller threads the audit through.
A change a replica applied because another replica told it is not pushed again to the shared list (the
origin's entry is there already, naming its replica). Secret values never appear: `LiveConfig` shows
them as `<hidden>`, and a key the schema marks secret is masked here as well. Knows nothing of HTTP.
"""
from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Protocol

import structlog

from gateway.admin.shared_records import REDIS_FAILURES, BackgroundWrites, RedisHandle
from gateway.ops.events import ConfigChanged, ConfigSaved, GatewayEvent

log = structlog.get_logger(__name__)

CAPACITY = 500
HIDDEN = "<hidden>"
FROM_REPLICA = " via another replica"
CATCH_UP = "config-sync catch-up"
# `ConfigChanged.who` as LiveConfig's callers write it -> who the operator reads (first matching rule wins).
WHO_RULES: tuple[tuple[Callable[[str], bool], str], ...] = (
    (lambda who: who.endswith(FROM_REPLICA) or who == CATCH_UP, "replica"),
    (lambda who: who.startswith("token:"), "admin token"),
    (lambda who: who == "sighup", "SIGHUP"),
    (lambda who: who in ("reload", "file"), "file"),
)


def who_label(who: str) -> str:
    """"admin token", "SIGHUP", "file" or "replica"; anything else as it was written."""
    for matches, label in WHO_RULES:
        if matches(who):
            return label
    return who


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One changed key. `detail` is the raw `who` (a token's fingerprint, never the token)."""

    when: float  # epoch seconds
    key: str
    old: object
    new: object
    who: str
    replica: str  # the replica that applied it (host:pid)
    detail: str = ""
    applies: str = "now"  # "after restart": a key that needs one, written to the config file

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: str) -> AuditEntry:
        return cls(**json.loads(raw))


class AuditStore(Protocol):
    def add(self, entry: AuditEntry, *, shared: bool) -> None:
        """Keep `entry`; `shared=False`: in this process only (another replica recorded it already)."""
        ...

    async def recent(self, limit: int) -> tuple[list[AuditEntry], bool]:
        """Newest first, at most `limit`; and whether the list is every replica's (False: this process's only)."""
        ...


class MemoryAudit:
    """`AuditStore` in this process: the newest `capacity` entries."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._entries: deque[AuditEntry] = deque(maxlen=capacity)

    def add(self, entry: AuditEntry, *, shared: bool) -> None:
        self._entries.appendleft(entry)

    async def recent(self, limit: int) -> tuple[list[AuditEntry], bool]:
        return list(self._entries)[:limit], False


class RedisAudit:
    """`AuditStore` on the capped Redis list `{prefix}:config:audit`; this process's own entries answer
    while Redis does not."""

    def __init__(self, redis: RedisHandle, prefix: str, capacity: int = CAPACITY) -> None:
        self._redis = redis
        self._key = f"{prefix}:config:audit"
        self._capacity = capacity
        self._local = MemoryAudit(capacity)
        self.writes = BackgroundWrites("config audit")

    def add(self, entry: AuditEntry, *, shared: bool) -> None:
        self._local.add(entry, shared=shared)
        if shared:
            self.writes.spawn(self._push(json.dumps(entry.to_json())))

    async def _push(self, raw: str) -> None:
        async with self._redis.client.pipeline(transaction=True) as pipe:
            pipe.lpush(self._key, raw)
            pipe.ltrim(self._key, 0, self._capacity - 1)
            await pipe.execute()

    async def recent(self, limit: int) -> tuple[list[AuditEntry], bool]:
        await self.writes.drain()  # this replica's own last change is in the answer
        try:
            raw = await self._redis.client.lrange(self._key, 0, max(limit, 1) - 1)
        except REDIS_FAILURES as exc:
            log.warning("admin.audit_unreachable", error=type(exc).__name__, note="this replica's entries only")
            return await self._local.recent(limit)
        return [AuditEntry.from_json(str(item)) for item in raw][:limit], True


def _masked(value: object) -> object:
    """A secret's value as the log may show it: whether it is set, never what it is."""
    return None if value is None else HIDDEN


class AuditRecorder:
    """Subscribes to the bus; turns each `ConfigChanged` into an `AuditEntry` in `store`.

    Args:
        store: where entries go.
        replica: this process's name.
        secret: True for a dotted key whose value must never be shown (the schema's secret flag).
        clock: epoch seconds.
    """

    def __init__(
        self, store: AuditStore, *, replica: str, secret: Callable[[str], bool], clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self._replica = replica
        self._secret = secret
        self._clock = clock

    def __call__(self, event: GatewayEvent) -> None:
        if not isinstance(event, (ConfigChanged, ConfigSaved)):
            return
        masked = self._secret(event.setting)
        who = who_label(event.who)
        entry = AuditEntry(
            when=self._clock(), key=event.setting, old=_masked(event.old) if masked else event.old,
            new=_masked(event.new) if masked else event.new, who=who, replica=self._replica,
            detail=event.who if event.who != who else "",
            applies="now" if isinstance(event, ConfigChanged) else "after restart",
        )
        self.store.add(entry, shared=who != "replica")


__all__ = ["CAPACITY", "AuditEntry", "AuditRecorder", "AuditStore", "MemoryAudit", "RedisAudit", "who_label"]
