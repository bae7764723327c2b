"""Logging setup: structlog to stderr, console or JSON lines, with secrets redacted.

Owns `configure_logging`, the redaction processor and `bind_message_context`
(binds `platform`, `chat_id`, `session_key` at intake with
`bind_contextvars`). Every event is a dotted name with fields; a turn ends in
one canonical `turn.finished` line. No other module configures logging.
"""
from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, Literal

import structlog
from structlog.contextvars import bind_contextvars, clear_contextvars, merge_contextvars

SECRET_KEY_PATTERN = re.compile(r"token|key|secret|password|authorization|cookie", re.IGNORECASE)
# Counts and limits named like secrets are not secrets.
_NOT_SECRET = re.compile(r"tokens|_token_count|token_count|key_prefix|session_key|cache_key", re.IGNORECASE)
SECRET_VALUE_PATTERN = re.compile(
    r"\b(sk-[A-Za-z0-9_\-]{6,}|xox[abposr]-[A-Za-z0-9\-]{6,}|xapp-[A-Za-z0-9\-]{6,}|\d{6,}:[A-Za-z0-9_\-]{30,})"
)
REDACTED = "[redacted]"


def _mask(value: str) -> str:
    return SECRET_VALUE_PATTERN.sub(lambda m: m.group(0)[:3] + "…" + REDACTED, value)


def _redact_value(key: str, value: Any) -> Any:
    if SECRET_KEY_PATTERN.search(key) and not _NOT_SECRET.search(key) and value not in (None, "", 0):
        if not isinstance(value, (int, float, bool)):
            return REDACTED
    if isinstance(value, str):
        return _mask(value)
    if isinstance(value, Mapping):
        return {k: _redact_value(str(k), v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_value(key, v) for v in value]
    return value


def redact_secrets(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A structlog processor: values of secret-named keys become [redacted]; sk-… strings are masked."""
    for key in list(event_dict):
        event_dict[key] = _redact_value(key, event_dict[key])
    return event_dict


# The dashboard's log tap (gateway/admin/tap.py) lists a few info lines too, so the bound
# logger lets info through; `EarlyGate` then drops at once every quieter event no tap named.
_PIPELINE_FLOOR = logging.INFO
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING,
           "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL}


class LevelGate:
    """The renderer, behind the configured level: quieter logs never starve the metrics tap."""

    def __init__(self, renderer: Any, level: int) -> None:
        self.renderer = renderer
        self.level = level

    def __call__(self, logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> Any:
        if _LEVELS.get(method, logging.INFO) < self.level:
            raise structlog.DropEvent
        return self.renderer(logger, method, event_dict)


class EarlyGate:
    """The first processor: an event below the level, unless a tap wants its name, is dropped before any work.

    Two info lines per message would otherwise each be merged, timestamped
    and redacted only for `LevelGate` to drop them.
    """

    def __init__(self, level: int, wanted: frozenset[str] = frozenset()) -> None:
        self.level = level
        self.wanted = wanted

    def keeping(self, names: frozenset[str]) -> EarlyGate:
        """This gate, also letting `names` through (for a tap that lists them)."""
        return EarlyGate(self.level, self.wanted | names)

    def keeps(self, event: object, level: int) -> bool:
        """Whether an event of this name and level goes on (the one rule, for `__call__` and `kept`)."""
        return level >= self.level or event in self.wanted

    def __call__(self, _logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if not self.keeps(event_dict.get("event"), _LEVELS.get(method, logging.INFO)):
            raise structlog.DropEvent
        return event_dict


def kept(event: str, level: int = logging.INFO) -> bool:
    """Whether the configured pipeline keeps an event of this name and level (its `EarlyGate` would not drop it).

    For the lines written on every message: skipping the call skips building its fields, the lazy logger's
    bind and the processor call that would drop it (~5 us a line). True when no `EarlyGate` leads the
    pipeline (a test's capture, structlog's defaults): then every event goes through as before.
    """
    processors = structlog.get_config()["processors"]
    gate = processors[0] if processors else None
    return gate.keeps(event, level) if isinstance(gate, EarlyGate) else True


class BadRequestLine(logging.Filter):
    """aiohttp logs a malformed request (a 20 KB URL, a broken header) as an error with a traceback that
    quotes the input; it becomes one warning line naming the error instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None:
            return True
        from aiohttp.http_exceptions import HttpProcessingError  # here: offline commands never load aiohttp

        if not isinstance(error, HttpProcessingError):
            return True
        remote = record.args[0] if isinstance(record.args, tuple) and record.args else None
        structlog.get_logger("aiohttp.server").warning(
            "http.bad_request", status=error.code, error=type(error).__name__, remote=str(remote)
        )
        return False


def _quiet_bad_requests() -> None:
    server = logging.getLogger("aiohttp.server")
    if not any(isinstance(existing, BadRequestLine) for existing in server.filters):
        server.addFilter(BadRequestLine())


def configure_logging(
    *, level: str = "info", fmt: Literal["console", "json"] = "console", stream: Any = None
) -> None:
    """Configure structlog once for the process (idempotent)."""
    numeric = logging.getLevelName(level.upper())
    level_number = numeric if isinstance(numeric, int) else logging.INFO
    # httpx logs request URLs at INFO, and Telegram's URLs carry the bot token.
    for noisy in ("httpx", "httpcore", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _quiet_bad_requests()
    out = stream or sys.stderr
    renderer: Any = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            EarlyGate(level_number),
            merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact_secrets,
            LevelGate(renderer, level_number),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(min(level_number, _PIPELINE_FLOOR)),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )


def bind_message_context(*, platform: str, chat_id: str, session_key: str | None = None) -> None:
    """Bind the fields every log line of this message's handling carries."""
    clear_contextvars()
    fields: dict[str, Any] = {"platform": platform, "chat_id": chat_id}
    if session_key is not None:
        fields["session_key"] = session_key
    bind_contextvars(**fields)


__all__ = ["REDACTED", "EarlyGate", "bind_message_context", "configure_logging", "kept", "redact_secrets"]
