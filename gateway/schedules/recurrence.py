"""When a job fires: cron expressions (with a time zone) and one-shot `at` times, as epoch seconds.

Owns the one parser of a job's timing (`check_when`, `When.parse`) and the occurrence arithmetic the runner,
the tool and the listings share. Cron expressions are read by `cronsim` (five fields, DST-aware with a
`zoneinfo` zone); time zones come from the standard library. Knows nothing of chats or stores.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

GAP_SAMPLES = 64  # consecutive firings compared to find a cron's shortest gap (`min_interval_minutes`)


class WhenError(ValueError):
    """A job's timing cannot be read; the message names the key (`cron`, `at`, `timezone`) and the fix."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise WhenError(f"timezone {name!r} is not a known time zone; write an IANA name such as "
                        "UTC or Europe/Berlin") from None


def _cron(expression: str, start: datetime) -> CronSim:
    try:
        return CronSim(expression, start)
    except CronSimError as exc:
        raise WhenError(f"cron {expression!r} is not a valid cron expression ({exc}); write five fields, "
                        "minute hour day month weekday, e.g. \"0 9 * * 1-5\"") from None


def _at(text: str, tz: ZoneInfo) -> float:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise WhenError(f"at {text!r} is not an ISO time; write e.g. 2026-12-24T09:00 (in the job's timezone) "
                        "or 2026-12-24T09:00+01:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    return moment.timestamp()


@dataclass(frozen=True, slots=True)
class When:
    """A cron expression in a time zone, or one moment (`at`, epoch seconds)."""

    cron: str | None
    at: float | None
    timezone: str = "UTC"

    @classmethod
    def parse(cls, *, cron: str | None, at: str | None, timezone: str = "UTC") -> When:
        """Raises `WhenError` naming the key at fault."""
        tz = zone(timezone)
        if (cron is None) == (at is None):
            raise WhenError("give exactly one of cron (a repeating job) or at (one ISO time)")
        if cron is not None:
            _cron(cron, datetime.now(tz))
            return cls(cron=cron, at=None, timezone=timezone)
        assert at is not None
        return cls(cron=None, at=_at(at, tz), timezone=timezone)

    def describe(self) -> str:
        """What a listing shows: the cron and its zone, or the moment."""
        if self.cron is not None:
            return f"{self.cron} ({self.timezone})"
        assert self.at is not None
        return datetime.fromtimestamp(self.at, zone(self.timezone)).strftime("once at %Y-%m-%d %H:%M %Z")

    def after(self, moment: float) -> Iterator[float]:
        """The occurrences strictly after `moment`, in order."""
        if self.at is not None:
            if self.at > moment:
                yield self.at
            return
        assert self.cron is not None
        tz = zone(self.timezone)
        for fire in _cron(self.cron, datetime.fromtimestamp(moment, tz)):
            yield fire.timestamp()

    def next_after(self, moment: float) -> float | None:
        return next(self.after(moment), None)

    def between(self, start: float, end: float) -> Iterator[float]:
        """The occurrences in (start, end]."""
        for fire in self.after(start):
            if fire > end:
                return
            yield fire

    def shortest_gap_minutes(self, moment: float) -> float | None:
        """The shortest gap between consecutive firings from `moment` on (None: a one-shot job)."""
        if self.cron is None:
            return None
        fires = self.after(moment)
        previous = next(fires, None)
        shortest: float | None = None
        for _ in range(GAP_SAMPLES):
            fire = next(fires, None)
            if fire is None or previous is None:
                break
            gap = (fire - previous) / 60
            shortest = gap if shortest is None else min(shortest, gap)
            previous = fire
        return shortest


def check_when(*, cron: str | None, at: str | None, timezone: str) -> None:
    """Raise `WhenError` when the job's timing cannot be read (config validation)."""
    When.parse(cron=cron, at=at, timezone=timezone)


__all__ = ["GAP_SAMPLES", "When", "WhenError", "check_when", "zone"]
