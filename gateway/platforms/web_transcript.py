"""The web chat's transcript, from the session store: what a page shows after a reload, a reconnect or `/undo`.

Owns `StoredTranscript` (the `TranscriptSource` the gateway hands the web adapter) and `ShowsTranscript`
(the adapter capability the gateway uses: take a source, redraw the pages of a chat).

A page's transcript is the chat's active session as stored (user and assistant messages with text; tool
calls, tool results, system lines and compression summaries are not bubbles), pictures as their stored
`data:` URLs (up to `MAX_THUMBNAIL_CHARS` each and `MAX_HISTORY_IMAGE_CHARS` together, the newest first;
the others are named), followed by the user's messages still waiting in the session's lane (the turn
running, the queued ones: not stored until answered), marked pending.
A stopped reply is stored marked stopped by the turn (`stopped_text`), so it is shown as it was left.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from adapters.base import InboundMessage
from adapters.web import TranscriptLine, TranscriptSource
from agent.context import is_handoff, unmerge
from agent.messages import Message
from agent.store import SessionStore
from gateway.intake.routing import session_key

MAX_THUMBNAIL_CHARS = 2_000_000  # a data: URL this long is about 1.5 MB of picture
MAX_HISTORY_IMAGE_CHARS = 8_000_000  # all pictures of one `history` frame together, the newest kept first


@runtime_checkable
class ShowsTranscript(Protocol):
    """An adapter whose pages show the stored conversation (the web chat)."""

    transcript: TranscriptSource | None

    async def transcript_changed(self, chat_id: str) -> None: ...


def transcript_line(message: Message) -> TranscriptLine | None:
    """The bubble of a stored message (None: not one the user sees: a tool call or result, a system line, a
    compression summary; a message a summary was merged into shows its own text)."""
    if is_handoff(message):
        original = unmerge(message.text)
        if original == message.text:
            return None
        message = message.with_content(original)
    if message.role == "user":
        images = tuple(part.url for part in message.images if part.url.startswith("data:image/"))
        kept = tuple(url for url in images if len(url) <= MAX_THUMBNAIL_CHARS)
        named = ("picture",) * (len(images) - len(kept))
        return TranscriptLine("user", message.text, images=kept, files=named)
    if message.role == "assistant" and message.text.strip():
        return TranscriptLine("assistant", message.text)
    return None


def within_budget(lines: list[TranscriptLine], budget: int = MAX_HISTORY_IMAGE_CHARS) -> list[TranscriptLine]:
    """`lines` with their pictures kept newest first while their data fits `budget`; older ones become names."""
    kept: list[TranscriptLine] = []
    for line in reversed(lines):
        images = []
        for url in line.images:
            if len(url) <= budget:
                images.append(url)
                budget -= len(url)
        dropped = len(line.images) - len(images)
        kept.append(line if not dropped else
                    dataclasses.replace(line, images=tuple(images), files=line.files + ("picture",) * dropped))
    return kept[::-1]


def pending_line(message: InboundMessage) -> TranscriptLine:
    names = tuple(attachment.name or attachment.kind for attachment in message.attachments)
    return TranscriptLine("user", message.text, files=names, pending=True)


class StoredTranscript:
    """A web chat's transcript: its stored active session, then its messages still waiting in the lane.

    Args:
        store: the session store.
        profile: `gateway.profile` (part of the session key).
        waiting: the messages of a session key's jobs not finished yet (`SessionLanes.waiting`).
    """

    def __init__(self, store: SessionStore, *, profile: str,
                 waiting: Callable[[str], Sequence[InboundMessage]]) -> None:
        self._store = store
        self._profile = profile
        self._waiting = waiting

    def _stored(self, key: str) -> list[Message]:
        session = self._store.active_session(key)
        return [] if session is None else self._store.active_messages(session.id)

    async def __call__(self, chat_id: str) -> list[TranscriptLine]:
        key = session_key(profile=self._profile, platform="web", kind="dm", chat_id=chat_id, thread_id=None,
                          user_id=None)
        stored = await asyncio.to_thread(self._stored, key)
        lines = within_budget([line for message in stored if (line := transcript_line(message)) is not None])
        lines.extend(pending_line(message) for message in self._waiting(key))
        return lines


__all__ = ["MAX_HISTORY_IMAGE_CHARS", "MAX_THUMBNAIL_CHARS", "ShowsTranscript", "StoredTranscript", "pending_line",
           "transcript_line", "within_budget"]
