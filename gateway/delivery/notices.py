"""Progress notices: compression status events shown in the chat (docs/design.md §2.4).

Owns the notice texts and `NoticeBoard`, which turns `CompressionEvent`s into
one chat message edited from "compressing context…" to "context compressed:
182,000 → 41,000 tokens" (only with `compression.progress_notices`), and
blocked/aborted warnings sent once per session whatever that switch says.
Knows nothing of platforms: it speaks through a `NoticeChannel`.
"""
from __future__ import annotations

from typing import Protocol

from agent.context.engine import CompressionEvent

STARTED_TEXT = "compressing context…"
BLOCKED_TEXT = (
    "automatic context compression is paused because recent compressions did not help; "
    "send /compress to force one, or /new to start over"
)
ABORTED_TEXT = "context compression failed, so this session is frozen at its size; fix the summary model and /compress, or start a new session with /new"


def finished_text(event: CompressionEvent) -> str:
    return f"context compressed: {event.tokens_before:,} → {event.tokens_after:,} tokens"


class NoticeChannel(Protocol):
    """Sends and edits one notice message in the turn's chat."""

    async def send_notice(self, text: str) -> object: ...

    async def edit_notice(self, handle: object, text: str) -> None: ...


class NoticeBoard:
    """Per-turn sink for compression events.

    Args:
        channel: where notices go.
        progress: show start/finish notices.
        warned: the session's warnings already given ("blocked", "aborted"), a JSON-able
            list kept in the agent state; updated here so each is shown once.
    """

    def __init__(self, channel: NoticeChannel, *, progress: bool, warned: list[str]) -> None:
        self._channel = channel
        self._progress = progress
        self._warned = warned
        self._handle: object | None = None
        self.events: list[CompressionEvent] = []

    async def __call__(self, event: CompressionEvent) -> None:
        self.events.append(event)
        if event.kind == "started" and self._progress:
            self._handle = await self._channel.send_notice(STARTED_TEXT)
        elif event.kind == "finished":
            # A successful compression re-arms the warnings for a later block.
            self._warned.clear()
            if self._progress:
                await self._show(finished_text(event))
        elif event.kind in ("blocked", "aborted"):
            if event.kind not in self._warned:
                self._warned.append(event.kind)
                await self._show(BLOCKED_TEXT if event.kind == "blocked" else ABORTED_TEXT)
            elif self._handle is not None:
                await self._channel.edit_notice(self._handle, "context compression skipped")
                self._handle = None
        elif event.kind == "skipped" and self._handle is not None:
            await self._channel.edit_notice(self._handle, "context compression skipped")
            self._handle = None

    async def _show(self, text: str) -> None:
        if self._handle is not None:
            await self._channel.edit_notice(self._handle, text)
            self._handle = None
        else:
            await self._channel.send_notice(text)


__all__ = ["ABORTED_TEXT", "BLOCKED_TEXT", "STARTED_TEXT", "NoticeBoard", "NoticeChannel", "finished_text"]
