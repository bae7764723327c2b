"""Gateway observations for the admin side: compressions and log events into metrics and the event log.

Owns `Recorder` (the compression sink of `LiveEngine`: counts
`chorus_compressions{trigger,outcome}` and appends to the `EventLog`) and
`EventObserver`, which turns the gateway's typed events into metric samples and
dashboard notices, and `LogTap`, a structlog processor that lists the warning
and error lines named below on the dashboard (no metric comes from a log line). `install_log_tap` inserts
the tap just before the renderer (after secret redaction). The tap never
raises and never changes the event it sees. Knows nothing of HTTP.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import structlog

from agent.context.engine import CompressionResult
from gateway.admin.events import EventLog
from gateway.ops.events import (
    AgentBuilt,
    AgentEvicted,
    ConfigChanged,
    DeadLettered,
    GatewayEvent,
    HygieneRan,
    LimitHit,
    MessageAccepted,
    ModelFailover,
    PluginFailed,
    Spent,
    TaskDied,
    ToolCallOutcome,
    TurnFailed,
    TurnFinished,
)
from gateway.ops.logs import EarlyGate
from gateway.ops.metrics import Metrics

# Log events shown as operator notices / errors, with the text the dashboard lists.
NOTICE_EVENTS = {
    "turn.context_overflow": "context overflow: compressed and retried",
    "turn.max_iterations": "turn stopped at the tool-iteration limit",
    "compression.summary_cooldown": "summary model failed: compression cooling down",
    "config.restart_required": "config file changed keys that need a restart",
    "config.runtime_kept": "config reload kept values set at runtime (the file did not change them)",
    "config.runtime_replaced": "config reload replaced values set at runtime (the file changed them)",
    "agent.evicted": "agent evicted from the shared cache",
    "delivery.pending": "reply recorded but not sent yet; will be retried",
    "mcp.server_down": "MCP server down; restarting with backoff",
    "adapter.back": "platform adapter receiving again",
    "store.writes_back": "session store takes writes again; delayed replies follow",
    "turn.oldest_dropped": "small model window: oldest turns left out to answer",
    "turn.empty_reply": "the model gave an empty answer (only reasoning, or nothing)",
}
ERROR_EVENTS = {
    "turn.failed": "turn failed",
    "turn.lock_busy": "session busy in another worker",
    "compression.aborted": "compression aborted: session frozen",
    "compression.failed": "compression failed (rolled back)",
    "delivery.given_up": "reply could not be delivered",
    "intake.failed": "intake failed on a message",
    "intake.dead_lettered": "message quarantined as a dead letter (GET /api/deadletters)",
    "task.died": "background task died; restarting",
    "command.failed": "command failed",
    "lane.job_failed": "session job failed",
    "config.reload_rejected": "config reload rejected; running config kept",
    "coord.lock_lost": "session lock lost mid-turn; another worker may take over",
    "coord.lock_release_failed": "session lock could not be released (it expires by its TTL)",
    "mcp.tool_failed": "tool call failed",
    "memory_provider.failed": "memory provider failed: the turn went on without it",
    "context_engine.failed": "context engine plugin failed: the turn went on without it",
    "adapter.down": "platform adapter stopped receiving (see /readyz)",
    "telegram.poll_hung": "Telegram getUpdates hung: cancelled, retried with backoff",
    "store.write_failed": "session store writes fail (disk): messages kept, replies delayed",
    "delivery.set_aside": "reply refused for good: set aside as a dead letter (GET /api/deadletters)",
}


class Recorder:
    """The compression sink: metrics plus the event log."""

    def __init__(self, events: EventLog, metrics: Metrics) -> None:
        self.events = events
        self.metrics = metrics

    def __call__(self, session: str | None, messages_before: int, result: CompressionResult) -> None:
        self.metrics.compressions.labels(trigger=result.trigger, outcome=result.outcome).inc()
        for reason, lines in (("superseded", result.fact_drops.superseded), ("over_budget", result.fact_drops.over_budget)):
            if lines:
                self.metrics.facts_dropped.labels(reason=reason).inc(len(lines))
        self.events.compression(session, result, messages_before=messages_before)


def _detail(event: Mapping[str, Any]) -> str:
    names = ("tool", "server", "error", "kind", "reason", "detail", "setting", "outcome", "stage", "task")
    parts = [f"{name}={event[name]}" for name in names if event.get(name)]
    return "; ".join(parts)


class EventObserver:
    """Reads the gateway's typed events (`gateway/ops/events.py`) into `Metrics` and the `EventLog`."""

    def __init__(self, events: EventLog, metrics: Metrics) -> None:
        self.events = events
        self.metrics = metrics

    def __call__(self, event: GatewayEvent) -> None:
        m = self.metrics
        match event:
            case MessageAccepted(platform=platform):
                m.messages_in.labels(platform=platform).inc()
            case TurnFinished():
                if event.lock_wait_seconds is not None:
                    m.lock_wait_seconds.observe(event.lock_wait_seconds)
                m.turn_seconds.labels(platform=event.platform).observe(event.latency_seconds)
                m.llm_tokens.labels(direction="prompt").inc(event.prompt_tokens)
                m.llm_tokens.labels(direction="completion").inc(event.completion_tokens)
                if event.delivered:
                    m.messages_out.labels(platform=event.platform).inc()
                self.events.touch(event.session_key)
            case TurnFailed(error=error):
                m.turn_errors.labels(kind=error).inc()
            case HygieneRan():
                m.hygiene_runs.labels(result=event.outcome).inc()
                self.events.notice(event.session_key, f"hygiene: {event.reason} → {event.outcome}, "
                                                      f"{event.messages_before} → {event.messages_after} messages")
            case AgentBuilt(restored=restored):
                m.agent_cache.labels(event="restored" if restored else "built").inc()
            case AgentEvicted():
                m.agent_cache.labels(event="evicted").inc()
            case ToolCallOutcome():
                m.tool_calls.labels(tool=event.tool, outcome=event.outcome).inc()
                if event.outcome not in ("ok", "cancelled"):
                    m.tool_errors.labels(tool=event.tool, outcome=event.outcome).inc()
                if event.latency_seconds and event.outcome != "invalid_arguments":
                    m.tool_seconds.labels(tool=event.tool).observe(event.latency_seconds)
            case DeadLettered(stage=stage):
                m.deadletters.labels(stage=stage).inc()
            case TaskDied(task=task):
                m.task_deaths.labels(task=task).inc()
            case ModelFailover(fix=fix):
                self.events.error(None, fix)  # names the key or the deadline, and the model answering now
            case PluginFailed(plugin=plugin, kind=kind):
                m.plugin_errors.labels(plugin=plugin, kind=kind).inc()
            case LimitHit(scope=scope):
                m.limit_hits.labels(scope=scope).inc()
            case Spent(model=model, cost=cost):
                m.spend.labels(model=model).inc(cost or 0.0)
            case ConfigChanged(who=who):
                m.config_changes.labels(source="api" if who.startswith("token:") else who or "unknown").inc()
                self.events.notice(None, f"config {event.setting}: {event.old!r} → {event.new!r} ({who})")


