"""Operating Chorus: the admin API, the dashboard, live tuning and config reload.

Public API: `build_admin_app` (the aiohttp application), `AdminBackend` and its
values, `GatewayBackend` (over a running gateway), `EventLog` (recent
compressions, notices, errors), `LiveEngine`/`live_engine_factory` (live
tuning), `LogTap`/`Recorder` (metrics and events
from the gateway), and `Operations`, which joins them for `chorus run`.
"""
from __future__ import annotations

from gateway.admin.app import NO_TOKEN_TEXT, RUNTIME_NOTE, build_admin_app, token_fingerprint
from gateway.admin.backend import (
    AdminBackend,
    CompressOutcome,
    SessionBusy,
    SessionDetail,
    SessionNotFound,
    SessionView,
)
from gateway.admin.events import AdminEvent, EventLog
from gateway.admin.gateway_backend import GatewayBackend
from gateway.admin.tap import LogTap, Recorder, install_log_tap
from gateway.admin.tuning import LiveEngine, live_engine_factory
from gateway.admin.wiring import Operations, serve_admin

__all__ = [
    "NO_TOKEN_TEXT",
    "RUNTIME_NOTE",
    "AdminBackend",
    "AdminEvent",
    "CompressOutcome",
    "EventLog",
    "GatewayBackend",
    "LiveEngine",
    "LogTap",
    "Operations",
    "Recorder",
    "SessionBusy",
    "SessionDetail",
    "SessionNotFound",
    "SessionView",
    "build_admin_app",
    "install_log_tap",
    "live_engine_factory",
    "serve_admin",
    "token_fingerprint",
]
