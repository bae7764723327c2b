"""What the spend limits count and the Protocol both backends implement.

Owns `Rule` (one limit that applies to a message), `Hit` (a refusal and when
it ends), `Charge` (what one model call cost), `DaySpend` (the counters of one
UTC day), the `SpendLimiter` Protocol, the counter field names and the day and
window arithmetic. Knows nothing of Redis, config files or chats beyond their ids.

Counters are fields of per-day maps: `user:PLATFORM:USER`, `chat:PLATFORM:CHAT`,
`global` and `model:NAME`; a refusal is counted under `FIELD/METRIC`.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

Metric = Literal["messages", "tokens", "cost"]
ScopeKind = Literal["user", "chat", "global"]

WINDOW_SECONDS = 60.0
"""`messages_per_minute` is a sliding window of this many seconds."""
DAY_KEEP_SECONDS = 3 * 86_400
"""A day's counters are kept this long (yesterday stays readable after midnight)."""
GLOBAL_FIELD = "global"


def user_field(platform: str, user_id: str) -> str:
    return f"user:{platform}:{user_id}"


def chat_field(chat_scope: str) -> str:
    return f"chat:{chat_scope}"


def model_field(model: str) -> str:
    return f"model:{model}"


def day_of(now: float) -> str:
    """The UTC day `now` falls in, `YYYY-MM-DD`: the key of the day's counters."""
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


def next_midnight(now: float) -> float:
    """When the day of `now` ends (UTC): when the `*_per_day` limits reset."""
    start = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (start + timedelta(days=1)).timestamp()


@dataclass(frozen=True, slots=True)
class Rule:
    """One limit that applies to a message: `limit` of `metric` for the counter `field`.

    `messages` are counted in a sliding window of `WINDOW_SECONDS`; `tokens` and `cost` per UTC day.
    """

    scope: ScopeKind
    field: str
    metric: Metric
    limit: float

    @property
    def hit_field(self) -> str:
        return f"{self.field}/{self.metric}"

    @property
    def name(self) -> str:
        """The config key this rule comes from (`per_user.messages_per_minute`, `global.cost_per_day`)."""
        scope = "global" if self.scope == "global" else f"per_{self.scope}"
        unit = {"messages": "messages_per_minute", "tokens": "tokens_per_day", "cost": "cost_per_day"}[self.metric]
        return f"{scope}.{unit}"


@dataclass(frozen=True, slots=True)
class Hit:
    """A message refused by `rule` until `resets_at` (epoch seconds).

    `first` is true for the first refusal of this rule in its window: the one the chat is told and the log shows.
    """

    rule: Rule
    resets_at: float
    first: bool


@dataclass(frozen=True, slots=True)
class Charge:
    """What one model call cost, added to each of `fields` (and to the model's own counter)."""

    fields: tuple[str, ...]
    model: str
    tokens: int
    cost: float | None  # None: the model has no price; its tokens are counted as unpriced


@dataclass(frozen=True, slots=True)
class DaySpend:
    """The counters of one UTC day: tokens and cost by field, refusals by `FIELD/METRIC`, unpriced tokens by model."""

    day: str
    tokens: Mapping[str, int] = field(default_factory=dict)
    cost: Mapping[str, float] = field(default_factory=dict)
    hits: Mapping[str, int] = field(default_factory=dict)
    unpriced: Mapping[str, int] = field(default_factory=dict)

    def used(self, rule: Rule) -> float:
        return self.cost.get(rule.field, 0.0) if rule.metric == "cost" else self.tokens.get(rule.field, 0)


class SpendLimiter(Protocol):
    """Counts messages and spend per user, chat and in all, across every process sharing the backend."""

    async def admit(self, rules: Sequence[Rule], *, now: float, message_id: str) -> Hit | None:
        """Check every rule at once; if none is exceeded, count the message in each window (atomic).

        Returns the first exceeded rule as a `Hit`, or None when the message is admitted.
        """
        ...

    async def spend(self, charge: Charge, *, now: float) -> None:
        """Add one model call's tokens (and cost, if priced) to today's counters."""
        ...

    async def day(self, *, now: float) -> DaySpend:
        """Today's counters (UTC)."""
        ...

    async def in_window(self, fields: Sequence[str], *, now: float) -> list[int]:
        """How many messages each field has in its sliding window now."""
        ...

    async def reset(self, fields: Sequence[str], *, now: float) -> None:
        """Forget today's spend, the message windows and the said-once marks of `fields` (operator's reset)."""
        ...


def wall_clock() -> float:
    return time.time()


__all__ = [
    "DAY_KEEP_SECONDS", "GLOBAL_FIELD", "WINDOW_SECONDS", "Charge", "DaySpend", "Hit", "Metric", "Rule", "ScopeKind",
    "SpendLimiter", "chat_field", "day_of", "model_field", "next_midnight", "user_field", "wall_clock",
]
