"""Learned model windows: when a provider proves a window smaller than `context_length`.

Owns `LearnedWindow`, the `WindowStore` Protocol (where learned windows are
kept: `FileWindowStore` under home, `PostgresWindowStore` shared by replicas) and
`ModelWindows`, the process's view: the effective window of each configured
model (the configured `context_length`, lowered by what a provider stated or
an overflow proved) and which model answers now (the fallback chain sets it;
the compressor and hygiene read `active_window`). Knows nothing of HTTP or
platforms; one warning per learned window names the key to fix.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import structlog

log = structlog.get_logger(__name__)

WINDOWS_FILE = "model_windows.json"
# No window is assumed below this: the system prompt and one message need room.
MIN_WINDOW = 1024
# With no stated limit, the next guess is this share of what just overflowed.
ASSUMED_SHRINK = 0.75
# Overflowing at a window already learned: lower it by this factor.
TOKENIZER_MARGIN = 0.9


def window_key(model: str, base_url: str | None) -> str:
    """One model at one endpoint (the same name can mean different windows on two servers)."""
    return f"{model}@{(base_url or 'default').rstrip('/')}"


@dataclass(frozen=True, slots=True)
class LearnedWindow:
    tokens: int
    stated: bool  # the provider named the limit (else: assumed from a request that overflowed)
    learned_at: float


class WindowStore(Protocol):
    """Where learned windows survive restarts (shared by replicas once the store is shared)."""

    def load(self) -> dict[str, LearnedWindow]: ...

    def save(self, key: str, window: LearnedWindow) -> None: ...


class FileWindowStore:
    """`WindowStore` as a small JSON file (written atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, LearnedWindow]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("model.windows_unreadable", path=str(self.path), error=type(exc).__name__)
            return {}
        windows: dict[str, LearnedWindow] = {}
        if isinstance(raw, dict):
            for key, value in raw.items():
                if isinstance(value, dict) and isinstance(value.get("tokens"), int):
                    windows[str(key)] = LearnedWindow(
                        tokens=value["tokens"], stated=bool(value.get("stated")),
                        learned_at=float(value.get("learned_at", 0.0)),
                    )
        return windows

    def save(self, key: str, window: LearnedWindow) -> None:
        current = self.load()
        current[key] = window
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_suffix(".tmp")
        temp.write_text(json.dumps({k: asdict(v) for k, v in current.items()}, indent=1), encoding="utf-8")
        os.replace(temp, self.path)


class MemoryWindowStore:
    """`WindowStore` that forgets on restart (tests, no home)."""

    def __init__(self) -> None:
        self._windows: dict[str, LearnedWindow] = {}

    def load(self) -> dict[str, LearnedWindow]:
        return dict(self._windows)

    def save(self, key: str, window: LearnedWindow) -> None:
        self._windows[key] = window


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """A configured model: its name, endpoint and configured window."""

    name: str
    base_url: str | None
    context_length: int

    @property
    def key(self) -> str:
        return window_key(self.name, self.base_url)


class WindowSource(Protocol):
    """What the compressor reads: the window of the model answering now."""

    def active_window(self) -> int: ...


class ModelWindows:
    """Effective windows of the configured models, and which one is active.

    Args:
        main: the main model (active until a fallback answers).
        store: where learned windows are kept; loaded on first use.
        now: the clock.
    """

    def __init__(self, main: ModelEndpoint, store: WindowStore, *, now: Callable[[], float] = time.time) -> None:
        self._active = main
        self.main = main
        self._store = store
        self._now = now
        self._learned: dict[str, LearnedWindow] | None = None
        self._active_window: int | None = None  # the active model's window, until a window is learned or it changes

    def _known(self) -> dict[str, LearnedWindow]:
        if self._learned is None:
            self._learned = self._store.load()
        return self._learned

    def learned(self) -> Mapping[str, LearnedWindow]:
        return dict(self._known())

    def window(self, endpoint: ModelEndpoint) -> int:
        learned = self._known().get(endpoint.key)
        return min(endpoint.context_length, learned.tokens) if learned else endpoint.context_length

    @property
    def active(self) -> ModelEndpoint:
        return self._active

    def set_active(self, endpoint: ModelEndpoint) -> None:
        self._active = endpoint
        self._active_window = None

    def active_window(self) -> int:
        # Read about four times a turn (thresholds, hygiene); it changes only in `set_active` and `learn`.
        window = self._active_window
        if window is None:
            window = self._active_window = self.window(self._active)
        return window

    def learn(self, endpoint: ModelEndpoint, *, stated: int | None, request_tokens: int | None) -> int:
        """Lower `endpoint`'s window after an overflow; returns the new window.

        A stated limit is taken as is; without one the window shrinks to a
        share of the request that overflowed (or of the current window).
        """
        current = self.window(endpoint)
        if stated is not None and (stated < current or endpoint.key not in self._known()):
            tokens = stated
        elif stated is not None:
            # Overflowing again at the stated window: the provider's tokenizer counts more than ours.
            tokens = int(current * TOKENIZER_MARGIN) if stated == current else current
        else:
            basis = min(current, request_tokens) if request_tokens else current
            tokens = int(basis * ASSUMED_SHRINK)
        tokens = max(MIN_WINDOW, tokens)
        if tokens >= current:
            return current
        window = LearnedWindow(tokens=tokens, stated=stated is not None, learned_at=self._now())
        self._known()[endpoint.key] = window
        self._active_window = None
        try:
            self._store.save(endpoint.key, window)
        except OSError as exc:
            log.warning("model.windows_unsaved", error=type(exc).__name__)
        log.warning(
            "model.window_lowered", model=endpoint.name, configured=endpoint.context_length, window=tokens,
            stated=stated is not None,
            fix=f"set model.context_length (or that fallback's context_length) to {tokens} or less",
        )
        return tokens


__all__ = [
    "FileWindowStore", "LearnedWindow", "MemoryWindowStore", "ModelEndpoint", "ModelWindows", "WindowSource",
    "WindowStore", "window_key",
]
