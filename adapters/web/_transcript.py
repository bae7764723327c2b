"""What a web chat page shows on (re)connect: the stored conversation, then the replies still streaming.

Owns `TranscriptLine` (one bubble of the stored conversation), `TranscriptSource` (who supplies them: the
gateway, from the session store; the adapter knows nothing of sessions), `LiveDrafts` (this run's drafts
still streaming, by chat, so a reloaded page shows an unfinished reply once, as a draft that later edits
finish) and `ShownAnswers` (the replies a page's transcript already holds: a reply stored before it could be
delivered, then resent or finished after the page connected, is not shown twice). A draft is a message
whose last text ends with `STREAM_CURSOR` (the cursor the gateway appends while a reply streams; a test
checks the two agree).
"""
from __future__ import annotations

import weakref
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


class ShownAnswers:
    """Per page: the stored replies after its transcript's last user line (the ones a resend may repeat)."""

    def __init__(self) -> None:
        self._by_page: weakref.WeakKeyDictionary[object, list[str]] = weakref.WeakKeyDictionary()

    def shown(self, page: object, lines: Sequence[TranscriptLine]) -> bool:
        """Note what `page` was sent; True when its last user line is answered already (no draft is its)."""
        last_user = max((i for i, line in enumerate(lines) if line.role == "user"), default=-1)
        self._by_page[page] = [line.text for line in lines[last_user + 1:] if line.role == "assistant"]
        return bool(self._by_page[page])

    def take(self, page: object, text: str) -> bool:
        """True (once) when `text` is a reply the page's transcript shows already."""
        answers = self._by_page.get(page)
        if not answers or text.endswith(STREAM_CURSOR) or text not in answers:
            return False
        answers.remove(text)
        return True


__all__ = ["STREAM_CURSOR", "LiveDrafts", "ShownAnswers", "TranscriptLine", "TranscriptSource"]
