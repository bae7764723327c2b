"""`SpendLimiter` in this process: one machine, no Redis.

Owns `MemorySpendLimiter`. Message windows are message ids by time (lost on
a restart: a minute). The day's counters are written to a JSON file under
home (atomically: a temporary file renamed), and read back
by `start()`, so a restart does not reset a day. Writes are gathered: at most one a
second (`SAVE_DELAY`), and one at `stop()`. Knows nothing of chats.
"""
from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path

import structlog

from gateway.limits.base import (
    DAY_KEEP_SECONDS,
    WINDOW_SECONDS,
    Charge,
    DaySpend,
    Hit,
    Rule,
    day_of,
    model_field,
    next_midnight,
)

log = structlog.get_logger(__name__)

_MAPS = ("tokens", "cost", "hits", "unpriced")
SAVE_DELAY = 1.0
"""Seconds a change waits to be written with the ones after it: a crash loses at most this much spend."""


class MemorySpendLimiter:
    """Counts in this process; `path` (None: nothing kept) holds the day's counters across restarts."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._days: dict[str, dict[str, dict[str, float]]] = {}
        self._windows: dict[str, dict[str, float]] = {}  # field -> message id -> time, oldest first
        self._said: dict[str, float] = {}  # hit field -> until when the chat was told
        self._writing = asyncio.Lock()
        self._saving: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Read the kept counters (a missing or unreadable file starts empty, logged)."""
        if self._path is None or not self._path.exists():
            return
        try:
            raw = json.loads(await asyncio.to_thread(self._path.read_text, encoding="utf-8"))
            self._days = {
                str(day): {name: {str(k): float(v) for k, v in dict(maps.get(name, {})).items()} for name in _MAPS}
                for day, maps in dict(raw).items() if isinstance(maps, dict)
            }
        except (OSError, ValueError, TypeError) as exc:  # unreadable, not JSON, or not the shape written here
            log.warning("limits.state_unreadable", path=str(self._path), error=type(exc).__name__)

    async def stop(self) -> None:
        """Write what is not written yet (a pending delayed write is replaced by this one)."""
        saving, self._saving = self._saving, None
        if saving is not None:
            saving.cancel()
            await asyncio.gather(saving, return_exceptions=True)
        await self._write()

    def _day(self, now: float) -> dict[str, dict[str, float]]:
        day = day_of(now)
        found = self._days.get(day)
        if found is None:
            found = self._days[day] = {name: {} for name in _MAPS}
            oldest = day_of(now - DAY_KEEP_SECONDS)
            for gone in [d for d in self._days if d < oldest]:
                del self._days[gone]
        return found

    def _window(self, field: str, now: float) -> dict[str, float]:
        window = self._windows.setdefault(field, {})
        for message_id, at in list(window.items()):
            if at > now - WINDOW_SECONDS:
                break
            del window[message_id]
        return window

    async def admit(self, rules: Sequence[Rule], *, now: float, message_id: str) -> Hit | None:
        counters = self._day(now)
        for rule in rules:
            if rule.metric == "messages":
                window = self._window(rule.field, now)
                if len(window) >= rule.limit:
                    return await self._hit(rule, next(iter(window.values())) + WINDOW_SECONDS, now)
            else:
                used = counters["cost" if rule.metric == "cost" else "tokens"].get(rule.field, 0.0)
                if used >= rule.limit:
                    return await self._hit(rule, next_midnight(now), now)
        for rule in rules:
            if rule.metric == "messages":
                window = self._window(rule.field, now)
                window.pop(message_id, None)  # the same message again (a re-run): one place, moved to now
                window[message_id] = now
        return None

    async def _hit(self, rule: Rule, resets_at: float, now: float) -> Hit:
        hits = self._day(now)["hits"]
        hits[rule.hit_field] = hits.get(rule.hit_field, 0) + 1
        first = self._said.get(rule.hit_field, 0.0) <= now
        if first:
            self._said[rule.hit_field] = resets_at
        self._save()
        return Hit(rule, resets_at, first)

    async def spend(self, charge: Charge, *, now: float) -> None:
        counters = self._day(now)
        fields = (*charge.fields, model_field(charge.model))
        for name in fields:
            counters["tokens"][name] = counters["tokens"].get(name, 0) + charge.tokens
            if charge.cost is not None:
                counters["cost"][name] = counters["cost"].get(name, 0.0) + charge.cost
        if charge.cost is None:
            counters["unpriced"][charge.model] = counters["unpriced"].get(charge.model, 0) + charge.tokens
        self._save()

    async def day(self, *, now: float) -> DaySpend:
        counters = self._day(now)
        return DaySpend(
            day=day_of(now), tokens={k: int(v) for k, v in counters["tokens"].items()}, cost=dict(counters["cost"]),
            hits={k: int(v) for k, v in counters["hits"].items()},
            unpriced={k: int(v) for k, v in counters["unpriced"].items()},
        )

    async def in_window(self, fields: Sequence[str], *, now: float) -> list[int]:
        return [len(self._window(name, now)) for name in fields]

    async def reset(self, fields: Sequence[str], *, now: float) -> None:
        counters = self._day(now)
        for name in fields:
            for values in counters.values():
                for key in [k for k in values if k == name or k.startswith(f"{name}/")]:
                    del values[key]
            self._windows.pop(name, None)
            for said in [k for k in self._said if k.startswith(f"{name}/")]:
                del self._said[said]
        self._save()

    def _save(self) -> None:
        """Write the counters within `SAVE_DELAY` (one write for every change in between; `stop()` writes at once)."""
        if self._path is None or self._saving is not None:
            return
        self._saving = asyncio.get_running_loop().create_task(self._save_later())

    async def _save_later(self) -> None:
        try:
            await asyncio.sleep(SAVE_DELAY)
        finally:
            self._saving = None
        await self._write()

    async def _write(self) -> None:
        if self._path is None:
            return
        text = json.dumps(self._days, sort_keys=True)
        async with self._writing:
            try:
                await asyncio.to_thread(_write_atomically, self._path, text)
            except OSError as exc:
                log.warning("limits.state_unwritable", path=str(self._path), error=type(exc).__name__)


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


__all__ = ["MemorySpendLimiter"]
