"""Recent compressions, notices and errors: the in-memory ring buffer the admin API and dashboard read.

Owns `AdminEvent` and `EventLog`. The gateway appends (through the live
engine wrapper and the log tap); the admin API reads `recent(...)`. Bounded:
the oldest entries fall off, so a busy gateway never grows it. Texts are
short operator-facing lines, never message content or secrets. Per-process,
lost on restart (the logs are the durable record). Knows nothing of HTTP.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal, TypeAlias

from agent.context.engine import CompressionResult

EventKind: TypeAlias = Literal["compression", "notice", "error"]
DEFAULT_CAPACITY = 500
MAX_TEXT = 300


@dataclass(frozen=True, slots=True)
class AdminEvent:
    """One entry; compression fields are zero/empty for notices and errors."""

    seq: int
    kind: EventKind
    at: float  # epoch seconds
    session: str | None
    text: str = ""
    trigger: str = ""
    outcome: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0
    summary_kind: str = ""
    elapsed_ms: float = 0.0

    def to_json(self) -> dict[str, object]:
        return asdict(self)


class EventLog:
    """A ring buffer of `AdminEvent`s plus each session's last activity time.

    Args:
        capacity: entries kept (oldest dropped first).
        clock: epoch seconds (injected for tests).
    """

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY, clock: Callable[[], float] = time.time) -> None:
        if capacity < 1:
            raise ValueError(f"EventLog capacity must be at least 1, got {capacity}")
        self._events: deque[AdminEvent] = deque(maxlen=capacity)
        self._clock = clock
        self._seq = 0
        self._last_activity: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._events)

    def _append(self, **fields: object) -> AdminEvent:
        self._seq += 1
        event = AdminEvent(seq=self._seq, at=self._clock(), **fields)  # type: ignore[arg-type]
        self._events.append(event)
        if event.session is not None:
            self._last_activity[event.session] = event.at
        return event

    def compression(
        self, session: str | None, result: CompressionResult, *, messages_before: int | None = None
    ) -> AdminEvent:
        """Record one compression attempt (any outcome)."""
        text = result.reason[:MAX_TEXT] if result.reason else ""
        return self._append(
            kind="compression", session=session, text=text, trigger=result.trigger, outcome=result.outcome,
            tokens_before=result.tokens_before, tokens_after=result.tokens_after,
            messages_before=messages_before if messages_before is not None else len(result.messages),
            messages_after=len(result.messages), summary_kind=result.summary_kind,
            elapsed_ms=round(result.elapsed_ms, 1),
        )

    def notice(self, session: str | None, text: str) -> AdminEvent:
        return self._append(kind="notice", session=session, text=text[:MAX_TEXT])

    def error(self, session: str | None, text: str) -> AdminEvent:
        return self._append(kind="error", session=session, text=text[:MAX_TEXT])

    def touch(self, session: str) -> None:
        """Note activity on a session (a finished turn) without adding an entry."""
        self._last_activity[session] = self._clock()

    def last_activity(self, session: str) -> float | None:
        return self._last_activity.get(session)

    def recent(
        self, *, limit: int = 100, kind: EventKind | None = None, session: str | None = None
    ) -> list[AdminEvent]:
        """Newest last, at most `limit`, optionally one kind and/or one session."""
        chosen = [
            e for e in self._events
            if (kind is None or e.kind == kind) and (session is None or e.session == session)
        ]
        return chosen[-limit:] if limit > 0 else []


__all__ = ["DEFAULT_CAPACITY", "AdminEvent", "EventKind", "EventLog"]
