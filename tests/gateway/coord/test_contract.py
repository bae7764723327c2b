"""One contract suite for every coordination backend: memory, Redis fail-open, raw Redis."""
from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from agent.context.engine import EngineState
from gateway.coord import LockBusy, LockLease, OutboundItem, hold
from tests.gateway.coord.conftest import Pair, eventually

SHORT_TTL = 0.3


# --- SessionLock -------------------------------------------------------------------------------


async def test_lock_excludes_concurrent_acquirers(pair: Pair) -> None:
    """Many concurrent acquirers in two processes: exactly one holds the lock at any time, all get a turn."""
    active = 0
    most_active = 0
    turns = 0

    async def worker(index: int) -> None:
        nonlocal active, most_active, turns
        coord = pair.a if index % 2 else pair.b
        lease = await coord.lock.acquire("session-1", ttl=5, wait=10)
        assert lease is not None
        active += 1
        most_active = max(most_active, active)
        await asyncio.sleep(0.005)  # the turn's work; other workers run meanwhile
        active -= 1
        turns += 1
        assert await coord.lock.release(lease) is True

    await asyncio.gather(*(worker(i) for i in range(8)))
    assert (most_active, turns) == (1, 8)


async def test_acquire_without_wait_returns_none_while_held(pair: Pair) -> None:
    """With wait=None a held lock answers None at once, and `holder` names the holder's token."""
    lease = await pair.a.lock.acquire("session-1", ttl=5)
    assert lease is not None
    assert await pair.b.lock.acquire("session-1", ttl=5) is None
    assert await pair.b.lock.holder("session-1") == lease.token
    assert await pair.b.lock.acquire("session-2", ttl=5) is not None  # other keys are independent


async def test_lease_cannot_release_or_renew_another_owners_lock(pair: Pair) -> None:
    """A lease with another token neither releases nor renews the lock; the holder's own lease does."""
    lease = await pair.a.lock.acquire("session-1", ttl=5)
    assert lease is not None
    forged = LockLease(key="session-1", token="someone-else", acquired_at=lease.acquired_at)
    assert await pair.b.lock.release(forged) is False
    assert await pair.b.lock.renew(forged, ttl=5) is False
    assert await pair.b.lock.holder("session-1") == lease.token
    assert await pair.a.lock.renew(lease, ttl=5) is True
    assert await pair.a.lock.release(lease) is True
    assert await pair.a.lock.release(lease) is False
    assert await pair.b.lock.holder("session-1") is None


async def test_ttl_frees_a_crashed_holder_and_the_slow_one_cannot_release_the_new_lock(pair: Pair) -> None:
    """A holder that never renews loses the lock after its TTL; its stale lease then cannot touch the new holder."""
    stale = await pair.a.lock.acquire("session-1", ttl=SHORT_TTL)
    assert stale is not None
    assert await pair.b.lock.acquire("session-1", ttl=5) is None
    started = time.monotonic()
    fresh = await pair.b.lock.acquire("session-1", ttl=5, wait=3)
    assert fresh is not None
    assert time.monotonic() - started < 3
    assert await pair.a.lock.renew(stale, ttl=5) is False
    assert await pair.a.lock.release(stale) is False
    assert await pair.a.lock.holder("session-1") == fresh.token


async def test_hold_renews_past_the_ttl_and_releases_after(pair: Pair) -> None:
    """`hold` keeps the lock through a body that runs several TTLs, then frees it."""
    async with hold(pair.a.lock, "session-1", ttl=0.3) as held:
        await asyncio.sleep(0.7)  # a turn longer than two TTLs
        assert await pair.b.lock.acquire("session-1", ttl=5) is None
        assert await pair.b.lock.holder("session-1") == held.lease.token
        assert held.lost is False
    assert await pair.b.lock.holder("session-1") is None


async def test_hold_raises_lock_busy_when_another_holds_it(pair: Pair) -> None:
    """`hold` with a short wait gives up with LockBusy naming the key and the current holder."""
    lease = await pair.a.lock.acquire("session-1", ttl=5)
    assert lease is not None
    with pytest.raises(LockBusy) as caught:
        async with hold(pair.b.lock, "session-1", ttl=5, wait=0.1):
            raise AssertionError("the body must not run without the lock")
    assert (caught.value.key, caught.value.holder) == ("session-1", lease.token)


