"""Logging: secrets redacted, the level applied at rendering, metrics fed whatever the level."""
from __future__ import annotations

import io
import logging

import pytest
import structlog

from gateway.admin.events import EventLog
from gateway.admin.tap import EventObserver, LogTap, install_log_tap
from gateway.ops.events import EventBus, MessageAccepted, TurnFailed
from gateway.ops.logs import EarlyGate, configure_logging, kept
from gateway.ops.metrics import Metrics


def test_quiet_logs_still_feed_the_metrics() -> None:
    """At level error, info lines are not printed; metrics come from typed events, so they still count."""
    out = io.StringIO()
    configure_logging(level="error", fmt="json", stream=out)
    metrics, events, bus = Metrics(), EventLog(), EventBus()
    bus.subscribe(EventObserver(events, metrics))
    remove = install_log_tap(LogTap(events))
    try:
        log = structlog.get_logger("test")
        log.info("intake.accepted", platform="web", verdict="answer")
        bus.publish(MessageAccepted("web", "respond"))
        log.error("turn.failed", error="Boom")
        bus.publish(TurnFailed("web", "agent:default:web:dm:1", "Boom"))
    finally:
        remove()
    printed = out.getvalue()
    assert "intake.accepted" not in printed and "turn.failed" in printed
    assert metrics.registry.get_sample_value("chorus_messages_in_total", {"platform": "web"}) == 1
    assert metrics.registry.get_sample_value("chorus_turn_errors_total", {"kind": "Boom"}) == 1
    assert [e.text for e in events.recent()][-1].startswith("turn failed")


def test_a_log_line_alone_counts_no_metric() -> None:
    """The log tap lists warnings and errors; it never counts a metric."""
    configure_logging(level="info", fmt="json", stream=io.StringIO())
    metrics = Metrics()
    remove = install_log_tap(LogTap(EventLog()))
    try:
        structlog.get_logger("test").info("intake.accepted", platform="web", verdict="answer")
    finally:
        remove()
    assert metrics.registry.get_sample_value("chorus_messages_in_total", {"platform": "web"}) is None


def test_secrets_are_redacted_and_httpx_urls_not_logged() -> None:
    """Token-named fields and sk-… values never reach the output; httpx request lines are silenced."""
    out = io.StringIO()
    configure_logging(level="info", fmt="json", stream=out)
    structlog.get_logger("test").info("model.called", api_key="sk-abcdefghijkl", note="key sk-zyxwvutsrqpo")
    printed = out.getvalue()
    assert "abcdefghijkl" not in printed and "zyxwvutsrqpo" not in printed
    assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING


def test_quiet_events_drop_first_unless_the_tap_lists_them() -> None:
    """At level warning an info line is dropped by the first processor, except one the dashboard tap lists."""
    out = io.StringIO()
    configure_logging(level="warning", fmt="json", stream=out)
    gate = structlog.get_config()["processors"][0]
    assert isinstance(gate, EarlyGate)
    with pytest.raises(structlog.DropEvent):
        gate(None, "info", {"event": "intake.accepted"})
    assert gate(None, "warning", {"event": "x"}) == {"event": "x"}
    events = EventLog()
    remove = install_log_tap(LogTap(events))
    try:
        log = structlog.get_logger("test")
        log.info("intake.accepted", platform="web")
        log.info("agent.evicted", session_key="agent:default:web:dm:1")  # an info line the dashboard lists
    finally:
        remove()
    assert out.getvalue() == ""
    assert [e.text for e in events.recent()] == ["agent evicted from the shared cache"]


def test_kept_says_whether_the_pipeline_would_keep_an_event() -> None:
    """`kept` follows the level, a tap's listed names, and keeps everything without our pipeline (a capture)."""
    configure_logging(level="warning", stream=io.StringIO())
    assert not kept("turn.finished") and kept("turn.finished", logging.WARNING)
    remove = install_log_tap(LogTap(EventLog()))
    try:
        assert kept("agent.evicted") and not kept("turn.finished")  # the dashboard lists the first, an info line
    finally:
        remove()
    configure_logging(level="info", stream=io.StringIO())
    assert kept("turn.finished")
    with structlog.testing.capture_logs() as captured:
        assert kept("turn.finished")
        structlog.get_logger("test").info("turn.finished")
    assert [entry["event"] for entry in captured] == ["turn.finished"]
