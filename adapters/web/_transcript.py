"""What a web chat page shows on (re)connect: the stored conversation, then the replies still streaming.

Owns `TranscriptLine` (one bubble of the stored conversation), `TranscriptSource` (who supplies them: the
gateway, from the session store; the adapter knows nothing of sessions) and `LiveDrafts` (this run's drafts
still streaming, by chat, so a reloaded page shows an unfinished reply once, as a draft that later edits
finish). A draft is a message whose last text ends with `STREAM_CURSOR` (the cursor the gateway appends
while a reply streams; a test checks the two agree).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

STREAM_CURSOR = " \u258c"


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One bubble: who said it, its text, its pictures (`data:` URLs) and the names of its other files."""

    role: Literal["user", "assistant"]
    text: str
    images: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    pending: bool = False  # a message of the user's still waiting for (or getting) its reply

    def as_frame(self) -> dict[str, object]:
        return {"role": self.role, "text": self.text, "images": list(self.images), "files": list(self.files),
                "pending": self.pending}


TranscriptSource: TypeAlias = Callable[[str], Awaitable[Sequence[TranscriptLine]]]


@dataclass(slots=True)
class LiveDrafts:
    """The drafts still streaming, per chat: message id → its last text (with the cursor)."""

    by_chat: dict[str, dict[str, str]] = field(default_factory=dict)

    def shown(self, chat_id: str, message_id: str, text: str) -> None:
        """`text` was sent or edited into `message_id`: a draft while it ends with the cursor, else finished."""
        drafts = self.by_chat.setdefault(chat_id, {})
        if text.endswith(STREAM_CURSOR):
            drafts[message_id] = text
        else:
            drafts.pop(message_id, None)
        if not drafts:
            del self.by_chat[chat_id]

    def gone(self, chat_id: str, message_id: str) -> None:
        drafts = self.by_chat.get(chat_id)
        if drafts is not None:
            drafts.pop(message_id, None)
            if not drafts:
                del self.by_chat[chat_id]

    def of(self, chat_id: str) -> list[tuple[str, str]]:
        return list(self.by_chat.get(chat_id, {}).items())


__all__ = ["STREAM_CURSOR", "LiveDrafts", "TranscriptLine", "TranscriptSource"]
