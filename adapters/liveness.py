"""`LivenessClock`: an adapter's record of its last successful receive, judged against a limit.

Shared by the adapters (Telegram's long poll, Discord's gateway heartbeat,
Slack's socket): each marks a success (`ok`) and, when something failed,
why (`failed`); `report` says whether the last success is recent enough.
A receive that hangs is covered by the same rule: nothing succeeds, so the
last success grows old. Clock injected; pure otherwise.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from adapters.base import Liveness


class LivenessClock:
    """The last success of one adapter's receiving.

    Args:
        limit: seconds without a success after which the adapter counts as down (its poll timeout plus a grace).
        clock: monotonic seconds.
    """

    def __init__(self, limit: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if limit <= 0:
            raise ValueError(f"liveness limit must be positive, got {limit}")
        self.limit = limit
        self._clock = clock
        self._started = clock()
        self._last_ok: float | None = None
        self._problem = ""

    def ok(self) -> None:
        self._last_ok = self._clock()
        self._problem = ""

    def failed(self, problem: str) -> None:
        """Something failed (`problem` in words safe to log); down only once the last success is too old."""
        self._problem = problem

    def restart(self) -> None:
        """Started again: judged from now (the time it was stopped never counts against it)."""
        self._started = self._clock()
        self._last_ok = None
        self._problem = ""

    def report(self) -> Liveness:
        now = self._clock()
        since = self._last_ok if self._last_ok is not None else self._started
        ago = now - since
        alive = ago <= self.limit
        detail = ""
        if not alive:
            what = self._problem or "no answer"
            detail = f"nothing received for {ago:.0f} s (limit {self.limit:.0f} s): {what}"
        return Liveness(alive=alive, last_ok_seconds_ago=None if self._last_ok is None else ago, detail=detail)


__all__ = ["LivenessClock"]
