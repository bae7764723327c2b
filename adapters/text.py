"""Splitting long replies at a platform's length limit without breaking code blocks.

Owns `split_text`. Prefers paragraph, then line, then word boundaries; a
fenced code block cut in two is closed at the end of one chunk and reopened
(with its language) at the start of the next.
"""
from __future__ import annotations

FENCE = "```"


def _cut_point(text: str, limit: int) -> int:
    window = text[:limit]
    for separator in ("\n\n", "\n", " "):
        index = window.rfind(separator)
        if index > limit // 3:
            return index + len(separator)
    return limit


def _open_fence(chunk: str, inherited: str | None) -> str | None:
    """The fence header left open at the end of `chunk`, or None."""
    state = inherited
    for line in chunk.split("\n"):
        stripped = line.strip()
        if stripped.startswith(FENCE):
            state = None if state is not None else stripped
    return state


def split_text(text: str, limit: int) -> list[str]:
    """Split `text` into chunks of at most `limit` characters each."""
    if limit < 16:
        raise ValueError(f"limit must be at least 16 characters, got {limit}")
    if len(text) <= limit:
        return [text]
    chunks: list[str] = []
    rest = text
    fence: str | None = None
    while rest:
        prefix = f"{fence}\n" if fence else ""
        budget = limit - len(prefix) - (len(FENCE) + 1)  # room to close a fence
        if len(prefix) + len(rest) <= limit:
            chunks.append(prefix + rest)
            break
        cut = _cut_point(rest, budget)
        body = rest[:cut]
        rest = rest[cut:]
        still_open = _open_fence(body, fence)
        chunk = prefix + body
        if still_open is not None:
            chunk = chunk.rstrip("\n") + "\n" + FENCE
        chunks.append(chunk)
        fence = still_open
    return chunks
