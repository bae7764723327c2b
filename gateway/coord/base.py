"""The coordination contract: Protocols, the values they exchange, and the keys they use.

Owns `SessionLock`, `AgentCache`, `Deduplicator`, `PollerLease` and `Outbox`
(each a small Protocol with an embedded implementation in `memory.py` and a
Redis one in `redis.py`), the values `LockLease`, `OutboundItem` and
`PendingOutbound`, the error `CoordUnavailable`, and the two key builders
`agent_cache_key` and `poller_lease_name`, plus the checks both backends share
(TTL validation, lock tokens, agent-state serialisation).

Must not know Redis, platforms or the agent loop: a backend translates its own
errors into `CoordUnavailable` at its edge, and the fail-open wrappers only
ever look at that type.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from chorus_errors import ChorusError

DEFAULT_LOCK_TTL = 30.0
"""Seconds a session lock lives without renewal; `hold` renews every third of it."""
DEFAULT_DEDUP_TTL = 86_400.0
"""Seconds a delivery id is remembered; platforms redeliver within minutes, not days."""
AGENT_STATE_TTL = 7 * 86_400.0
"""Seconds an agent state outlives its last touch or save (a week of silence forgets it)."""
KEY_SEPARATOR = "::"


class CoordUnavailable(ChorusError):
    """The coordination backend could not be reached (refused, reset, timed out).

    Raised only by backend implementations; `failopen.py` turns it into a
    local fallback. `op` names the operation (`lock.acquire`, ...); the
    message never carries the backend URL (it may hold a password).
    """

    def __init__(self, message: str, *, op: str) -> None:
        super().__init__(message)
        self.op = op


def agent_cache_key(session_id: str, home: str, model: str) -> str:
    """Build the agent-cache key `session_id::home::model` (the one place it is built).

    Args:
        session_id: The session the agent serves.
        home: The profile / data directory the agent runs under.
        model: The model id.

    Raises:
        ValueError: a part is empty or contains the separator `::`, which
            would make two different agents share one key.
    """
    for name, part in (("session_id", session_id), ("home", home), ("model", model)):
        if not part:
            raise ValueError(f"agent_cache_key: {name} is empty; pass the real {name}")
        if KEY_SEPARATOR in part:
            raise ValueError(
                f"agent_cache_key: {name} {part!r} contains {KEY_SEPARATOR!r}, which would make keys ambiguous"
            )
    return KEY_SEPARATOR.join((session_id, home, model))


def poller_lease_name(platform: str, token: str) -> str:
    """Name the poller lease of one bot token without revealing the token.

    Returns `platform:<first 16 hex digits of sha256(token)>`, safe to log
    and to store in Redis.
    """
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]
    return f"{platform}:{digest}"


@dataclass(frozen=True, slots=True)
class LockLease:
    """Proof of holding a session lock: only the holder of `token` may renew or release it."""

    key: str
    token: str
    acquired_at: float


@dataclass(frozen=True, slots=True)
class OutboundItem:
    """A reply recorded before it is sent, so a crash between the two never loses it."""

    platform: str
    chat_id: str
    thread_id: str | None
    text: str
    session_key: str
    reply_to: str | None = None
    created_at: float = field(default_factory=time.time)  # epoch seconds; survives a restart
    answers: str | None = None  # the inbound journal entry this reply finishes (a shared outbox does it atomically)
    draft_id: str | None = None  # the streamed draft this reply is the last edit of: a resend edits it, never a new message

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str) -> OutboundItem:
        """Parse `to_json` output.

        Raises:
            ValueError: the text is not JSON or a field is missing or of the wrong type
                (the message names the field).
        """
        return cls.from_data(json.loads(raw))

    @classmethod
    def from_data(cls, data: object) -> OutboundItem:
        """`from_json` of text parsed already (an item nested as an object in a larger record).

        Raises:
            ValueError: as `from_json`.
        """
        if not isinstance(data, dict):
            raise ValueError("outbound item: expected a JSON object")
        for name in ("platform", "chat_id", "text", "session_key"):
            if not isinstance(data.get(name), str):
                raise ValueError(f"outbound item: field {name!r} must be a string, got {type(data.get(name)).__name__}")
        for name in ("thread_id", "reply_to", "answers", "draft_id"):
            if data.get(name) is not None and not isinstance(data[name], str):
                raise ValueError(f"outbound item: field {name!r} must be a string or null")
        created = data.get("created_at")
        if not isinstance(created, (int, float)) or isinstance(created, bool):
            raise ValueError("outbound item: field 'created_at' must be a number")
        return cls(
            platform=data["platform"],
            chat_id=data["chat_id"],
            thread_id=data.get("thread_id"),
            text=data["text"],
            session_key=data["session_key"],
            reply_to=data.get("reply_to"),
            created_at=float(created),
            answers=data.get("answers"),
            draft_id=data.get("draft_id"),
        )


@dataclass(frozen=True, slots=True)
class PendingOutbound:
    """An outbound item that was recorded but not acknowledged; `attempts` counts claims so far."""

    id: str
    item: OutboundItem
    attempts: int = 0


def check_ttl(ttl: float, what: str) -> None:
    """Reject a TTL that would make a record expire at once or never."""
    if not ttl > 0:
        raise ValueError(f"{what}: ttl must be > 0 seconds, got {ttl}")


# Unique per acquisition without a uuid4 each: a random prefix drawn once per process, then a counter.
_TOKEN_PREFIX = uuid.uuid4().hex[:16]
_TOKEN_SERIAL = itertools.count(1)


def new_token(node: str) -> str:
    """A lock token that names its process (for `holder`) and is unique per acquisition."""
    return f"{node}:{_TOKEN_PREFIX}{next(_TOKEN_SERIAL):x}"


def dump_state(key: str, state: Mapping[str, Any]) -> str:
    """Serialise an agent state, failing early with the key named when it is not JSON-able."""
    try:
        return json.dumps(dict(state), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"agent state for {key!r} is not JSON-serialisable: {exc}") from exc


class SessionLock(Protocol):
    """Per-session mutual exclusion with an owner token and a TTL.

    A crashed holder never holds forever (the TTL expires) and a slow holder
    never releases another's lock (release and renew check the token).
    """

    async def acquire(self, key: str, *, ttl: float = DEFAULT_LOCK_TTL, wait: float | None = None) -> LockLease | None:
        """Take the lock on `key` for `ttl` seconds.

        Args:
            key: What to lock, e.g. a session key.
            ttl: Seconds until the lock frees itself unless renewed.
            wait: Seconds to keep trying while another holds it; None tries once.

        Returns:
            The lease, or None if the lock was not free within `wait`.
        """
        ...

    async def renew(self, lease: LockLease, *, ttl: float = DEFAULT_LOCK_TTL) -> bool:
        """Extend the lease to `ttl` seconds from now; False if it was lost (expired or taken)."""
        ...

    async def release(self, lease: LockLease) -> bool:
        """Free the lock if `lease` still owns it; False if it did not (nothing changes then)."""
        ...

    async def holder(self, key: str) -> str | None:
        """The token of the current holder of `key`, or None when it is free."""
        ...


class AgentCache(Protocol):
    """The shared part of the LRU agent cache: order and bound, owners, and agent state.

    Live agent objects stay in each process. Before reusing its live agent a
    process checks `owner(key)`: if that is not itself, the agent moved or was
    evicted, and it rebuilds from `load_state`. Eviction by the LRU bound drops
    the key from the order and its owner but keeps the state (a rebuilt agent
    continues with the same frozen prompt and counters); `evict` forgets all.
    """

    async def touch(self, key: str, *, owner: str) -> list[str]:
        """Mark `key` most recently used by process `owner`; return the keys the bound evicted."""
        ...

    async def load_state(self, key: str) -> dict[str, Any] | None:
        """The saved JSON-able agent state of `key`, or None if there is none."""
        ...

    async def save_state(self, key: str, state: Mapping[str, Any]) -> None:
        """Store the agent state of `key` (it must be JSON-serialisable; ValueError otherwise)."""
        ...

    async def owner(self, key: str) -> str | None:
        """The process that last touched `key`, or None if it is not cached anywhere."""
        ...

    async def evict(self, key: str) -> None:
        """Forget `key` everywhere: its place in the order, its owner and its state."""
        ...


class Deduplicator(Protocol):
    """Exactly-once intake of platform deliveries across all gateway processes."""

    async def claim(self, delivery_id: str, *, ttl: float = DEFAULT_DEDUP_TTL) -> bool:
        """True the first time `delivery_id` is claimed (within `ttl` seconds), False after."""
        ...


class PollerLease(Protocol):
    """One long-poller per bot token; `name` comes from `poller_lease_name`, never the token."""

    async def acquire(self, name: str, *, owner: str, ttl: float) -> bool:
        """Take the lease for `ttl` seconds; True if `owner` holds it now (re-acquiring extends it)."""
        ...

    async def renew(self, name: str, *, owner: str, ttl: float) -> bool:
        """Extend the lease if `owner` still holds it; False if it expired or another took it."""
        ...

    async def release(self, name: str, *, owner: str) -> None:
        """Give the lease up if `owner` holds it (no effect otherwise)."""
        ...


class Outbox(Protocol):
    """Durable outbound record: `put` before sending, `ack` after; `pending` finds the rest.

    A sender that may race a recovering process claims its own item right after
    `put`. After a restart: for each `pending(older_than=...)` item, send it only
    if `claim` returns True, then `ack` it (at-least-once, never silently lost).
    """

    async def put(self, item: OutboundItem) -> str:
        """Record `item`; return its id."""
        ...

    async def ack(self, item_id: str) -> None:
        """Mark the item sent (or given up): it is never pending again."""
        ...

    async def pending(self, *, older_than: float = 0.0) -> list[PendingOutbound]:
        """Unacknowledged items created at least `older_than` seconds ago, oldest first."""
        ...

    async def claim(self, item_id: str, *, owner: str, ttl: float) -> bool:
        """Reserve an item for sending for `ttl` seconds; False if acked or another owner holds it."""
        ...
