"""Fail-open against a real redis-server of our own that is SIGKILLed and restarted mid-run."""
from __future__ import annotations

import asyncio
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from gateway.coord import Coordinator, CoordUnavailable, OutboundItem, hold, redis_coordinator
from tests.gateway.coord.conftest import delete_prefix, eventually

PREFIX = "outage"


class OwnRedis:
    """A throwaway redis-server of our own, killable and restartable at the same address.

    It listens on a unix socket only (`--port 0` turns TCP off): no port to pick, so nothing else on the machine
    can take its address between a kill and the restart. The socket lives in a short directory of its own
    (a unix socket path is limited to about 100 bytes; pytest's tmp_path can be longer).
    """

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._socket_dir = Path(tempfile.mkdtemp(prefix="chorus-redis-"))
        self.socket = self._socket_dir / "redis.sock"
        self.url = f"unix://{self.socket}?db=0"
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            "redis-server", "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700",
            "--save", "", "--appendonly", "no", "--dir", str(self._dir),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )
        assert await eventually(self._answers, timeout=5), "redis-server did not start"

    def remove(self) -> None:
        """Delete the socket's directory (after the last kill)."""
        shutil.rmtree(self._socket_dir, ignore_errors=True)

    async def kill(self) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGKILL)
        await self._proc.wait()
        self._proc = None

    async def _answers(self) -> bool:
        raw = aioredis.Redis.from_url(self.url, socket_connect_timeout=0.2)
        try:
            return bool(await raw.ping())
        except OSError:
            return False
        except aioredis.ConnectionError:
            return False
        finally:
            await raw.aclose()


@pytest.fixture
async def own_redis(tmp_path: Path) -> AsyncIterator[OwnRedis]:
    server = OwnRedis(tmp_path)
    await server.start()
    yield server
    if server._proc is not None:
        await server.kill()
    server.remove()


@pytest.fixture
async def raw(own_redis: OwnRedis) -> AsyncIterator[aioredis.Redis]:
    """A plain client to check what the coordinator really wrote to Redis."""
    client = aioredis.Redis.from_url(own_redis.url, decode_responses=True, socket_timeout=1)
    yield client
    await client.aclose()


async def test_operations_fail_open_while_redis_is_killed_and_use_it_again_after_restart(
    own_redis: OwnRedis, raw: aioredis.Redis
) -> None:
    """Redis SIGKILLed: locks, dedup, cache and outbox go on locally, one warning; restarted: Redis is used again."""
    coord = redis_coordinator(own_redis.url, prefix=PREFIX, agent_cache_size=4, node="proc-a", retry_after=0.1)
    await coord.start()
    assert await coord.dedup.claim("tg:1") is True
    assert await raw.exists(f"{PREFIX}:dedup:tg:1") == 1

    with capture_logs() as logs:
        await own_redis.kill()
        lease = await coord.lock.acquire("session-1", ttl=5)  # a local lease instead of a frozen chat
        assert lease is not None
        assert await coord.lock.acquire("session-1", ttl=5) is None  # still exclusive within the process
        assert [await coord.dedup.claim("tg:2"), await coord.dedup.claim("tg:2")] == [True, False]
        assert await coord.agent_cache.touch("k1", owner="proc-a") == []
        await coord.agent_cache.save_state("k1", {"turns": 5})
        assert await coord.agent_cache.load_state("k1") == {"turns": 5}
        item_id = await coord.outbox.put(OutboundItem("telegram", "-100", None, "hello", "telegram:-100"))
        assert [p.id for p in await coord.outbox.pending()] == [item_id]
        assert await coord.lock.release(lease) is True
        # Keep working past several retry pauses: every failure counts, but warns once.
        assert await eventually(lambda: _failing_claims(coord, 3)) is True

        await own_redis.start()
        assert await eventually(lambda: _claim_lands_in_redis(coord, raw)) is True

    warnings = [e for e in logs if e["event"] == "coord.redis_unavailable"]
    assert len(warnings) == 1
    assert [e["event"] for e in logs if e["event"] == "coord.redis_restored"] == ["coord.redis_restored"]
    assert coord.errors >= 3

    lease = await coord.lock.acquire("session-1", ttl=5)
    assert lease is not None
    assert await raw.get(f"{PREFIX}:lock:session-1") == lease.token
    assert await coord.dedup.claim("tg:2") is False  # claimed locally during the outage, still refused
    assert await coord.agent_cache.load_state("k1") == {"turns": 5}  # the outage state is written back
    assert await raw.get(f"{PREFIX}:agents:state:k1") == '{"turns":5}'
    assert [p.item.text for p in await coord.outbox.pending()] == ["hello"]  # moved to Redis, same id works
    assert await raw.hlen(f"{PREFIX}:outbox:items") == 1
    await coord.outbox.ack(item_id)
    assert await raw.hlen(f"{PREFIX}:outbox:items") == 0
    await coord.stop()


async def _failing_claims(coord: Coordinator, at_least: int) -> bool:
    assert await coord.dedup.claim(f"tg:during-{time.monotonic_ns()}") is True
    return coord.errors >= at_least


async def _claim_lands_in_redis(coord: Coordinator, raw: aioredis.Redis) -> bool:
    delivery = f"tg:after-{time.monotonic_ns()}"
    assert await coord.dedup.claim(delivery) is True
    try:
        return bool(await raw.exists(f"{PREFIX}:dedup:{delivery}"))
    except (OSError, aioredis.ConnectionError):
        return False


