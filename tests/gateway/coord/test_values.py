"""Keys, values and validation of the coordination package, and the embedded backend on an injected clock."""
from __future__ import annotations

import pytest

from gateway.coord import OutboundItem, agent_cache_key, memory_coordinator, poller_lease_name, redis_coordinator


class FakeClock:
    """A wall clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_agent_cache_key_joins_session_home_and_model() -> None:
    """The agent-cache key is `session_id::home::model`."""
    assert agent_cache_key("telegram:42", "/srv/chorus/default", "gpt-4o") == "telegram:42::/srv/chorus/default::gpt-4o"


@pytest.mark.parametrize(
    ("parts", "named"),
    [(("", "h", "m"), "session_id"), (("s", "a::b", "m"), "home"), (("s", "h", ""), "model")],
)
def test_agent_cache_key_refuses_ambiguous_parts(parts: tuple[str, str, str], named: str) -> None:
    """An empty part or one containing `::` is refused, naming the part."""
    with pytest.raises(ValueError, match=named):
        agent_cache_key(*parts)


def test_poller_lease_name_never_contains_the_token() -> None:
    """The poller lease name is stable per token and does not reveal it."""
    token = "123456:AAH-secret-token"
    name = poller_lease_name("telegram", token)
    assert (name.startswith("telegram:"), len(name), "secret" in name, "123456" in name) == (True, 25, False, False)
    assert poller_lease_name("telegram", token) == name != poller_lease_name("telegram", token + "x")


def test_outbound_item_json_round_trip() -> None:
    """An outbound item survives to_json/from_json unchanged, including None fields and non-ASCII text."""
    item = OutboundItem("discord", "123", None, "héllo ✓", "discord:123", reply_to=None, created_at=1.5)
    assert OutboundItem.from_json(item.to_json()) == item


def test_outbound_item_from_bad_json_names_the_field() -> None:
    """A stored item with a wrong field type is refused with the field named."""
    with pytest.raises(ValueError, match="'chat_id'"):
        OutboundItem.from_json('{"platform":"web","chat_id":5,"text":"x","session_key":"s","created_at":1}')


def test_capacity_below_one_is_refused_with_the_config_key() -> None:
    """An agent cache of size 0 is refused with the config key named."""
    with pytest.raises(ValueError, match="gateway.agent_cache_size"):
        memory_coordinator(agent_cache_size=0)
    with pytest.raises(ValueError, match="gateway.agent_cache_size"):
        redis_coordinator("redis://127.0.0.1:1/0", prefix="p", agent_cache_size=0)


async def test_memory_ttls_follow_the_injected_clock() -> None:
    """Embedded locks, dedup ids, leases and claims expire exactly when the injected clock passes their TTL."""
    clock = FakeClock()
    coord = memory_coordinator(agent_cache_size=2, now=clock, node="p")
    lease = await coord.lock.acquire("s", ttl=10)
    assert lease is not None and lease.acquired_at == clock.now and lease.token.startswith("p:")
    assert await coord.dedup.claim("d", ttl=10) is True
    assert await coord.poller_lease.acquire("tg", owner="a", ttl=10) is True
    item_id = await coord.outbox.put(OutboundItem("web", "c", None, "t", "web:c", created_at=clock.now))
    assert await coord.outbox.claim(item_id, owner="a", ttl=10) is True
    clock.now += 9.9
    assert [
        await coord.lock.acquire("s", ttl=10) is None,
        await coord.dedup.claim("d"),
        await coord.poller_lease.acquire("tg", owner="b", ttl=10),
        await coord.outbox.claim(item_id, owner="b", ttl=10),
        [p.id for p in await coord.outbox.pending(older_than=10)],
    ] == [True, False, False, False, []]
    clock.now += 0.2
    assert [
        await coord.lock.acquire("s", ttl=10) is not None,
        await coord.dedup.claim("d"),
        await coord.poller_lease.acquire("tg", owner="b", ttl=10),
        await coord.outbox.claim(item_id, owner="b", ttl=10),
        [p.id for p in await coord.outbox.pending(older_than=10)],
    ] == [True, True, True, True, [item_id]]


@pytest.mark.parametrize("ttl", [0.0, -1.0])
async def test_non_positive_ttl_is_refused(ttl: float) -> None:
    """A TTL of zero or less is refused: it would expire at once."""
    coord = memory_coordinator(agent_cache_size=2)
    with pytest.raises(ValueError, match="ttl must be > 0"):
        await coord.lock.acquire("s", ttl=ttl)
    with pytest.raises(ValueError, match="ttl must be > 0"):
        await coord.dedup.claim("d", ttl=ttl)