async def test_hold_reports_a_lost_lease(pair: Pair) -> None:
    """When the lock is taken away mid-body, the next renewal fails and `held.lost` turns true."""
    async with hold(pair.a.lock, "session-1", ttl=0.3) as held:
        assert await pair.a.lock.release(held.lease) is True
        other = await pair.b.lock.acquire("session-1", ttl=5)
        assert other is not None
        await asyncio.wait_for(held.lost_event.wait(), timeout=3)
        assert held.lost is True
    assert await pair.b.lock.holder("session-1") == other.token  # exit did not release the new holder


# --- AgentCache --------------------------------------------------------------------------------


async def test_lru_bound_evicts_least_recent_and_every_process_sees_it(pair: Pair) -> None:
    """The LRU bound (3) is shared: a touch in one process evicts the least recent key for all."""
    assert [await pair.a.agent_cache.touch(k, owner="proc-a") for k in ("k1", "k2", "k3")] == [[], [], []]
    assert await pair.b.agent_cache.touch("k1", owner="proc-b") == []
    assert await pair.b.agent_cache.touch("k4", owner="proc-b") == ["k2"]
    assert await pair.a.agent_cache.owner("k2") is None
    assert await pair.a.agent_cache.owner("k1") == "proc-b"
    assert await pair.a.agent_cache.owner("k3") == "proc-a"
    assert await pair.a.agent_cache.touch("k5", owner="proc-a") == ["k3"]
    assert await pair.b.agent_cache.owner("k3") is None


async def test_state_round_trips_and_survives_lru_eviction(pair: Pair) -> None:
    """A saved state loads back equal in the other process, and outlives eviction by the LRU bound."""
    state = {
        "system_prompt": "You are Chorus. Ünïcode ✓",
        "engine": dataclasses.asdict(EngineState(compression_count=2, previous_summary="## Goal\nship it", model="m1")),
        "last_prompt_tokens": 91_234,
        "ratios": [0.5, 1.25],
        "nothing": None,
    }
    await pair.a.agent_cache.touch("k1", owner="proc-a")
    await pair.a.agent_cache.save_state("k1", state)
    assert await pair.b.agent_cache.load_state("k1") == state
    for k in ("k2", "k3", "k4"):
        await pair.b.agent_cache.touch(k, owner="proc-b")
    assert await pair.a.agent_cache.owner("k1") is None
    assert await pair.a.agent_cache.load_state("k1") == state
    assert await pair.a.agent_cache.load_state("never-saved") is None


async def test_unserialisable_state_is_refused_and_the_old_state_kept(pair: Pair) -> None:
    """Saving a state that is not JSON fails naming the key, and the previous state stays."""
    await pair.a.agent_cache.save_state("k1", {"turns": 1})
    with pytest.raises(ValueError, match="'k1'"):
        await pair.a.agent_cache.save_state("k1", {"turns": {1, 2}})
    assert await pair.b.agent_cache.load_state("k1") == {"turns": 1}


async def test_evict_forgets_order_owner_and_state_everywhere(pair: Pair) -> None:
    """`evict` in one process drops the key's owner and state for every process, and frees its LRU slot."""
    for k in ("k1", "k2", "k3"):
        await pair.a.agent_cache.touch(k, owner="proc-a")
    await pair.a.agent_cache.save_state("k2", {"turns": 3})
    await pair.b.agent_cache.evict("k2")
    assert (await pair.a.agent_cache.owner("k2"), await pair.a.agent_cache.load_state("k2")) == (None, None)
    assert await pair.a.agent_cache.touch("k4", owner="proc-a") == []


# --- Deduplicator ------------------------------------------------------------------------------


async def test_dedup_claims_each_delivery_exactly_once_across_processes(pair: Pair) -> None:
    """Concurrent claims of the same ids from two processes: exactly one True per id."""
    ids = [f"telegram:{n}" for n in range(16)]
    claims = [coord.dedup.claim(i) for i in ids for coord in (pair.a, pair.b, pair.a, pair.b)]
    results = await asyncio.gather(*claims)
    per_id = {i: sum(results[n * 4:(n + 1) * 4]) for n, i in enumerate(ids)}
    assert per_id == {i: 1 for i in ids}


async def test_dedup_forgets_an_id_after_its_ttl(pair: Pair) -> None:
    """Once its TTL passes, a delivery id can be claimed again."""
    assert await pair.a.dedup.claim("slack:Ev1", ttl=SHORT_TTL) is True
    assert await pair.b.dedup.claim("slack:Ev1", ttl=SHORT_TTL) is False
    assert await eventually(lambda: pair.b.dedup.claim("slack:Ev1", ttl=5)) is True


