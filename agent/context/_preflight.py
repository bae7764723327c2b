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


def _starts_with(items: Sequence[Message], prefix: list[Message]) -> bool:
    """Whether `items` is a list beginning with messages equal to those of `prefix`, without slicing it.

    `prefix <= items` walks both lists in C, skipping identical pointers (a slice would touch every
    message of a long history, twice); at the first unequal pair it orders the two messages, which
    messages do not support (TypeError). So it holds exactly when every message of `prefix` is matched.
    """
    if type(items) is not list or len(prefix) > len(items):
        return False
    try:
        return prefix <= items
    except TypeError:
        return False


class PreflightCosts:
    """(chars, estimated tokens) of a history, updated incrementally.

    Preflight runs before every request over the whole history, and a history
    usually is the previous one plus a few messages: when the previous messages
    are still there (one comparison in C, which takes the same object as equal
    without calling `__eq__`), only the new ones are estimated and added to the
    kept copy; so is the system prompt, again only when its text changed.
    Per request that is O(new messages), whatever the history's length.
    """

    def __init__(self) -> None:
        self._seen: list[Message] = []  # the last messages costed, the system prompt's slot included
        self._seen_start = 0  # 1 when `_seen[0]` is a system prompt's slot (costed apart)
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
        seen = self._seen
        if start and start == self._seen_start:
            seen[0] = messages[0]  # our own copy: its head slot takes this request's, so only the history compares
        if start == self._seen_start and _starts_with(messages, seen):
            fresh = messages[len(seen):]
            seen.extend(fresh)
        else:  # an equal message has the same estimate, so equality (not identity) is enough
            fresh, self._chars, self._tokens = messages[start:], 0, 0
            self._seen, self._seen_start = list(messages), start
        for message in fresh:
            content = message.content
            self._chars += len(content) if type(content) is str else len(message.text)
            self._tokens += _estimate_message(message)
        head_chars = self._head_chars(messages[:start])  # sets `_head_tokens`
        return self._chars + head_chars, self._tokens + self._head_tokens


__all__ = ["PreflightCosts", "estimate_messages"]
