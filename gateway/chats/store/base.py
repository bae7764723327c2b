"""The per-chat settings store contract: a chat's chosen model and its all-time token usage.

Owns `ChatStore` (a small sync Protocol, called through `asyncio.to_thread`
like the session store; SQLite under home or PostgreSQL shared by replicas;
`add_usage` alone never blocks, so turns call it directly),
`ChatRecord` and `Usage`. Chats are scoped `PLATFORM:CHAT_ID`. Knows nothing
of agents or platforms.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens the provider reported, summed over requests."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "requests": self.requests}

    @classmethod
    def from_json(cls, raw: object) -> Usage:
        if not isinstance(raw, dict):
            return cls()
        # Read every turn (the session's running total): the three fields by hand, not by a generator.
        prompt, completion, requests = raw.get("prompt_tokens", 0), raw.get("completion_tokens", 0), raw.get("requests", 0)
        return cls(int(prompt) if isinstance(prompt, int) else 0, int(completion) if isinstance(completion, int) else 0,
                   int(requests) if isinstance(requests, int) else 0)

    def plus(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.requests + other.requests,
        )


@dataclass(frozen=True, slots=True)
class ChatRecord:
    """What is kept about one chat: the model it switched to (None: the configured one) and its usage."""

    chat: str
    model: str | None = None
    usage: Usage = Usage()


class ChatStore(Protocol):
    """Per-chat settings and usage. `open` before use, `close` after; both repeatable."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def get(self, chat: str) -> ChatRecord:
        """The chat's record (an empty one for a chat never seen)."""
        ...

    def set_model(self, chat: str, model: str | None) -> None:
        """Remember the chat's model (None: back to the configured one)."""
        ...

    def add_usage(self, chat: str, platform: str, usage: Usage) -> None:
        """Add one turn's usage to the chat's all-time figures.

        Never blocks on I/O (callable on the event loop): a store may write it
        behind, but its reads and `close` must include every addition made before.
        """
        ...

    def usage_by_platform(self) -> dict[str, Usage]:
        """All-time usage summed per platform (for `/metrics` and the dashboard)."""
        ...


__all__ = ["ChatRecord", "ChatStore", "Usage"]
