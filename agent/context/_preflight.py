"""Cheap token estimates for preflight: whether a request may be near the threshold, before any real count.

Owns `estimate_messages` and `PreflightCosts` (the running totals over a history
that grows by a few messages a request). Estimates only: the compressor counts
for real once they say the request may not fit. Pure; no I/O.
"""
from __future__ import annotations

from collections.abc import Sequence

from agent.messages import Message
from agent.tokens import estimate_tokens


def _estimate_message(message: Message) -> int:
    content = message.content
    if type(content) is str and not message.tool_calls:  # most messages: plain text, no image, no call
        return estimate_tokens(content) + 4
    total = estimate_tokens(message.text) + 4 + 765 * len(message.images)
    for call in message.tool_calls:
        total += estimate_tokens(call.arguments) + estimate_tokens(call.name) + 8
    return total


def estimate_messages(messages: Sequence[Message]) -> int:
    return sum(_estimate_message(message) for message in messages)


class PreflightCosts:
    """(chars, estimated tokens) of a history, updated incrementally.

    Preflight runs before every request over the whole history, and a history
    usually is the previous one plus a few messages: when the previous messages
    are still there (one slice comparison in C, which takes the same object as
    equal without calling `__eq__`), only the new ones are estimated; so is the
    system prompt, again only when its text changed.
    """

    def __init__(self) -> None:
        self._seen: Sequence[Message] = ()
        self._chars = 0
        self._tokens = 0
        self._head_text: str | None = None  # the last plain-text system prompt costed, and its estimate
        self._head_tokens = 0

    def _head_chars(self, head: Sequence[Message]) -> int:
        """The system prompt's chars; its tokens are left in `_head_tokens` (estimated again only when its text changes)."""
        if not head:
            self._head_text, self._head_tokens = None, 0
            return 0
        (prompt,) = head
        content = prompt.content
        if isinstance(content, str) and not prompt.tool_calls:
            if content != self._head_text:  # rebuilt for each request, but mostly the same text
                self._head_text, self._head_tokens = content, _estimate_message(prompt)
            return len(content)
        self._head_text, self._head_tokens = None, _estimate_message(prompt)
        return len(prompt.text)

    def totals(self, messages: Sequence[Message]) -> tuple[int, int]:
        # The system prompt is rebuilt for each request: cost it apart from the history.
        start = 1 if messages and messages[0].role == "system" else 0
        head = messages[:start]
        seen = self._seen
        end = start + len(seen)
        # Slices of `messages` only (two copies, not four, of a history of thousands): a slice of another
        # type than the one seen compares unequal, and the totals are then recounted, never wrong.
        if len(messages) >= end and messages[start:end] == seen:
            fresh = messages[end:]
        else:  # an equal message has the same estimate, so equality (not identity) is enough
            fresh, self._chars, self._tokens = messages[start:], 0, 0
        for message in fresh:
            content = message.content
            self._chars += len(content) if type(content) is str else len(message.text)
            self._tokens += _estimate_message(message)
        self._seen = messages[start:]
        head_chars = self._head_chars(head)  # sets `_head_tokens`
        return self._chars + head_chars, self._tokens + self._head_tokens


__all__ = ["PreflightCosts", "estimate_messages"]
