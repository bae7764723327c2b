"""`SpendLimiter` on a Redis shared by every replica.

Owns `RedisSpendLimiter`. A check is one Lua script (`_lua.ADMIT`): one round
trip whatever the number of limits. Spend is one MULTI pipeline. Keys, under
`{prefix}:limits:`: `DAY:tokens|cost|hits|unpriced` (hashes by field, kept
`DAY_KEEP_SECONDS`), `win:FIELD` (a sorted set of message ids by time, the
sliding window) and `said:FIELD/METRIC` (set until the refusal's window ends:
the chat is told once). The connection is the coordination's
`RedisConnection` (errors become `CoordUnavailable`; the caller fails open).
"""
from __future__ import annotations

from collections.abc import Sequence

from gateway.coord.redis import RedisConnection, translate_errors
from gateway.limits import _lua
from gateway.limits.base import (
    DAY_KEEP_SECONDS,
    WINDOW_SECONDS,
    Charge,
    DaySpend,
    Hit,
    Metric,
    Rule,
    day_of,
    model_field,
    next_midnight,
)

_METRICS: tuple[Metric, ...] = ("messages", "tokens", "cost")


class RedisSpendLimiter:
    """Counts on Redis under `{prefix}:limits:`; `start()` connects (no I/O before)."""

    def __init__(self, conn: RedisConnection, *, prefix: str) -> None:
        self._conn = conn
        self._prefix = f"{prefix}:limits"

    async def start(self) -> None:
        await self._conn.start()

    async def stop(self) -> None:
        await self._conn.stop()

    def _day_key(self, now: float, name: str) -> str:
        return f"{self._prefix}:{day_of(now)}:{name}"

    def _window_key(self, field: str) -> str:
        return f"{self._prefix}:win:{field}"

    def _said_key(self, hit_field: str) -> str:
        return f"{self._prefix}:said:{hit_field}"

    async def admit(self, rules: Sequence[Rule], *, now: float, message_id: str) -> Hit | None:
        if not rules:
            return None
        keys = [self._day_key(now, "tokens"), self._day_key(now, "cost"), self._day_key(now, "hits")]
        args: list[str | int | float] = [
            now * 1000, WINDOW_SECONDS * 1000, message_id, next_midnight(now) * 1000, DAY_KEEP_SECONDS, len(rules),
        ]
        for rule in rules:
            keys += [self._window_key(rule.field), self._said_key(rule.hit_field)]
            args += [rule.metric, rule.field, rule.limit, rule.hit_field]
        index, resets_ms, first = await self._conn.script("limits.admit", _lua.ADMIT, keys, args)
        if int(index) == 0:
            return None
        return Hit(rules[int(index) - 1], float(resets_ms) / 1000, bool(int(first)))

    async def spend(self, charge: Charge, *, now: float) -> None:
        tokens, cost, unpriced = (self._day_key(now, name) for name in ("tokens", "cost", "unpriced"))
        with translate_errors("limits.spend"):
            async with self._conn.client.pipeline(transaction=True) as pipe:
                for name in (*charge.fields, model_field(charge.model)):
                    pipe.hincrby(tokens, name, charge.tokens)
                    if charge.cost is not None:
                        pipe.hincrbyfloat(cost, name, charge.cost)
                if charge.cost is None:
                    pipe.hincrby(unpriced, charge.model, charge.tokens)
                for key in (tokens, cost, unpriced):
                    pipe.expire(key, DAY_KEEP_SECONDS)
                await pipe.execute()

    async def day(self, *, now: float) -> DaySpend:
        names = ("tokens", "cost", "hits", "unpriced")
        with translate_errors("limits.day"):
            async with self._conn.client.pipeline(transaction=False) as pipe:
                for name in names:
                    pipe.hgetall(self._day_key(now, name))
                tokens, cost, hits, unpriced = await pipe.execute()
        return DaySpend(
            day=day_of(now),
            tokens={str(k): int(v) for k, v in tokens.items()},
            cost={str(k): float(v) for k, v in cost.items()},
            hits={str(k): int(v) for k, v in hits.items()},
            unpriced={str(k): int(v) for k, v in unpriced.items()},
        )

    async def in_window(self, fields: Sequence[str], *, now: float) -> list[int]:
        if not fields:
            return []
        with translate_errors("limits.in_window"):
            async with self._conn.client.pipeline(transaction=False) as pipe:
                for name in fields:
                    pipe.zcount(self._window_key(name), f"({(now - WINDOW_SECONDS) * 1000}", "+inf")
                counts = await pipe.execute()
        return [int(count) for count in counts]

    async def reset(self, fields: Sequence[str], *, now: float) -> None:
        hit_fields = [f"{name}/{metric}" for name in fields for metric in _METRICS]
        with translate_errors("limits.reset"):
            async with self._conn.client.pipeline(transaction=True) as pipe:
                for name in ("tokens", "cost", "unpriced"):
                    pipe.hdel(self._day_key(now, name), *fields)
                pipe.hdel(self._day_key(now, "hits"), *hit_fields)
                pipe.delete(*(self._window_key(name) for name in fields), *(self._said_key(h) for h in hit_fields))
                await pipe.execute()


__all__ = ["RedisSpendLimiter"]
