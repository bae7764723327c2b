"""Coordination between gateway processes: session locks, the shared agent cache, de-duplication,
the poller lease and the outbound record (docs/design.md §1, §2.2, §3.7).

Two backends pass one contract suite (`tests/gateway/coord/`): the embedded one
(`memory.py`, one machine, nothing else needed) and Redis (`redis.py`, many
processes). The Redis coordinator is fail-open by default (`failopen.py`): if
Redis is unreachable, each call answers from this process's memory, logs
`coord.redis_unavailable` once per outage, counts `coordinator.errors`, and
Redis is used again as soon as it answers.

Usage::

    from gateway.coord import (LockBusy, OutboundItem, agent_cache_key, hold,
                               memory_coordinator, poller_lease_name, redis_coordinator)

    coord = (redis_coordinator(cfg.redis.url, prefix=cfg.redis.key_prefix,
                               agent_cache_size=cfg.gateway.agent_cache_size)
             if cfg.redis.url else
             memory_coordinator(agent_cache_size=cfg.gateway.agent_cache_size))
    await coord.start()                       # connects; never raises for a down Redis

    # intake: each platform delivery once, across all processes
    if not await coord.dedup.claim(inbound.dedup_key):
        return

    # one turn at a time per session; the lease is renewed every ttl/3
    try:
        async with hold(coord.lock, session_key, ttl=30, wait=None) as held:
            key = agent_cache_key(session_id, home, model)
            if await coord.agent_cache.owner(key) != me:           # moved or evicted elsewhere
                agent = rebuild(await coord.agent_cache.load_state(key))
            for gone in await coord.agent_cache.touch(key, owner=me):
                live_agents.pop(gone, None)                          # the LRU bound, shared
            reply = await agent.run_turn(...)
            await coord.agent_cache.save_state(key, agent.state())   # JSON-able dict
            if held.lost: ...                                        # another process may have taken over
    except LockBusy:
        ...                                                          # queue it / "compression already running"

    # replies: record, send, ack; after a restart, resend what was never acked
    item_id = await coord.outbox.put(OutboundItem("telegram", chat_id, None, text, session_key))
    await adapter.send(...)
    await coord.outbox.ack(item_id)
    for p in await coord.outbox.pending(older_than=60):
        if await coord.outbox.claim(p.id, owner=me, ttl=60):
            await adapter.send(...); await coord.outbox.ack(p.id)

    # one long-poller per bot token
    name = poller_lease_name("telegram", token)
    if await coord.poller_lease.acquire(name, owner=me, ttl=30): ...   # renew every 10 s

    await coord.stop()
"""
from __future__ import annotations

from gateway.coord.base import (
    AGENT_STATE_TTL,
    DEFAULT_DEDUP_TTL,
    DEFAULT_LOCK_TTL,
    AgentCache,
    CoordUnavailable,
    Deduplicator,
    LockLease,
    OutboundItem,
    Outbox,
    PendingOutbound,
    PollerLease,
    SessionLock,
    agent_cache_key,
    poller_lease_name,
)
from gateway.coord.coordinator import Coordinator, Lifecycle, default_node, memory_coordinator, redis_coordinator
from gateway.coord.failopen import BackendHealth
from gateway.coord.hold import Held, LockBusy, hold

__all__ = [
    "AGENT_STATE_TTL",
    "DEFAULT_DEDUP_TTL",
    "DEFAULT_LOCK_TTL",
    "AgentCache",
    "BackendHealth",
    "CoordUnavailable",
    "Coordinator",
    "Deduplicator",
    "Held",
    "Lifecycle",
    "LockBusy",
    "LockLease",
    "OutboundItem",
    "Outbox",
    "PendingOutbound",
    "PollerLease",
    "SessionLock",
    "agent_cache_key",
    "default_node",
    "hold",
    "memory_coordinator",
    "poller_lease_name",
    "redis_coordinator",
]