async def test_chat_work_continues_through_kill_and_restart(own_redis: OwnRedis, raw: aioredis.Redis) -> None:
    """Turns running in a loop (dedup + held lock) never see an exception while Redis dies and comes back."""
    coord = redis_coordinator(own_redis.url, prefix=PREFIX, agent_cache_size=4, node="proc-a", retry_after=0.1)
    await coord.start()
    turns = 0
    stop = asyncio.Event()

    async def chat() -> None:
        nonlocal turns
        while not stop.is_set():
            assert await coord.dedup.claim(f"tg:{turns}") is True
            async with hold(coord.lock, f"session-{turns % 3}", ttl=1, wait=2):
                await coord.agent_cache.touch(f"k{turns % 5}", owner="proc-a")
                await asyncio.sleep(0.005)  # the turn's work
            turns += 1

    worker = asyncio.create_task(chat())
    assert await eventually(lambda: _at_least(lambda: turns, 5)) is True
    await own_redis.kill()
    before_restart = turns
    assert await eventually(lambda: _at_least(lambda: turns, before_restart + 20)) is True
    await own_redis.start()
    assert await eventually(lambda: _at_least(lambda: coord.errors, 1)) is True
    assert await eventually(lambda: _key_appears(raw, f"{PREFIX}:dedup:tg:*")) is True
    stop.set()
    await asyncio.wait_for(worker, timeout=5)  # re-raises anything the chat loop hit
    await coord.stop()


async def _at_least(value: Callable[[], int], floor: int) -> bool:
    return value() >= floor


async def _key_appears(raw: aioredis.Redis, pattern: str) -> bool:
    try:
        return bool([key async for key in raw.scan_iter(match=pattern)])
    except (OSError, aioredis.ConnectionError):
        return False


async def test_a_turn_held_across_the_kill_keeps_going(own_redis: OwnRedis) -> None:
    """A `hold` whose renewals hit a dead Redis is not reported lost: the turn finishes."""
    coord = redis_coordinator(own_redis.url, prefix=PREFIX, agent_cache_size=4, node="proc-a", retry_after=0.05)
    await coord.start()
    async with hold(coord.lock, "session-1", ttl=0.3) as held:
        await own_redis.kill()
        await asyncio.sleep(0.7)  # the rest of the turn, over two TTLs long
        assert held.lost is False
    assert coord.errors >= 1
    await coord.stop()


async def test_start_with_redis_down_fails_open_and_raw_raises() -> None:
    """A fail-open coordinator starts without Redis and works locally; a raw one raises CoordUnavailable."""
    empty = Path(tempfile.mkdtemp(prefix="chorus-no-redis-"))
    url = f"unix://{empty / 'redis.sock'}?db=0"  # a socket nothing serves (nor can anything else take it): Redis down
    with capture_logs() as logs:
        coord = redis_coordinator(url, prefix=PREFIX, agent_cache_size=2)
        await coord.start()
        assert await coord.dedup.claim("tg:1") is True
        assert await coord.lock.acquire("s", ttl=5) is not None
    assert coord.errors >= 1
    assert [e["event"] for e in logs] == ["coord.redis_unavailable"]
    await coord.stop()

    strict = redis_coordinator(url, prefix=PREFIX, agent_cache_size=2, fail_open=False)
    with pytest.raises(CoordUnavailable) as caught:
        await strict.start()
    assert caught.value.op == "connect"
    assert url not in str(caught.value)
    with pytest.raises(CoordUnavailable):
        await strict.dedup.claim("tg:1")
    await strict.stop()
    shutil.rmtree(empty, ignore_errors=True)


async def test_redis_used_before_start_names_the_fix(redis_url: str, redis_prefix: str) -> None:
    """Calling a Redis coordinator before start() raises an error that says to call start()."""
    coord = redis_coordinator(redis_url, prefix=redis_prefix, agent_cache_size=2)
    with pytest.raises(RuntimeError, match=r"start\(\)"):
        await coord.dedup.claim("tg:1")


async def test_outbox_record_survives_a_process_restart(redis_url: str, redis_prefix: str) -> None:
    """A reply recorded by a process that then dies is pending for the next process on the same Redis."""
    first = redis_coordinator(redis_url, prefix=redis_prefix, agent_cache_size=2, node="old")
    await first.start()
    item = OutboundItem("slack", "C1", "1700000000.1", "answer", "slack:C1", created_at=time.time() - 120)
    item_id = await first.outbox.put(item)
    await first.stop()  # the process dies before sending
    second = redis_coordinator(redis_url, prefix=redis_prefix, agent_cache_size=2, node="new")
    await second.start()
    try:
        assert [(p.id, p.item) for p in await second.outbox.pending(older_than=60)] == [(item_id, item)]
    finally:
        await second.stop()
        await delete_prefix(redis_url, redis_prefix)


async def test_a_lease_lost_in_redis_is_reported_and_fully_freed_on_exit(redis_url: str, redis_prefix: str) -> None:
    """When Redis forgets a held lock (a restart without persistence), `hold` reports it lost and exit frees it."""
    coord = redis_coordinator(redis_url, prefix=redis_prefix, agent_cache_size=2, node="proc-a")
    await coord.start()
    raw = aioredis.Redis.from_url(redis_url)
    try:
        async with hold(coord.lock, "session-1", ttl=0.3) as held:
            await raw.delete(f"{redis_prefix}:lock:session-1")
            await asyncio.wait_for(held.lost_event.wait(), timeout=3)
        assert await coord.lock.acquire("session-1", ttl=5) is not None  # no local half left behind
    finally:
        await raw.aclose()
        await coord.stop()
        await delete_prefix(redis_url, redis_prefix)
