"""One poller per bot token: two gateways' adapters share a lease on the real Redis; the other takes over."""
from __future__ import annotations

import asyncio

from adapters.base import AdapterError, ChatTarget, InboundMessage
from gateway.coord import redis_coordinator
from gateway.intake.poller import LeasedAdapter
from tests.gateway.fake_platform import FakePlatform


async def test_only_the_lease_holder_polls_and_the_other_takes_over(redis_url: str, redis_prefix: str) -> None:
    """The first process polls; the second neither polls nor sends until the first stops, then it takes over."""
    coord_a = redis_coordinator(redis_url, prefix=redis_prefix, agent_cache_size=8, node="a", fail_open=False)
    coord_b = redis_coordinator(redis_url, prefix=redis_prefix, agent_cache_size=8, node="b", fail_open=False)
    await coord_a.start()
    await coord_b.start()
    inner_a, inner_b = FakePlatform("telegram"), FakePlatform("telegram")
    a = LeasedAdapter(inner_a, lease=coord_a.poller_lease, name="telegram:abc", owner="a", ttl=0.3)
    b = LeasedAdapter(inner_b, lease=coord_b.poller_lease, name="telegram:abc", owner="b", ttl=0.3)
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    try:
        await a.start(queue)
        await b.start(queue)
        first = (a.polling.is_set(), b.polling.is_set(), inner_b.queue is None)
        try:
            await b.send(ChatTarget("telegram", "1"), "hi")
            refused = False
        except AdapterError:
            refused = True
        await a.stop()
        await asyncio.wait_for(b.polling.wait(), 5)
        await b.send(ChatTarget("telegram", "1"), "now me")
    finally:
        await a.stop()
        await b.stop()
        await coord_a.stop()
        await coord_b.stop()
    assert first == (True, False, True) and refused
    assert [o.text for o in inner_b.outgoing] == ["now me"]