class LogTap:
    """A structlog processor listing the gateway's warning and error lines on the dashboard (no metrics)."""

    wanted = frozenset(NOTICE_EVENTS) | frozenset(ERROR_EVENTS)  # passed by `EarlyGate` whatever the level

    def __init__(self, events: EventLog) -> None:
        self.events = events

    def __call__(self, _logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        try:
            self._observe(event_dict)
        except Exception:  # noqa: BLE001 - observing must never break logging
            pass
        return event_dict

    def _observe(self, event: Mapping[str, Any]) -> None:
        name = event.get("event")
        session = event.get("session_key") if isinstance(event.get("session_key"), str) else None
        if name in ERROR_EVENTS:
            detail = _detail(event)
            self.events.error(session, ERROR_EVENTS[name] + (f" ({detail})" if detail else ""))
        elif name in NOTICE_EVENTS:
            self.events.notice(session, NOTICE_EVENTS[name])


def install_log_tap(tap: LogTap) -> Callable[[], None]:
    """Insert `tap` into the structlog pipeline before the renderer; returns the function that removes it.

    Call after `configure_logging` (a later `configure_logging` drops it). The
    pipeline's `EarlyGate` is widened to let the tap's events through.
    """
    processors = [
        p.keeping(tap.wanted) if isinstance(p, EarlyGate) else p for p in structlog.get_config()["processors"]
    ]
    position = max(len(processors) - 1, 0)
    processors.insert(position, tap)
    structlog.configure(processors=processors)

    def remove() -> None:
        current = [p for p in structlog.get_config()["processors"] if p is not tap]
        structlog.configure(processors=current)

    return remove


__all__ = ["ERROR_EVENTS", "NOTICE_EVENTS", "EventObserver", "LogTap", "Recorder", "install_log_tap"]
