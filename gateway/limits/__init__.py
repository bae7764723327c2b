"""Spend and rate control across replicas (issue 33; docs/design.md "Spend limits").

Per user, per chat and for the whole bot: messages per minute (a sliding
window), tokens per day, and cost per day from `pricing`. Counted on Redis
when `redis.url` is set (one Lua script per check), else in this process with
the day's counters kept under home. Two backends pass one contract suite
(`tests/gateway/limits/`).

Usage::

    gate = build_spend_gate(config, policy=policy, bus=bus)
    await gate.start()
    hit = await gate.admit(message, route)          # the one check, before any model call
    if hit is not None and hit.first:
        tell(hit_text(hit, job.language))             # once per window, in the chat's language
    with gate.metered(message, route) as tally:       # every model call inside is charged
        ...
    await gate.stop()
"""
from __future__ import annotations

from collections.abc import Callable

from gateway.chats.policy import ChatPolicy
from gateway.config import ChorusConfig, limits_clock
from gateway.coord.redis import RedisConnection
from gateway.limits.base import (
    Charge,
    DaySpend,
    Hit,
    Rule,
    SpendLimiter,
    chat_field,
    day_of,
    model_field,
    next_midnight,
    user_field,
)
from gateway.limits.gate import SpendGate, Tally
from gateway.limits.memory import MemorySpendLimiter
from gateway.limits.redis import RedisSpendLimiter
from gateway.limits.rules import hit_text, price, rules_for, usage_lines
from gateway.ops.events import EventBus

STATE_FILE = "limits.json"
"""Under home: the day's counters of the in-process backend (a restart keeps the day)."""


def build_limiter(config: ChorusConfig) -> MemorySpendLimiter | RedisSpendLimiter:
    """Redis with `redis.url` (shared by every replica on `redis.key_prefix`), else this process's, kept under home."""
    if config.redis.url:
        return RedisSpendLimiter(RedisConnection(config.redis.url), prefix=config.redis.key_prefix)
    return MemorySpendLimiter(config.home_dir / STATE_FILE)


def build_spend_gate(
    config: ChorusConfig, *, policy: ChatPolicy, bus: EventBus, clock: Callable[[], float] | None = None
) -> SpendGate:
    """The gate of one gateway process (no I/O; `start()` connects or reads the kept day)."""
    limiter = build_limiter(config)
    return SpendGate(limiter, policy=policy, bus=bus, lifecycle=limiter, clock=clock or limits_clock())


__all__ = [
    "STATE_FILE", "Charge", "DaySpend", "Hit", "MemorySpendLimiter", "RedisSpendLimiter", "Rule", "SpendGate",
    "SpendLimiter", "Tally", "build_limiter", "build_spend_gate", "chat_field", "day_of", "hit_text", "model_field",
    "next_midnight", "price", "rules_for", "usage_lines", "user_field",
]
