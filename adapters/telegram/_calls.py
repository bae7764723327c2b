"""Calling the Bot API through PTB: honouring `retry_after`, translating errors, keeping the token out.

Owns `Caller` (one configured way to call), `with_retry_after`, `translate` and `Redactor`. A 429 is waited out and
retried a bounded number of times; a wait above the cap (or the last attempt)
surfaces as `AdapterError(retry_after=...)` so the caller can decide. Every
other PTB error becomes an `AdapterError` carrying the HTTP-like status, with
the token scrubbed from its text (PTB puts it in some messages).
"""
from __future__ import annotations

import datetime as dtm
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import structlog
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.warnings import PTBDeprecationWarning

from adapters.base import AdapterError

T = TypeVar("T")
PLATFORM = "telegram"
# The Bot API reports these only as description text on a 400; there is no code to match.
_NOT_MODIFIED = "message is not modified"

log = structlog.get_logger(__name__)
# PTB's own RetryAfter constructor reads `retry_after` and warns about its int -> timedelta
# migration on every 429; we read both forms (retry_after_seconds), so the warning is noise.
warnings.filterwarnings("ignore", message=r".*`retry_after` will be of type", category=PTBDeprecationWarning)


class Redactor:
    """Removes the bot token (and its secret half) from any text before it is logged or raised."""

    def __init__(self, token: str) -> None:
        secret = token.partition(":")[2]
        self._needles = [needle for needle in (token, secret) if len(needle) >= 6]

    def __call__(self, text: str) -> str:
        for needle in self._needles:
            text = text.replace(needle, "<token>")
        return text


def retry_after_seconds(exc: RetryAfter) -> float:
    """The wait Telegram asked for, in seconds, whatever PTB's int/timedelta mode."""
    value = exc.retry_after
    return value.total_seconds() if isinstance(value, dtm.timedelta) else float(value)


def is_not_modified(exc: BadRequest) -> bool:
    """An edit to the text the message already has: success, not an error."""
    return _NOT_MODIFIED in exc.message.lower()


async def with_retry_after(
    op: Callable[[], Awaitable[T]],
    *,
    what: str,
    attempts: int,
    max_wait: float,
    sleep: Callable[[float], Awaitable[None]],
) -> T:
    """Run `op`, waiting out 429 answers.

    Args:
        op: one Bot API call (called again on each attempt).
        what: the method name, for logs and errors.
        attempts: total tries, at least 1.
        max_wait: the longest single wait accepted; a longer one is surfaced at once.
        sleep: the (injected) sleep.

    Raises:
        AdapterError: with `retry_after` when the budget or the cap is exceeded.
        TelegramError: any other PTB error, untranslated (the caller decides).
    """
    for attempt in range(1, attempts + 1):
        try:
            return await op()
        except RetryAfter as exc:
            wait = retry_after_seconds(exc)
            if wait > max_wait or attempt >= attempts:
                raise AdapterError(
                    f"Telegram rate limit on {what}: retry after {wait:g} s (gave up after {attempt} attempt(s))",
                    platform=PLATFORM,
                    retry_after=wait,
                    status=429,
                ) from None
            log.info("telegram.retry_after", method=what, wait_seconds=wait, attempt=attempt)
            await sleep(wait)
    raise ValueError(f"attempts must be at least 1, got {attempts}")


def translate(exc: TelegramError, *, what: str, redact: Redactor, token_setting: str) -> AdapterError:
    """A PTB error as an `AdapterError` with a status and a fix where there is one."""
    detail = redact(exc.message)
    status: int | None
    if isinstance(exc, InvalidToken):
        status, detail = 401, f"401 Unauthorized: check {token_setting}"
    elif isinstance(exc, Forbidden):
        status, detail = 403, f"403 Forbidden: {detail} (the bot was blocked, removed, or lacks rights)"
    elif isinstance(exc, ChatMigrated):
        status, detail = 400, f"the group became supergroup {exc.new_chat_id}: use that chat id"
    elif isinstance(exc, BadRequest):
        status = 400
    elif isinstance(exc, Conflict):
        status, detail = 409, f"409 Conflict: {detail} (another poller or a webhook uses this token)"
    elif isinstance(exc, TimedOut):
        status, detail = None, f"timed out: {detail}"
    elif isinstance(exc, NetworkError):
        status, detail = None, f"network error: {detail}"
    else:
        status = None
    return AdapterError(f"Telegram {what} failed: {detail}", platform=PLATFORM, status=status)


@dataclass(frozen=True, slots=True)
class Caller:
    """How every Bot API call is made: 429s waited out within bounds, other errors translated."""

    redact: Redactor
    token_setting: str
    attempts: int
    max_wait: float
    sleep: Callable[[float], Awaitable[None]]

    async def __call__(
        self, what: str, op: Callable[[], Awaitable[T]], *, passthrough: tuple[type[TelegramError], ...] = ()
    ) -> T:
        """Run `op`; PTB errors become `AdapterError` except the `passthrough` types, raised as they are."""
        try:
            return await with_retry_after(op, what=what, attempts=self.attempts, max_wait=self.max_wait, sleep=self.sleep)
        except passthrough:
            raise
        except TelegramError as exc:
            raise self.translate(exc, what) from None

    def translate(self, exc: TelegramError, what: str) -> AdapterError:
        return translate(exc, what=what, redact=self.redact, token_setting=self.token_setting)
