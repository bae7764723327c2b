"""Redis unreachable: the PostgreSQL store's advisory locks keep one holder per session across replicas."""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import psycopg
import pytest

from gateway.coord import Coordinator, redis_coordinator
from gateway.coord.authority import StoreAuthorityLock
from gateway.coord.memory import MemorySessionLock
from gateway.sessions.store_lock import CHECK_EVERY, SESSION_LOCK_CLASS, StoreSessionLock
from tests.gateway.coord.conftest import eventually
from tests.gateway.coord.test_redis_outage import OwnRedis, own_redis  # noqa: F401 - the fixture
from tests.postgres import pg_url  # noqa: F401 - the fixture


@pytest.fixture
async def replicas(own_redis: OwnRedis, pg_url: str) -> AsyncIterator[tuple[Coordinator, Coordinator]]:  # noqa: F811
    """Two coordinators as two replicas would build them: one Redis, one PostgreSQL store for outage locks."""
    coords = tuple(
        redis_coordinator(own_redis.url, prefix="storelock", agent_cache_size=4, node=node, retry_after=0.1,
                          store_lock=StoreSessionLock(pg_url, node=node))
        for node in ("replica-a", "replica-b")
    )
    for coord in coords:
        await coord.start()
    yield coords[0], coords[1]
    for coord in coords:
        await coord.stop()


async def test_with_redis_killed_two_replicas_still_exclude_each_other(
    replicas: tuple[Coordinator, Coordinator], own_redis: OwnRedis  # noqa: F811
) -> None:
    """A's lease taken during the outage blocks B until A releases; then B gets it; both sides serialise."""
    a, b = replicas
    await own_redis.kill()
    lease_a = await a.lock.acquire("web:dm:1", ttl=5)
    assert lease_a is not None
    assert await b.lock.acquire("web:dm:1", ttl=5) is None  # without the store lock B would run a second turn
    assert await b.lock.acquire("web:dm:2", ttl=5) is not None  # other sessions are not held up
    assert await a.lock.renew(lease_a, ttl=5) is True
    waiting = asyncio.create_task(b.lock.acquire("web:dm:1", ttl=5, wait=10))
    await asyncio.sleep(0)
    assert not waiting.done()
    assert await a.lock.release(lease_a) is True
    lease_b = await asyncio.wait_for(waiting, 10)
    assert lease_b is not None
    assert await a.lock.acquire("web:dm:1", ttl=5) is None
    assert await b.lock.release(lease_b) is True
    assert await a.lock.acquire("web:dm:1", ttl=5) is not None


async def test_a_dead_holder_frees_the_store_lock(pg_url: str) -> None:  # noqa: F811
    """The holder's connection cut (its replica died): the lock is free for another, and renew says it was lost."""
    seconds = [0.0]  # a's clock: a renewal checks the connection once its last answer is CHECK_EVERY old
    a, b = StoreSessionLock(pg_url, node="a", clock=lambda: seconds[0]), StoreSessionLock(pg_url, node="b")
    lease = await a.acquire("telegram:dm:9")
    assert lease is not None and await a.holder("telegram:dm:9") == lease.token
    assert await b.acquire("telegram:dm:9") is None
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND granted",
            (SESSION_LOCK_CLASS,),
        )
    taken = await b.acquire("telegram:dm:9", wait=10)
    assert taken is not None
    seconds[0] += CHECK_EVERY
    assert await a.renew(lease) is False and await a.holder("telegram:dm:9") is None
    assert await b.release(taken) is True


async def test_one_holder_across_the_outage_and_the_recovery(
    replicas: tuple[Coordinator, Coordinator], own_redis: OwnRedis  # noqa: F811
) -> None:
    """A lease taken while Redis answered still excludes B once Redis died; one taken during the outage still
    excludes A once Redis is back (restarted empty, its locks forgotten): the store's lock is the one authority."""
    a, b = replicas
    before = await a.lock.acquire("web:dm:1", ttl=5)
    assert before is not None
    await own_redis.kill()
    assert await b.lock.acquire("web:dm:1", ttl=5) is None  # the old scheme gave B a lock A held only in Redis
    assert await a.lock.release(before) is True
    during = await b.lock.acquire("web:dm:1", ttl=5)
    assert during is not None
    await own_redis.start()
    assert await eventually(lambda: _uses_redis(a)), "A never used Redis again"
    assert await a.lock.acquire("web:dm:1", ttl=5) is None  # the old scheme gave A an empty Redis's lock
    assert await b.lock.renew(during, ttl=5) is True
    assert await b.lock.release(during) is True
    assert await a.lock.acquire("web:dm:1", ttl=5) is not None


async def test_readiness_names_the_degraded_coordinator(
    replicas: tuple[Coordinator, Coordinator], own_redis: OwnRedis  # noqa: F811
) -> None:
    """Redis down with the store's locks: still exclusive, and the state says degraded and why."""
    a, _ = replicas
    assert a.state() == (True, "redis; session locks on PostgreSQL")
    await own_redis.kill()
    await a.dedup.claim("tg:during")  # the first call that finds Redis gone
    exclusive, words = a.state()
    assert exclusive is True and words.startswith("degraded: redis unreachable; session locks on PostgreSQL")


async def _uses_redis(coord: Coordinator) -> bool:
    await coord.dedup.claim(f"tg:probe-{time.monotonic_ns()}")
    return coord.health is not None and not coord.health.down


async def test_callers_cancelled_mid_query_leave_the_connection_and_no_lock_behind(pg_url: str) -> None:  # noqa: F811
    """Acquisitions and renewals cancelled while their query runs (a turn's end cuts its renewal short): the
    one connection holding this process's locks stays usable, and a lock granted to a cancelled caller is given
    back, so another replica gets it."""
    a, b = StoreSessionLock(pg_url, node="a"), StoreSessionLock(pg_url, node="b")
    held = await a.acquire("web:dm:keep")
    assert held is not None
    for round_ in range(20):
        acquiring = asyncio.create_task(a.acquire(f"web:dm:{round_}"))
        renewing = asyncio.create_task(a.renew(held))
        await asyncio.sleep(0)  # both queries are on their way
        acquiring.cancel()
        renewing.cancel()
        await asyncio.gather(acquiring, renewing, return_exceptions=True)
    for round_ in range(20):
        taken = await b.acquire(f"web:dm:{round_}", wait=10)  # none was left held by a cancelled caller
        assert taken is not None
        assert await b.release(taken) is True
    assert await b.acquire("web:dm:keep") is None  # a's lease survived: its connection was never broken
    assert await a.renew(held) is True and await a.release(held) is True
    await a.close()
    await b.close()


async def test_a_late_renewal_keeps_the_lease_while_the_store_holds_it(pg_url: str) -> None:  # noqa: F811
    """A loaded machine renews seconds late: past the TTL, the lease is still this process's (the store's lock
    lives with its connection), where a lapsed local half used to report the lock lost mid-turn."""
    seconds = [0.0]
    lock = StoreAuthorityLock(MemorySessionLock(now=lambda: seconds[0], node="a"), StoreSessionLock(pg_url, node="a"))
    lease = await lock.acquire("web:dm:late", ttl=6)
    assert lease is not None
    seconds[0] += 60  # ten TTLs without a renewal
    assert await lock.renew(lease, ttl=6) is True
    assert await lock.acquire("web:dm:late", ttl=6) is None  # still exclusive within the process
    assert await lock.release(lease) is True
    await lock.close()
