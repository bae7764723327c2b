"""Whether the session store takes writes: a full disk (or one that fails) is told from other errors and watched.

Owns `storage_failure` (the real error behind a failed write, when it is one the
disk causes: SQLite's "database or disk is full" and I/O errors, PostgreSQL's
disk_full class, an `OSError` with ENOSPC/EDQUOT/EIO) and `StoreWrites` (the
state `/readyz`, the metrics and the log read: failing since when, with which
error; one log line per interval while it lasts, one when writes work again),
and `retry_delay` (the backoff between re-runs of a turn whose store write
failed). Knows nothing of turns or platforms.
"""
from __future__ import annotations

import errno
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

log = structlog.get_logger(__name__)

LOG_INTERVAL = 30.0  # while writes keep failing, one log line per this many seconds
RETRY_INITIAL = 1.0
RETRY_MAX = 30.0
_SQLITE_DISK_CODES = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN})
_OS_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})
_PG_DISK_STATES = frozenset({"53100", "58030"})  # disk_full, io_error


def _is_disk_error(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code is not None and (code & 0xFF) in _SQLITE_DISK_CODES
    if isinstance(exc, OSError):
        return exc.errno in _OS_DISK_ERRNOS
    return getattr(exc, "sqlstate", None) in _PG_DISK_STATES


def storage_failure(exc: BaseException) -> BaseException | None:
    """The disk error that made `exc` happen (itself, or a cause it was raised from), else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if _is_disk_error(current):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def retry_delay(attempt: int) -> float:
    """Seconds before re-run `attempt` (0-based): 1, 2, 4, … up to `RETRY_MAX`."""
    return float(min(RETRY_MAX, RETRY_INITIAL * 2 ** min(attempt, 16)))


@dataclass(frozen=True, slots=True)
class WriteFailure:
    error: str  # the real error's text (SQLite's "database or disk is full"): no user input is in it
    since: float  # epoch seconds of the first failure of this spell


class StoreWrites:
    """The session store's write health, as turns find it.

    Args:
        location: the store, as named to the operator (the SQLite file, or the database).
        clock: seconds since the epoch (injected by tests).
    """

    def __init__(self, location: str, *, clock: Callable[[], float] = time.time) -> None:
        self.location = location
        self._clock = clock
        self.failing: WriteFailure | None = None
        self.failures = 0  # all time: the metric counts these
        self._logged_at: float | None = None

    @property
    def ok(self) -> bool:
        return self.failing is None

    def failed(self, error: BaseException) -> None:
        """A write failed for `error` (the disk's, see `storage_failure`)."""
        now = self._clock()
        text = f"{type(error).__name__}: {error}"[:300]
        self.failures += 1
        if self.failing is None:
            self.failing = WriteFailure(text, now)
        if self._logged_at is None or now - self._logged_at >= LOG_INTERVAL:
            self._logged_at = now
            log.error("store.write_failed", store=self.location, error=text, failures=self.failures,
                      failing_seconds=round(now - self.failing.since, 1))

    def succeeded(self) -> None:
        """A write went through: the spell (if any) is over."""
        if self.failing is not None:
            log.warning("store.writes_back", store=self.location,
                        failing_seconds=round(self._clock() - self.failing.since, 1))
        self.failing = None
        self._logged_at = None

    def reason(self) -> str:
        """What `/readyz` says while writes fail (empty when they work)."""
        if self.failing is None:
            return ""
        return f"session store writes fail ({self.failing.error}): check the disk of {self.location}"


__all__ = ["LOG_INTERVAL", "StoreWrites", "WriteFailure", "retry_delay", "storage_failure"]
