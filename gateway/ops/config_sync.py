"""Live configuration across replicas: a change made through one replica's admin API applies on all of them.

Owns `ConfigSync` (what the admin API tells after a change) and `RedisConfigSync`,
its Redis implementation: `PATCH /api/config` stores the changed keys in the hash
`{prefix}:config:overrides` and publishes them on `{prefix}:config:events`; every
other replica applies them through its own `LiveConfig.update` (same validation,
same subscribers, audit line `admin.config_changed` with `who` naming the origin).
A replica that starts later, or reconnects after a Redis outage, applies the stored
overrides first, so a missed message is caught up rather than lost. `POST
/api/config/reload` clears the overrides and tells every replica to re-read its own
config file (each replica's file is its own; on Kubernetes one ConfigMap).

Why Redis pub/sub, not PostgreSQL LISTEN/NOTIFY: Redis is the coordination layer
replicas already share; LISTEN would pin one connection per replica outside the
store's pool, and NOTIFY is only delivered to listeners connected at that moment
too, so either needs the stored overrides for catching up. SIGHUP stays local: a
signal is addressed to one process. Knows nothing of HTTP or agents.
"""
from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

import redis.asyncio as aioredis
import structlog
from redis.exceptions import RedisError

from chorus_errors import ConfigError
from gateway.ops.live_config import LiveConfig, reload_logged, restart_needed, restart_text

log = structlog.get_logger(__name__)

SOCKET_TIMEOUT = 5.0
POLL_SECONDS = 1.0  # how long one wait for a message blocks (so stop() is prompt)
RETRY_SECONDS = 1.0


class ConfigSync(Protocol):
    """Told by the admin API after a change it applied locally; True when the other replicas were told."""

    async def changed(self, changes: Mapping[str, object], *, who: str) -> bool: ...

    async def reloaded(self, *, who: str) -> bool: ...


class RedisConfigSync:
    """`ConfigSync` over Redis (see the module docstring).

    Args:
        live: this replica's running config.
        url: `redis.url` (may carry a password; never logged).
        prefix: `redis.key_prefix`.
    """

    def __init__(self, live: LiveConfig, url: str, *, prefix: str) -> None:
        self._live = live
        self._url = url
        self._channel = f"{prefix}:config:events"
        self._overrides = f"{prefix}:config:overrides"
        self.node = uuid.uuid4().hex  # tells this replica's own messages apart
        self._client: aioredis.Redis | None = None
        self._task: asyncio.Task[None] | None = None
        self.applied = 0  # messages from other replicas applied (tests and metrics)

    def start(self) -> None:
        """Begin listening (on the running loop); idempotent."""
        if self._task is None:
            self._client = aioredis.Redis.from_url(self._url, socket_timeout=SOCKET_TIMEOUT, decode_responses=True)
            self._task = asyncio.get_running_loop().create_task(self._listen(self._client), name="config-sync")

    def stop(self) -> None:
        """Stop listening and publishing; the listener closes the connection as it ends (sync, for `detach`)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._client = None

    async def changed(self, changes: Mapping[str, object], *, who: str) -> bool:
        values = {key: json.dumps(value) for key, value in changes.items()}
        message = {"node": self.node, "kind": "update", "changes": dict(changes), "who": who}
        return await self._send(message, lambda client: client.hset(self._overrides, mapping=values))

    async def reloaded(self, *, who: str) -> bool:
        message = {"node": self.node, "kind": "reload", "who": who}
        return await self._send(message, lambda client: client.delete(self._overrides))

    async def _send(self, message: dict[str, Any], store: Any) -> bool:
        if self._client is None:
            return False
        try:
            await store(self._client)
            await self._client.publish(self._channel, json.dumps(message))
        except (RedisError, OSError) as exc:
            log.warning("config.sync_unreachable", op=message["kind"], error=type(exc).__name__,
                        note="the change applies on this replica only")
            return False
        return True

    async def _listen(self, client: aioredis.Redis) -> None:
        warned = False
        try:
            while True:
                try:
                    await self._follow(client)
                except (RedisError, OSError) as exc:
                    if not warned:
                        log.warning("config.sync_unreachable", op="listen", error=type(exc).__name__,
                                    note="changes from other replicas are caught up when Redis answers again")
                    warned = True
                    await asyncio.sleep(RETRY_SECONDS)
        finally:
            await client.aclose()

    async def _follow(self, client: aioredis.Redis) -> None:
        async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
            await pubsub.subscribe(self._channel)
            # Subscribed first, then caught up: a change published in between is applied twice, never missed.
            stored = await client.hgetall(self._overrides)
            if stored:
                self._update({str(key): json.loads(value) for key, value in stored.items()}, who="config-sync catch-up")
            while True:
                message = await pubsub.get_message(timeout=POLL_SECONDS)
                if message is not None:
                    self._handle(str(message["data"]))

    def _handle(self, raw: str) -> None:
        try:
            message = json.loads(raw)
            if not isinstance(message, dict) or message.get("node") == self.node:
                return
            who = f"{message.get('who', 'unknown')} via another replica"
            if message.get("kind") == "update" and isinstance(message.get("changes"), dict):
                self._update(message["changes"], who=who)
            elif message.get("kind") == "reload":
                reload_logged(self._live, self._live.path, who=who)
                self.applied += 1
        except ValueError:
            log.warning("config.sync_bad_message", length=len(raw))

    def _update(self, changes: Mapping[str, object], *, who: str) -> None:
        # A stored override of a key that now needs a restart (an older version allowed it) must not sink the rest.
        if skipped := sorted(key for key in changes if restart_needed(key)):
            log.warning("config.sync_restart_needed", settings=skipped, who=who, note=restart_text(skipped))
            changes = {key: value for key, value in changes.items() if key not in skipped}
            if not changes:
                return
        try:
            self._live.update(changes, who=who)
            self.applied += 1
        except ConfigError as exc:  # valid on the sender but not here (another version): this replica keeps its own
            log.error("config.sync_rejected", setting=exc.key, error=str(exc), who=who, kept="running config")


__all__ = ["ConfigSync", "RedisConfigSync"]
