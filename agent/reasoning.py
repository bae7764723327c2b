"""Reasoning text of reasoning models never reaches a chat (`agent.strip_reasoning`).

Owns `strip_reasoning` (a finished text: `<think>…</think>` blocks, an
unclosed block at the end, and a leading block whose opening tag the chat
template supplied) and `ReasoningFilter` (the same for a stream of deltas:
text inside a block is swallowed, a tag split across deltas is held back
until it can be judged). Reasoning sent in separate fields
(`reasoning_content`, `reasoning`) is never read as text by the model client,
so only tags inside the content need this. Pure; knows nothing of platforms.
"""
from __future__ import annotations

import re

from agent.model_client import TextSink

TAG_NAMES = ("think", "thinking", "reasoning")
_NAMES = "|".join(TAG_NAMES)
_OPEN = re.compile(rf"<(?:{_NAMES})>", re.IGNORECASE)
_CLOSE = re.compile(rf"</(?:{_NAMES})>", re.IGNORECASE)
_BLOCK = re.compile(rf"<({_NAMES})>.*?</\1>", re.IGNORECASE | re.DOTALL)
_TAGS = tuple(f"<{name}>" for name in TAG_NAMES) + tuple(f"</{name}>" for name in TAG_NAMES)


def strip_reasoning(text: str | None) -> str | None:
    """`text` without its reasoning blocks (None stays None)."""
    if text is None:
        return None
    cleaned = _BLOCK.sub("", text)
    close = _CLOSE.search(cleaned)
    if close is not None and not _OPEN.search(cleaned[: close.start()]):
        cleaned = cleaned[close.end():]  # the template opened the block: everything before the close is reasoning
    opened = _OPEN.search(cleaned)
    if opened is not None:
        cleaned = cleaned[: opened.start()]  # cut off mid-thought (max_tokens): no answer after it
    return cleaned.lstrip() if cleaned != text else text


def _held(buffer: str) -> int:
    """Length of a suffix that may be the start of a tag (kept until the next delta decides)."""
    start = buffer.rfind("<")
    if start < 0:
        return 0
    tail = buffer[start:].lower()
    return len(tail) if any(tag.startswith(tail) for tag in _TAGS) else 0


class ReasoningFilter:
    """Filters streamed deltas; `feed` returns what may be shown, `flush` the rest at the end."""

    def __init__(self) -> None:
        self._buffer = ""
        self._inside = False
        self._shown = False

    def feed(self, delta: str) -> str:
        if not self._buffer and "<" not in delta:  # no tag can begin here (most deltas): shown, or swallowed inside
            if self._inside:
                return ""
            if not self._shown:
                delta = delta.lstrip()
                self._shown = bool(delta)
            return delta
        self._buffer += delta
        out: list[str] = []
        while True:
            pattern = _CLOSE if self._inside else _OPEN
            match = pattern.search(self._buffer)
            if match is not None:
                if not self._inside:
                    out.append(self._buffer[: match.start()])
                self._buffer = self._buffer[match.end():]
                self._inside = not self._inside
                continue
            keep = _held(self._buffer)
            if not self._inside:
                out.append(self._buffer[: len(self._buffer) - keep])
            self._buffer = self._buffer[len(self._buffer) - keep:] if keep else ""
            break
        text = "".join(out)
        if not self._shown:
            text = text.lstrip()  # the blank lines a reasoning block leaves behind
        self._shown = self._shown or bool(text)
        return text

    def flush(self) -> str:
        rest, self._buffer = ("" if self._inside else self._buffer), ""
        return rest


def filtered(sink: TextSink) -> tuple[TextSink, ReasoningFilter]:
    """A sink that passes on only the visible part of each delta."""
    state = ReasoningFilter()

    async def visible(delta: str) -> None:
        text = state.feed(delta)
        if text:
            await sink(text)

    return visible, state


__all__ = ["ReasoningFilter", "filtered", "strip_reasoning"]
