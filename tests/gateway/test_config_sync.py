"""`RedisConfigSync` on the real Redis: changes cross processes' `LiveConfig`s; bad ones are refused, not applied."""
from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from gateway.config import parse_config
from gateway.ops.config_sync import RedisConfigSync
from gateway.ops.live_config import LiveConfig
from tests.gateway.coord.conftest import eventually


@pytest.fixture
async def pair(redis_url: str, redis_prefix: str) -> AsyncIterator[tuple[RedisConfigSync, RedisConfigSync, LiveConfig]]:
    """Two syncs on one prefix; the second one's `LiveConfig` is returned to inspect."""
    lives = [LiveConfig(parse_config({}, env={})) for _ in range(2)]
    syncs = [RedisConfigSync(live, redis_url, prefix=redis_prefix) for live in lives]
    for sync in syncs:
        sync.start()
    yield syncs[0], syncs[1], lives[1]
    for sync in syncs:
        sync.stop()
    raw = aioredis.Redis.from_url(redis_url)
    await raw.delete(f"{redis_prefix}:config:overrides")
    await raw.aclose()


async def _subscribed(redis_url: str, channel: str, count: int) -> bool:
    raw = aioredis.Redis.from_url(redis_url)
    try:
        numbers = await raw.pubsub_numsub(channel)
        return bool(numbers and int(numbers[0][1]) >= count)
    finally:
        await raw.aclose()


async def test_a_change_reaches_the_other_process_and_a_bad_one_is_refused(
    pair: tuple[RedisConfigSync, RedisConfigSync, LiveConfig], redis_url: str, redis_prefix: str
) -> None:
    """A valid change applies on the listener; one its config rejects (a newer replica's key) changes nothing."""
    sender, listener, live = pair
    channel = f"{redis_prefix}:config:events"
    assert await eventually(lambda: _subscribed(redis_url, channel, 2), timeout=10)
    assert await sender.changed({"compression.threshold": 0.66}, who="token:abc") is True

    async def applied() -> bool:
        return live.current().compression.threshold == 0.66

    assert await eventually(applied, timeout=10)
    with capture_logs() as logs:
        raw = aioredis.Redis.from_url(redis_url)
        await raw.publish(channel, json.dumps({"node": "other", "kind": "update", "who": "x",
                                               "changes": {"compression.not_a_key": 1}}))
        await raw.publish(channel, "not json")
        await raw.aclose()

        async def both_seen() -> bool:
            return {e["event"] for e in logs} >= {"config.sync_rejected", "config.sync_bad_message"}

        assert await eventually(both_seen, timeout=10)
    assert live.current().compression.threshold == 0.66
    rejected = next(e for e in logs if e["event"] == "config.sync_rejected")
    assert rejected["setting"] == "compression.not_a_key" and rejected["kept"] == "running config"


async def test_without_redis_a_change_stays_local_and_says_so() -> None:
    """Redis unreachable: `changed` answers False (the API tells the operator) and logs one warning."""
    live = LiveConfig(parse_config({}, env={}))
    sync = RedisConfigSync(live, "redis://127.0.0.1:1/0", prefix="nowhere")
    sync.start()
    try:
        with capture_logs() as logs:
            assert await sync.changed({"compression.threshold": 0.7}, who="t") is False
        assert [e["event"] for e in logs].count("config.sync_unreachable") == 1
    finally:
        sync.stop()
