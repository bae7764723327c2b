"""Progress notices: compression status events shown in the chat (docs/design.md §2.4).

Owns `NoticeBoard`, which turns `CompressionEvent`s into
one chat message edited from "compressing context…" to "context compressed:
182,000 → 41,000 tokens" (only with `compression.progress_notices`), and
blocked/aborted warnings sent once per session whatever that switch says.
Knows nothing of platforms: it speaks through a `NoticeChannel`. Also owns
`agent_notice`, the agent's own short lines said in the chat's language.
"""
from __future__ import annotations

from typing import Protocol

from agent.context.engine import CompressionEvent
from agent.loop import CUT_HISTORY_NOTICE, CUT_NOTICE, DROPPED_NOTICE
from agent.model_retry import BUSY_NOTICE
from gateway.i18n import Phrase, as_is, msgid, say

# The agent's own short lines for the user (it knows no languages), said in the chat's language.
_AGENT_NOTICES = {
    BUSY_NOTICE: msgid("turn.model_busy"),
    CUT_NOTICE: msgid("turn.cut"),
    CUT_HISTORY_NOTICE: msgid("turn.cut_history"),
    DROPPED_NOTICE: msgid("turn.dropped"),
}


def agent_notice(language: str, text: str) -> Phrase:
    """One of the agent's notices in `language` (a notice the catalogue does not know is shown as it is)."""
    key = _AGENT_NOTICES.get(text)
    return say(language, key) if key is not None else as_is(text)


def finished_text(event: CompressionEvent, language: str) -> Phrase:
    return say(language, "compress.finished", before=event.tokens_before, after=event.tokens_after)


class NoticeChannel(Protocol):
    """Sends and edits one notice message in the turn's chat, in its `language`."""

    language: str

    async def send_notice(self, text: Phrase) -> object: ...

    async def edit_notice(self, handle: object, text: Phrase) -> None: ...


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
            self._handle = await self._channel.send_notice(say(self._channel.language, "compress.started"))
        elif event.kind == "finished":
            # A successful compression re-arms the warnings for a later block.
            self._warned.clear()
            if self._progress:
                await self._show(finished_text(event, self._channel.language))
        elif event.kind in ("blocked", "aborted"):
            if event.kind not in self._warned:
                self._warned.append(event.kind)
                language = self._channel.language
                await self._show(say(language, "compress.blocked" if event.kind == "blocked" else "compress.aborted"))
            elif self._handle is not None:
                await self._channel.edit_notice(self._handle, say(self._channel.language, "compress.skipped"))
                self._handle = None
        elif event.kind == "skipped" and self._handle is not None:
            await self._channel.edit_notice(self._handle, say(self._channel.language, "compress.skipped"))
            self._handle = None

    async def _show(self, text: Phrase) -> None:
        if self._handle is not None:
            await self._channel.edit_notice(self._handle, text)
            self._handle = None
        else:
            await self._channel.send_notice(text)


__all__ = ["NoticeBoard", "NoticeChannel", "agent_notice", "finished_text"]
