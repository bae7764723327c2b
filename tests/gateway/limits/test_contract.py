"""The `SpendLimiter` contract, run against the in-process and the Redis backend (two clients on one Redis)."""
from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from gateway.limits import Charge, MemorySpendLimiter, Rule, next_midnight
from tests.gateway.limits.conftest import Limiters

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()
USER = "user:web:alice"
CHAT = "chat:web:room"


def per_minute(limit: int, field: str = USER) -> Rule:
    return Rule("user", field, "messages", limit)


async def test_a_window_admits_exactly_the_limit_across_clients(limiters: Limiters) -> None:
    rule = [per_minute(3)]
    results = await asyncio.gather(*(
        (limiters.a if i % 2 else limiters.b).admit(rule, now=NOON + i * 0.01, message_id=f"m{i}") for i in range(15)
    ))
    assert sum(1 for hit in results if hit is None) == 3
    refused = [hit for hit in results if hit is not None]
    assert [hit.first for hit in refused].count(True) == 1  # told once per window
    assert all(hit.rule == rule[0] for hit in refused)


async def test_the_window_slides(limiters: Limiters) -> None:
    rule = [per_minute(2)]
    assert await limiters.a.admit(rule, now=NOON, message_id="m1") is None
    assert await limiters.b.admit(rule, now=NOON + 30, message_id="m2") is None
    hit = await limiters.a.admit(rule, now=NOON + 59, message_id="m3")
    assert hit is not None and hit.resets_at == NOON + 60
    assert await limiters.b.admit(rule, now=NOON + 60.5, message_id="m4") is None  # m1 left the window
    assert await limiters.a.in_window([USER], now=NOON + 61) == [2]


async def test_a_refused_message_is_not_counted_and_told_again_next_window(limiters: Limiters) -> None:
    rule = [per_minute(1)]
    assert await limiters.a.admit(rule, now=NOON, message_id="m1") is None
    first = await limiters.a.admit(rule, now=NOON + 1, message_id="m2")
    again = await limiters.b.admit(rule, now=NOON + 2, message_id="m3")
    assert first is not None and first.first and again is not None and not again.first
    assert await limiters.a.admit(rule, now=NOON + 61, message_id="m4") is None
    later = await limiters.b.admit(rule, now=NOON + 62, message_id="m5")
    assert later is not None and later.first
    assert (await limiters.a.day(now=NOON)).hits == {f"{USER}/messages": 3}


async def test_all_rules_pass_or_nothing_is_counted(limiters: Limiters) -> None:
    """A message refused by the chat's window is not counted in the user's."""
    rules = [per_minute(5), Rule("chat", CHAT, "messages", 1)]
    assert await limiters.a.admit(rules, now=NOON, message_id="m1") is None
    hit = await limiters.b.admit(rules, now=NOON + 1, message_id="m2")
    assert hit is not None and hit.rule.field == CHAT
    assert await limiters.a.in_window([USER, CHAT], now=NOON + 2) == [1, 1]


async def test_tokens_per_day_stop_at_the_budget_and_reset_at_midnight(limiters: Limiters) -> None:
    rule = [Rule("chat", CHAT, "tokens", 1000)]
    assert await limiters.a.admit(rule, now=NOON, message_id="m1") is None
    await limiters.a.spend(Charge((USER, CHAT, "global"), "m-1", 600, 0.1), now=NOON)
    assert await limiters.b.admit(rule, now=NOON + 1, message_id="m2") is None
    await limiters.b.spend(Charge((USER, CHAT, "global"), "m-1", 600, 0.1), now=NOON + 1)
    hit = await limiters.a.admit(rule, now=NOON + 2, message_id="m3")
    assert hit is not None and hit.resets_at == next_midnight(NOON) and hit.first
    tomorrow = next_midnight(NOON) + 1
    assert await limiters.b.admit(rule, now=tomorrow, message_id="m4") is None
    assert (await limiters.a.day(now=tomorrow)).tokens == {}


async def test_cost_counts_per_field_and_model_and_unpriced_is_kept_apart(limiters: Limiters) -> None:
    await limiters.a.spend(Charge((USER, CHAT, "global"), "priced", 100, 0.25), now=NOON)
    await limiters.b.spend(Charge((USER, CHAT, "global"), "unpriced", 50, None), now=NOON)
    day = await limiters.a.day(now=NOON)
    assert day.tokens == {USER: 150, CHAT: 150, "global": 150, "model:priced": 100, "model:unpriced": 50}
    assert day.cost == {USER: 0.25, CHAT: 0.25, "global": 0.25, "model:priced": 0.25}
    assert day.unpriced == {"unpriced": 50}
    budget = [Rule("global", "global", "cost", 0.25)]
    assert await limiters.b.admit(budget, now=NOON, message_id="m1") is not None


async def test_reset_forgets_one_field(limiters: Limiters) -> None:
    rules = [per_minute(1), Rule("user", USER, "tokens", 10)]
    other = [per_minute(1, "user:web:bob")]
    assert await limiters.a.admit(rules, now=NOON, message_id="m1") is None
    assert await limiters.a.admit(other, now=NOON, message_id="m2") is None
    await limiters.a.spend(Charge((USER, "global"), "m", 20, None), now=NOON)
    assert await limiters.b.admit(rules, now=NOON + 1, message_id="m3") is not None
    await limiters.b.reset([USER], now=NOON + 2)
    assert await limiters.a.admit(rules, now=NOON + 3, message_id="m4") is None
    assert await limiters.a.admit(other, now=NOON + 3, message_id="m5") is not None
    day = await limiters.a.day(now=NOON + 3)
    assert USER not in day.tokens and day.tokens["global"] == 20


async def test_the_same_message_counts_once(limiters: Limiters) -> None:
    """A message re-run after a restart (same delivery id) does not take a second place in the window."""
    rule = [per_minute(2)]
    assert await limiters.a.admit(rule, now=NOON, message_id="same") is None
    assert await limiters.b.admit(rule, now=NOON + 1, message_id="same") is None
    assert await limiters.a.in_window([USER], now=NOON + 2) == [1]


async def test_a_restart_keeps_the_day(limiters: Limiters) -> None:
    """The memory backend reads its kept counters back; Redis keeps them by itself."""
    await limiters.a.spend(Charge((CHAT,), "m", 70, 0.5), now=NOON)
    if limiters.backend == "memory":
        await limiters.a.stop()  # what `chorus run` does on its way out
        restarted = MemorySpendLimiter(limiters.state)
        await restarted.start()
        day = await restarted.day(now=NOON + 5)
    else:
        day = await limiters.b.day(now=NOON + 5)
    assert day.tokens[CHAT] == 70 and day.cost[CHAT] == 0.5


async def test_a_damaged_state_file_starts_the_day_empty(tmp_path: Path) -> None:
    state = tmp_path / "limits.json"
    state.write_text('{"2026-12-06": {"tokens": {"chat:x": "lots"}}}', encoding="utf-8")
    limiter = MemorySpendLimiter(state)
    await limiter.start()
    assert (await limiter.day(now=NOON)).tokens == {}
