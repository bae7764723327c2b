"""The event ring buffer and the audit line of a runtime change."""
from __future__ import annotations

import itertools

import structlog

from agent.context.engine import CompressionResult
from gateway.admin import EventLog, token_fingerprint
from gateway.config import ChorusConfig
from gateway.ops.live_config import LiveConfig


def test_event_log_keeps_the_newest_entries_and_filters_by_kind_and_session() -> None:
    """Past capacity the oldest entries fall off; recent() filters and keeps time order."""
    ticks = itertools.count(100.0)
    log = EventLog(capacity=3, clock=lambda: next(ticks))
    log.notice("s1", "first")
    log.compression("s1", CompressionResult("compressed", "manual", (), 900, 200, summary_kind="llm"), messages_before=40)
    log.error("s2", "boom")
    log.notice("s2", "last")
    assert [(e.seq, e.kind, e.session) for e in log.recent()] == [(2, "compression", "s1"), (3, "error", "s2"), (4, "notice", "s2")]
    assert [e.text for e in log.recent(session="s2")] == ["boom", "last"]
    (only,) = log.recent(kind="compression")
    assert (only.tokens_before, only.tokens_after, only.messages_before, only.summary_kind) == (900, 200, 40, "llm")
    assert (log.last_activity("s1"), log.last_activity("s2"), log.last_activity("s3")) == (101.0, 103.0, None)


def test_a_runtime_change_logs_one_audit_line_with_the_token_fingerprint() -> None:
    """admin.config_changed names the setting, old, new and who (a fingerprint, never the token)."""
    secret = "s3cret-admin-token"
    live = LiveConfig(ChorusConfig())
    with structlog.testing.capture_logs() as lines:
        live.update({"compression.enabled": False}, who=token_fingerprint(secret))
    audit = [line for line in lines if line["event"] == "admin.config_changed"]
    assert audit == [{"event": "admin.config_changed", "setting": "compression.enabled", "old": True, "new": False,
                      "who": token_fingerprint(secret), "log_level": "info"}]
    assert secret not in repr(lines) and token_fingerprint(secret).startswith("token:")
