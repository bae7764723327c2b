"""What the admin API needs from a running gateway: the `AdminBackend` contract and the values it returns.

Owns `AdminBackend` (four methods), `SessionView`, `SessionDetail`,
`CompressOutcome` and `SessionNotFound`. The real implementation over the
gateway's live agents and session store is `gateway_backend.GatewayBackend`;
tests may build small ones from real parts. Knows nothing of HTTP.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal, Protocol

from gateway.ops.health import Readiness

TokenSource = Literal["reported", "estimate", "unknown"]


class SessionNotFound(LookupError):
    """No session with that key (the message names it)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"no session {key!r}; GET /api/sessions lists the keys")
        self.key = key


class SessionBusy(Exception):
    """Control-flow signal: the session stayed locked by a running turn (try again shortly)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"session {key!r} is busy with a turn; try again in a moment")
        self.key = key


@dataclass(frozen=True, slots=True)
class SessionView:
    """One session as the operator sees it in the list.

    `tokens` is the last real `prompt_tokens` the provider reported, else a
    character estimate of the history (`tokens_source` says which), and
    `fill` is `tokens / context_length`. `live` is False for a session this
    process holds no agent for (its engine figures are then unknown).
    """

    key: str
    platform: str
    chat: str
    messages: int
    tokens: int | None
    tokens_source: TokenSource
    context_length: int
    threshold: int  # the compression threshold in tokens
    hygiene_threshold: int  # the fixed 85% safety net in tokens
    compressions: int
    last_activity: float | None  # epoch seconds
    live: bool
    busy: bool = False
    queued: int = 0
    blocked: bool = False  # automatic compression paused by anti-thrash
    prompt_source: str = ""  # default | config | file | chat override ("" unknown)
    model: str = ""  # the model the chat uses now
    session_tokens: int = 0  # tokens this session used so far (prompt + completion)
    chat_tokens: int = 0  # tokens the chat used in all its sessions

    @property
    def fill(self) -> float | None:
        if self.tokens is None or self.context_length <= 0:
            return None
        return self.tokens / self.context_length

    def to_json(self) -> dict[str, object]:
        body = asdict(self)
        fill = self.fill
        body["fill"] = round(fill, 4) if fill is not None else None
        body["fill_percent"] = round(fill * 100, 1) if fill is not None else None
        body["threshold_percent"] = round(100 * self.threshold / self.context_length, 1) if self.context_length else None
        return body


@dataclass(frozen=True, slots=True)
class SessionDetail:
    """One session inspected: the list figures plus the text of its last summary."""

    view: SessionView
    session_id: str
    last_summary: str | None
    archived_messages: int = 0


@dataclass(frozen=True, slots=True)
class CompressOutcome:
    """What an operator-triggered compression did."""

    key: str
    outcome: str  # compressed | skipped | blocked | aborted
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    summary_kind: str
    reason: str = ""
    elapsed_ms: float = 0.0

    def to_json(self) -> dict[str, object]:
        return asdict(self)


class AdminBackend(Protocol):
    """The running gateway as the admin API sees it."""

    async def sessions(self) -> list[SessionView]:
        """Every session worth showing (active in the store; live ones with engine figures)."""
        ...

    async def session(self, key: str) -> SessionDetail:
        """One session by key.

        Raises:
            SessionNotFound: no active session has that key.
        """
        ...

    async def compress(self, key: str) -> CompressOutcome:
        """Force a compression of the session now, under its session lock, and persist it.

        Raises:
            SessionNotFound: no active session has that key.
            SessionBusy: a turn held the session lock for too long.
        """
        ...

    async def readiness(self) -> Readiness:
        """What `/readyz` reports."""
        ...


__all__ = ["AdminBackend", "CompressOutcome", "SessionBusy", "SessionDetail", "SessionNotFound", "SessionView", "TokenSource"]
