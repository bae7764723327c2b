"""Token accounting."""
from __future__ import annotations

from agent.messages import Message, ToolCall, ToolSchema
from agent.tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter, default_counter, estimate_tokens


def test_tiktoken_loads_offline() -> None:
    """The default counter is real cl100k_base, not the estimate, with no network."""
    counter = default_counter()
    assert counter.name == "cl100k_base"
    assert counter.count_text("hello world") == 2


def test_message_counts_are_cached() -> None:
    """An unchanged message is tokenised once, however often it is counted."""
    calls: list[str] = []

    def encode_len(text: str) -> int:
        calls.append(text)
        return len(text)

    counter = TokenCounter(encode_len, name="test")
    message = Message(role="user", content="abcdef")
    first = counter.count_message(message)
    second = counter.count_message(Message(role="user", content="abcdef"))
    assert (first, second, calls) == (6 + MESSAGE_OVERHEAD_TOKENS, first, ["abcdef"])


def test_tool_calls_and_schemas_are_counted() -> None:
    """Tool call arguments and tool definitions cost tokens."""
    counter = default_counter()
    bare = counter.count_message(Message(role="assistant", content=None))
    with_call = counter.count_message(
        Message(role="assistant", tool_calls=(ToolCall(id="1", name="bash", arguments='{"command": "ls -la"}'),))
    )
    schema = ToolSchema(name="bash", description="run a command", parameters={"type": "object", "properties": {}})
    assert with_call > bare
    assert counter.count_tools([schema]) > 10


def test_estimate_counts_non_ascii_heavier() -> None:
    """The fallback estimate does not undercount CJK text four-fold."""
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("漢字" * 10) == 20


def test_tool_schemas_are_counted_once() -> None:
    """A tool schema is tokenised once however many requests count it."""
    calls: list[str] = []

    def encode_len(text: str) -> int:
        calls.append(text)
        return len(text)

    counter = TokenCounter(encode_len, name="test")
    schema = ToolSchema(name="bash", description="run", parameters={"type": "object"})
    first = counter.count_tools([schema])
    assert counter.count_tools([schema, schema]) == 2 * first
    assert len(calls) == 3
