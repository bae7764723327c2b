"""Splitting long replies at a platform's length limit without breaking code blocks.

Owns `split_text`. Prefers paragraph, then line, then word boundaries; a
fenced code block cut in two is closed at the end of one chunk and reopened
(with its language) at the start of the next.
"""
from __future__ import annotations

from adapters.fences import Fence, closes, opening

FENCE = "```"


def _cut_point(text: str, limit: int) -> int:
    window = text[:limit]
    for separator in ("\n\n", "\n", " "):
        index = window.rfind(separator)
        if index > limit // 3:
            return index + len(separator)
    return limit


def _open_fence(chunk: str, inherited: Fence | None) -> Fence | None:
    """The fence left open at the end of `chunk`, or None (a longer fence holds shorter ones: CommonMark)."""
    state = inherited
    for line in chunk.split("\n"):
        if state is None:
            state = opening(line)
        elif closes(state, line):
            state = None
    return state


def split_text(text: str, limit: int) -> list[str]:
    """Split `text` into chunks of at most `limit` characters each."""
    if limit < 16:
        raise ValueError(f"limit must be at least 16 characters, got {limit}")
    if len(text) <= limit:
        return [text]
    chunks: list[str] = []
    rest = text
    fence: Fence | None = None
    while rest:
        prefix = f"{fence.line}\n" if fence else ""
        budget = limit - len(prefix) - (max(len(FENCE), fence.length if fence else 0) + 1)  # room to close a fence
        if len(prefix) + len(rest) <= limit:
            chunks.append(prefix + rest)
            break
        while True:
            cut = _cut_point(rest, budget)
            still_open = _open_fence(rest[:cut], fence)
            chunk = prefix + rest[:cut]
            if still_open is not None:
                chunk = chunk.rstrip("\n") + "\n" + still_open.closing
            if len(chunk) <= limit or budget <= 1:
                break
            budget -= len(chunk) - limit  # a longer fence opened in this chunk needs more room to close
        rest = rest[cut:]
        chunks.append(chunk)
        fence = still_open
    return chunks
