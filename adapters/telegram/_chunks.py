"""Cutting a reply into Telegram-sized messages.

Owns `telegram_chunks`. Telegram counts a message's length in UTF-16 code
units after entity parsing, while `adapters.text.split_text` counts code
points; text with emoji or other astral characters is re-split with a smaller
budget until every chunk fits. Code fences stay intact (split_text closes and
reopens them). The MarkdownV2 conversion that follows never lengthens the
visible text, so a chunk that fits here fits after conversion.
"""
from __future__ import annotations

from adapters.text import split_text


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, Telegram's unit for limits and entity offsets."""
    return len(text.encode("utf-16-le")) // 2


def telegram_chunks(text: str, limit: int) -> list[str]:
    """Split `text` so that each chunk is at most `limit` UTF-16 code units."""
    budget = limit
    while True:
        chunks = split_text(text, budget)
        longest = max(utf16_len(chunk) for chunk in chunks)
        if longest <= limit:
            return chunks
        # Shrink by the overshoot (at least a little) and try again; each round strictly lowers the budget.
        budget -= max(longest - limit, limit // 64, 1)
