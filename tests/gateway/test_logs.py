"""Logging: secrets redacted, the level applied at rendering, metrics fed whatever the level."""
from __future__ import annotations

import io
import logging

import structlog

from gateway.admin.events import EventLog
from gateway.admin.tap import LogTap, install_log_tap
from gateway.ops.logs import configure_logging
from gateway.ops.metrics import Metrics


def test_quiet_logs_still_feed_the_metrics() -> None:
    """At level error, info lines are not printed but still reach the metrics tap."""
    out = io.StringIO()
    configure_logging(level="error", fmt="json", stream=out)
    metrics = Metrics()
    remove = install_log_tap(LogTap(EventLog(), metrics))
    try:
        log = structlog.get_logger("test")
        log.info("intake.accepted", platform="web", verdict="answer")
        log.error("turn.failed", error="Boom")
    finally:
        remove()
    printed = out.getvalue()
    assert "intake.accepted" not in printed and "turn.failed" in printed
    assert metrics.registry.get_sample_value("chorus_messages_in_total", {"platform": "web"}) == 1


def test_secrets_are_redacted_and_httpx_urls_not_logged() -> None:
    """Token-named fields and sk-… values never reach the output; httpx request lines are silenced."""
    out = io.StringIO()
    configure_logging(level="info", fmt="json", stream=out)
    structlog.get_logger("test").info("model.called", api_key="sk-abcdefghijkl", note="key sk-zyxwvutsrqpo")
    printed = out.getvalue()
    assert "abcdefghijkl" not in printed and "zyxwvutsrqpo" not in printed
    assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING
