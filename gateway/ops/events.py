"""Typed domain events of one gateway process, and the bus that hands them to their readers.

Owns the event values (a turn finished or failed, hygiene ran, an agent was built or evicted, a message was
accepted, a config key changed) and `EventBus`. The code where a thing happens publishes the event; metrics and
the admin event list subscribe (`gateway/admin/tap.py`), so no metric is derived from a log line. Publishing
never raises: a failing reader is logged and the others still run. Knows nothing of Prometheus or HTTP.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

import structlog

from agent.model_retry import ModelFailover  # the model chain moved to a fallback, published as it is
from agent.tools.mcp import ToolCallOutcome  # an MCP tool call's end, published as it is

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class MessageAccepted:
    platform: str
    verdict: str  # "respond" | "record" | "command"


@dataclass(frozen=True, slots=True)
class TurnFinished:
    platform: str
    session_key: str
    latency_seconds: float
    lock_wait_seconds: float | None
    prompt_tokens: int
    completion_tokens: int
    delivered: bool


@dataclass(frozen=True, slots=True)
class TurnFailed:
    platform: str
    session_key: str
    error: str  # the exception's type name, or "lock_busy"


@dataclass(frozen=True, slots=True)
class HygieneRan:
    session_key: str
    reason: str
    outcome: str
    messages_before: int
    messages_after: int


@dataclass(frozen=True, slots=True)
class AgentBuilt:
    session_id: str
    restored: bool  # from the shared cache's saved state rather than new


@dataclass(frozen=True, slots=True)
class AgentEvicted:
    cache_key: str


@dataclass(frozen=True, slots=True)
class ConfigChanged:
    setting: str
    old: object
    new: object
    who: str  # "token:…" for the API, "reload", "sighup", …


@dataclass(frozen=True, slots=True)
class ConfigSaved:
    """A key that needs a restart was written to the config file (not in force until chorus restarts)."""

    setting: str
    old: object
    new: object
    who: str


@dataclass(frozen=True, slots=True)
class DeadLettered:
    """A message intake could not handle was quarantined (`<home>/deadletter/`); intake went on."""

    stage: str  # decide | journal | dispatch | replay
    platform: str
    error: str


@dataclass(frozen=True, slots=True)
class TaskDied:
    """A supervised background task died; it is restarted after a backoff."""

    task: str
    error: str


@dataclass(frozen=True, slots=True)
class LimitHit:
    """A message refused by a spend or rate limit (`gateway/limits/`); no model call was made."""

    scope: str  # user | chat | global
    limit: str  # the config key: per_user.messages_per_minute, global.cost_per_day, …


@dataclass(frozen=True, slots=True)
class Spent:
    """One model call's tokens (and cost in the units of `pricing`; None: the model has no price)."""

    model: str
    tokens: int
    cost: float | None


@dataclass(frozen=True, slots=True)
class SenderRefused:
    """A message from a sender the platform's allowlist does not admit (answered or not); never its text."""

    platform: str
    user_id: str
    user_name: str
    chat_id: str


@dataclass(frozen=True, slots=True)
class PluginFailed:
    """A plugin (memory provider or context engine) raised or timed out; the turn went on without it."""

    plugin: str  # its configured name (memory.provider / context.engine): a bounded set
    kind: str  # memory_provider | context_engine


GatewayEvent: TypeAlias = (
    MessageAccepted | TurnFinished | TurnFailed | HygieneRan | AgentBuilt | AgentEvicted | ConfigChanged | ConfigSaved | ToolCallOutcome
    | DeadLettered | TaskDied | ModelFailover | LimitHit | Spent | PluginFailed | SenderRefused
)
Subscriber: TypeAlias = Callable[[GatewayEvent], None]


class EventBus:
    """Synchronous fan-out of `GatewayEvent`s to subscribers (cheap: a list walk per event)."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a reader; returns the function that removes it."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def publish(self, event: GatewayEvent) -> None:
        for subscriber in self._subscribers:
            try:
                subscriber(event)
            except Exception as exc:  # noqa: BLE001 - a reader must never break the code that publishes
                log.warning("events.subscriber_failed", event=type(event).__name__, error=type(exc).__name__)


__all__ = [
    "AgentBuilt", "AgentEvicted", "ConfigChanged", "ConfigSaved", "DeadLettered", "EventBus", "GatewayEvent", "HygieneRan", "MessageAccepted",
    "ModelFailover", "PluginFailed", "SenderRefused", "Subscriber", "TaskDied", "ToolCallOutcome", "TurnFailed", "TurnFinished",
]
