"""Chat-completion request bodies as JSON bytes, each message serialised once.

Owns `RequestBodies`. A turn resends the whole history, but only its new
messages change: their JSON is computed here once and kept, and the joined
JSON of each request's history is kept too, so a history that extends an
earlier one (the next turn of a chat, the next round of a tool loop) costs a
comparison of the earlier messages (identity first, in C) and one copy of
their bytes, plus the new messages: it grows with bytes sent, not with Python
work per message or per field, as the SDK's per-field transform does.
Knows nothing of HTTP or the SDK.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent.messages import Message, ToolSchema, to_wire

# Bounds the serialised messages kept (several chats share one client); the oldest go first.
MAX_CACHED_BYTES = 64 * 1024 * 1024
MAX_CACHED_TOOLS = 1024
# Joined histories kept (one a chat in flight: an extended one replaces its prefix), and how far back from a
# history's end its prefix is looked for (a turn adds a reply and a message, a tool round a call and its results; past this, message by message).
MAX_CACHED_HISTORIES = 256
MAX_CACHED_HISTORY_BYTES = 32 * 1024 * 1024
PREFIX_LOOKBACK = 16
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; a lone surrogate becomes its JSON escape (`\\udc80`) instead of failing."""
    return _ENCODER.encode(value).encode("utf-8", "backslashreplace")


class RequestBodies:
    """Builds request bodies; caches each message's and tool's JSON.

    Args:
        budget_bytes: serialised messages kept at most (oldest evicted first).
    """

    def __init__(self, *, budget_bytes: int = MAX_CACHED_BYTES) -> None:
        self._budget = budget_bytes
        self._messages: dict[Message, bytes] = {}
        self._cached_bytes = 0
        # ToolSchema holds a dict (unhashable): keyed by identity, the schema kept so its id stays unique.
        self._tools: dict[int, tuple[ToolSchema, bytes]] = {}
        # A history's last message -> (the history, its messages' JSON joined): what the next request extends.
        self._histories: dict[Message, tuple[tuple[Message, ...], bytes]] = {}
        self._history_bytes = 0

    @property
    def cached_bytes(self) -> int:
        return self._cached_bytes

    def message(self, message: Message) -> bytes:
        """The wire JSON of `message` (in-process metadata left out, as `to_wire` does)."""
        try:
            cached = self._messages.get(message)
        except TypeError:  # an unhashable content part: serialise, do not cache
            return dumps(to_wire(message))
        if cached is None:
            cached = dumps(to_wire(message))
            self._remember(message, cached)
        return cached

    def _remember(self, message: Message, data: bytes) -> None:
        if len(data) > self._budget:
            return
        self._messages[message] = data
        self._cached_bytes += len(data)
        while self._cached_bytes > self._budget:
            oldest = next(iter(self._messages))
            self._cached_bytes -= len(self._messages.pop(oldest))

    def history(self, messages: Sequence[Message]) -> bytes:
        """The wire JSON of `messages`, comma-joined; reuses the joined JSON of a kept history it extends."""
        try:
            start, head = self._prefix(messages)
        except TypeError:  # an unhashable content part: join message by message, keep nothing
            return b",".join([self.message(m) for m in messages])
        if start == len(messages):
            return head
        tail = b",".join([self.message(m) for m in messages[start:]])
        joined = head + b"," + tail if head else tail
        self._keep_history(tuple(messages), joined)
        return joined

    def _prefix(self, messages: Sequence[Message]) -> tuple[int, bytes]:
        """(how many leading messages a kept history covers, their joined JSON); (0, b"") if none does."""
        histories = self._histories
        for end in range(len(messages), max(0, len(messages) - PREFIX_LOOKBACK), -1):
            entry = histories.get(messages[end - 1])
            # Equal messages serialise alike; a list or tuple of the same objects compares by identity, in C.
            if entry is not None and len(entry[0]) == end and entry[0] == tuple(messages[:end]):
                if end < len(messages):  # extended: the longer history replaces it
                    del histories[messages[end - 1]]
                    self._history_bytes -= len(entry[1])
                return end, entry[1]
        return 0, b""

    def _keep_history(self, messages: tuple[Message, ...], joined: bytes) -> None:
        if not messages or len(joined) > MAX_CACHED_HISTORY_BYTES:
            return
        replaced = self._histories.pop(messages[-1], None)
        if replaced is not None:
            self._history_bytes -= len(replaced[1])
        self._histories[messages[-1]] = (messages, joined)
        self._history_bytes += len(joined)
        while len(self._histories) > MAX_CACHED_HISTORIES or self._history_bytes > MAX_CACHED_HISTORY_BYTES:
            oldest = next(iter(self._histories))
            self._history_bytes -= len(self._histories.pop(oldest)[1])

    def tool(self, tool: ToolSchema) -> bytes:
        entry = self._tools.get(id(tool))
        if entry is not None and entry[0] is tool:
            return entry[1]
        if len(self._tools) >= MAX_CACHED_TOOLS:
            self._tools.clear()
        data = dumps(tool.to_wire())
        self._tools[id(tool)] = (tool, data)
        return data

    def build(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        max_tokens: int | None = None,
        stream: bool = False,
    ) -> bytes:
        """The whole `/chat/completions` body, as the SDK would send it for the same arguments."""
        head: dict[str, Any] = {"model": model}
        if max_tokens is not None:
            head["max_tokens"] = max_tokens
        if stream:
            head["stream"] = True
            head["stream_options"] = {"include_usage": True}
        parts = [dumps(head)[:-1], b',"messages":[', self.history(messages), b"]"]
        if tools:
            parts += [b',"tools":[', b",".join([self.tool(t) for t in tools]), b"]"]
        parts.append(b"}")
        return b"".join(parts)


__all__ = ["MAX_CACHED_BYTES", "RequestBodies", "dumps"]
