"""`keyword-memory`: what users said in a chat, recalled when a new message shares a word with it.

Kept in memory only (a restart forgets it) and keyed by chat: one chat's lines never reach another.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from agent.memory.providers import MemoryProvider
from agent.messages import Message

MIN_WORD = 3
MAX_LINES = 5
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.casefold()) if len(word) >= MIN_WORD}


class KeywordMemory(MemoryProvider):
    name = "keyword-memory"

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    async def prefetch(self, chat_id: str, user_id: str | None, query: str) -> str | None:
        wanted = _words(query)
        found = [line for line in self._lines.get(chat_id, []) if wanted & _words(line) and line != query]
        return "\n".join(found[-MAX_LINES:]) or None

    async def sync(self, chat_id: str, user_id: str | None, messages: Sequence[Message]) -> None:
        said = [m.text for m in messages if m.role == "user" and m.text.strip()]
        self._lines.setdefault(chat_id, []).extend(said)
