"""Gateway observations for the admin side: compressions and log events into metrics and the event log.

Owns `Recorder` (the compression sink of `LiveEngine`: counts
`chorus_compressions{trigger,outcome}` and appends to the `EventLog`) and
`LogTap`, a structlog processor that reads the gateway's canonical log lines
(`turn.finished`, `turn.failed`, `hygiene.ran`, `agent.built`, …) and turns
them into metric samples and notices/errors for the dashboard, so the
gateway's code needs no metrics calls of its own. `install_log_tap` inserts
the tap just before the renderer (after secret redaction). The tap never
raises and never changes the event it sees. Knows nothing of HTTP.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import structlog

from agent.context.engine import CompressionResult
from gateway.admin.events import EventLog
from gateway.metrics import Metrics

# Log events shown as operator notices / errors, with the text the dashboard lists.
NOTICE_EVENTS = {
    "turn.context_overflow": "context overflow: compressed and retried",
    "turn.max_iterations": "turn stopped at the tool-iteration limit",
    "compression.summary_cooldown": "summary model failed: compression cooling down",
    "config.restart_required": "config file changed keys that need a restart",
    "agent.evicted": "agent evicted from the shared cache",
    "delivery.pending": "reply recorded but not sent yet; will be retried",
}
ERROR_EVENTS = {
    "turn.failed": "turn failed",
    "turn.lock_busy": "session busy in another worker",
    "compression.aborted": "compression aborted: session frozen",
    "compression.failed": "compression failed (rolled back)",
    "delivery.given_up": "reply could not be delivered",
    "intake.failed": "intake failed on a message",
    "command.failed": "command failed",
    "lane.job_failed": "session job failed",
    "config.reload_rejected": "config reload rejected; running config kept",
    "coord.lock_lost": "session lock lost mid-turn; another worker may take over",
    "coord.lock_release_failed": "session lock could not be released (it expires by its TTL)",
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
    parts = [f"{name}={event[name]}" for name in ("error", "kind", "reason", "setting", "outcome") if event.get(name)]
    return "; ".join(parts)


class LogTap:
    """A structlog processor feeding `Metrics` and `EventLog` from the gateway's log lines."""

    def __init__(self, events: EventLog, metrics: Metrics) -> None:
        self.events = events
        self.metrics = metrics

    def __call__(self, _logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        try:
            self._observe(event_dict)
        except Exception:  # noqa: BLE001, S110 - observing must never break logging
            pass
        return event_dict

    def _observe(self, event: Mapping[str, Any]) -> None:
        name = event.get("event")
        session = event.get("session_key") if isinstance(event.get("session_key"), str) else None
        platform = str(event.get("platform") or "unknown")
        m = self.metrics
        if name == "intake.accepted":
            m.messages_in.labels(platform=platform).inc()
        elif name == "turn.finished":
            if event.get("lock_wait_ms") is not None:
                m.lock_wait_seconds.observe(float(event["lock_wait_ms"]) / 1000)
            if event.get("latency_ms") is not None:
                m.turn_seconds.labels(platform=platform).observe(float(event["latency_ms"]) / 1000)
            m.llm_tokens.labels(direction="prompt").inc(int(event.get("prompt_tokens") or 0))
            m.llm_tokens.labels(direction="completion").inc(int(event.get("completion_tokens") or 0))
            if event.get("delivered"):
                m.messages_out.labels(platform=platform).inc()
            if session is not None:
                self.events.touch(session)
        elif name == "hygiene.ran":
            m.hygiene_runs.labels(result=str(event.get("outcome", "unknown"))).inc()
            self.events.notice(session, f"hygiene: {event.get('reason', '')} → {event.get('outcome', '')}, "
                                        f"{event.get('messages_before')} → {event.get('messages_after')} messages")
        elif name == "agent.built":
            m.agent_cache.labels(event="restored" if event.get("restored") else "built").inc()
        elif name in ("turn.failed", "turn.lock_busy"):
            m.turn_errors.labels(kind=str(event.get("error") or name.split(".")[1])).inc()
        elif name == "admin.config_changed":
            who = str(event.get("who", ""))
            m.config_changes.labels(source="api" if who.startswith("token:") else who or "unknown").inc()
            self.events.notice(None, f"config {event.get('setting')}: {event.get('old')!r} → {event.get('new')!r} ({who})")
        if name == "agent.evicted":
            m.agent_cache.labels(event="evicted").inc()
        if name in ERROR_EVENTS:
            detail = _detail(event)
            self.events.error(session, ERROR_EVENTS[name] + (f" ({detail})" if detail else ""))
        elif name in NOTICE_EVENTS:
            self.events.notice(session, NOTICE_EVENTS[name])


def install_log_tap(tap: LogTap) -> Callable[[], None]:
    """Insert `tap` into the structlog pipeline before the renderer; returns the function that removes it.

    Call after `configure_logging` (a later `configure_logging` drops it).
    """
    processors = list(structlog.get_config()["processors"])
    position = max(len(processors) - 1, 0)
    processors.insert(position, tap)
    structlog.configure(processors=processors)

    def remove() -> None:
        current = [p for p in structlog.get_config()["processors"] if p is not tap]
        structlog.configure(processors=current)

    return remove


__all__ = ["ERROR_EVENTS", "NOTICE_EVENTS", "LogTap", "Recorder", "install_log_tap"]