# --- PollerLease -------------------------------------------------------------------------------


async def test_poller_lease_has_one_owner(pair: Pair) -> None:
    """One owner holds a poller lease; others cannot take, renew or release it; the owner re-acquires."""
    name = "telegram:0123456789abcdef"
    assert await pair.a.poller_lease.acquire(name, owner="proc-a", ttl=5) is True
    assert await pair.b.poller_lease.acquire(name, owner="proc-b", ttl=5) is False
    assert await pair.b.poller_lease.renew(name, owner="proc-b", ttl=5) is False
    await pair.b.poller_lease.release(name, owner="proc-b")
    assert await pair.b.poller_lease.acquire(name, owner="proc-b", ttl=5) is False
    assert await pair.a.poller_lease.acquire(name, owner="proc-a", ttl=5) is True
    assert await pair.a.poller_lease.renew(name, owner="proc-a", ttl=5) is True
    await pair.a.poller_lease.release(name, owner="proc-a")
    assert await pair.b.poller_lease.acquire(name, owner="proc-b", ttl=5) is True


async def test_poller_lease_is_taken_over_after_expiry(pair: Pair) -> None:
    """A poller that stops renewing loses its lease after the TTL; another takes it and the first cannot renew."""
    name = "telegram:fedcba9876543210"
    assert await pair.a.poller_lease.acquire(name, owner="proc-a", ttl=SHORT_TTL) is True
    assert await eventually(lambda: pair.b.poller_lease.acquire(name, owner="proc-b", ttl=5)) is True
    assert await pair.a.poller_lease.renew(name, owner="proc-a", ttl=5) is False


# --- Outbox ------------------------------------------------------------------------------------


def _item(text: str, created_at: float) -> OutboundItem:
    return OutboundItem(
        platform="telegram", chat_id="-100", thread_id="7", text=text, session_key="telegram:-100:7",
        reply_to="42", created_at=created_at,
    )


async def test_outbox_pending_lists_unacked_items_oldest_first(pair: Pair) -> None:
    """Items put in one process are pending in the other, oldest first, until acked; `older_than` filters by age."""
    now = time.time()
    newer = await pair.a.outbox.put(_item("second", now - 10))
    older = await pair.a.outbox.put(_item("first", now - 100))
    fresh = await pair.a.outbox.put(_item("just now", now))
    pending = await pair.b.outbox.pending()
    assert [(p.id, p.item, p.attempts) for p in pending] == [
        (older, _item("first", now - 100), 0),
        (newer, _item("second", now - 10), 0),
        (fresh, _item("just now", now), 0),
    ]
    assert [p.id for p in await pair.b.outbox.pending(older_than=60)] == [older]
    await pair.b.outbox.ack(older)
    assert [p.id for p in await pair.a.outbox.pending()] == [newer, fresh]


async def test_outbox_claim_lets_one_process_resend(pair: Pair) -> None:
    """Of two restarting processes, only the claimer resends; acked items can no longer be claimed."""
    item_id = await pair.a.outbox.put(_item("reply", time.time() - 60))
    assert await pair.a.outbox.claim(item_id, owner="proc-a", ttl=5) is True
    assert await pair.b.outbox.claim(item_id, owner="proc-b", ttl=5) is False
    assert await pair.a.outbox.claim(item_id, owner="proc-a", ttl=5) is True  # re-claiming extends, same attempt
    assert [p.attempts for p in await pair.b.outbox.pending()] == [1]
    await pair.a.outbox.ack(item_id)
    assert await pair.b.outbox.pending() == []
    assert await pair.b.outbox.claim(item_id, owner="proc-b", ttl=5) is False


async def test_outbox_claim_expires_so_a_crashed_resender_is_replaced(pair: Pair) -> None:
    """A claim whose owner died expires after its TTL; the next claimer gets it as a new attempt."""
    item_id = await pair.a.outbox.put(_item("reply", time.time() - 60))
    assert await pair.a.outbox.claim(item_id, owner="proc-a", ttl=SHORT_TTL) is True
    assert await eventually(lambda: pair.b.outbox.claim(item_id, owner="proc-b", ttl=5)) is True
    assert [p.attempts for p in await pair.a.outbox.pending()] == [2]
