"""The last resort of an overflow: cut the largest text in the request to its head and tail.

Owns `cut_largest`. When even the protected tail plus the new message cannot
fit the window, the single largest text message (often the user's pasted
log, or one huge tool output) keeps its head and its tail around a marker.
Pure; the caller tells the user in one short line.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.messages import Message
from agent.tokens import estimate_tokens

CUT_MARKER = "\n[… {n:,} characters cut to fit the model's context window …]\n"
# Conservative: fewer characters per token than most text has, so the cut result fits.
CHARS_PER_TOKEN = 3
MIN_KEEP_CHARS = 400


@dataclass(frozen=True, slots=True)
class Cut:
    messages: tuple[Message, ...]
    index: int
    removed_chars: int


def cut_largest(messages: Sequence[Message], *, budget_tokens: int) -> Cut | None:
    """Cut the largest plain-text message so the whole list fits `budget_tokens`; None if nothing can go."""
    candidates = [
        (len(m.content), i) for i, m in enumerate(messages) if m.role != "system" and isinstance(m.content, str)
    ]
    if not candidates:
        return None
    size, index = max(candidates)
    others = sum(estimate_tokens(m.text) + 4 for i, m in enumerate(messages) if i != index)
    keep = max(MIN_KEEP_CHARS, (budget_tokens - others) * CHARS_PER_TOKEN)
    if size <= keep + len(CUT_MARKER) * 2:
        return None
    text = messages[index].content
    assert isinstance(text, str)
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3:]
    removed = len(text) - len(head) - len(tail)
    new = messages[index].with_content(f"{head}{CUT_MARKER.format(n=removed)}{tail}")
    return Cut(messages=(*messages[:index], new, *messages[index + 1:]), index=index, removed_chars=removed)


__all__ = ["CUT_MARKER", "Cut", "cut_largest"]
