"""Property tests: for any valid message list, compression output is a valid provider sequence.

Generated sessions mix system, user (with names and images), assistant text,
and assistant tool calls answered in any order, with tool_call ids reused
across turns like real recordings.
"""
from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent.context._handoff import MERGED_PRIOR_HEADER, SYSTEM_NOTE, is_real_user, unmerge
from agent.context._images import image_placeholder
from agent.messages import ImagePart, Message, TextPart, ToolCall
from agent.tokens import estimate_counter
from tests.agent.context.compressor_helpers import ScriptedSummarizer, make

COUNTER = estimate_counter()
IDS = ["call_0", "call_1", "call_2", "call_3"]  # a small pool: ids repeat across turns
WORDS = st.sampled_from(["deploy", "port", "8443", "error:", "config.yaml", "/srv/app.py", "ok", "Traceback", "λ", "тест", "x"])


@st.composite
def text(draw: st.DrawFn, max_words: int = 300) -> str:
    size = draw(st.sampled_from([1, 5, 40, max_words]))
    return " ".join(draw(st.lists(WORDS, min_size=1, max_size=size)))


@st.composite
def turn(draw: st.DrawFn, agentic: bool = False) -> list[Message]:
    kinds = ["assistant", "tools", "tools"] if agentic else ["user", "user_image", "assistant", "tools", "tools"]
    kind = draw(st.sampled_from(kinds))
    if kind == "user":
        return [Message(role="user", content=draw(text()), name=draw(st.none() | st.just("ann")))]
    if kind == "user_image":
        image = ImagePart(url="data:image/png;base64," + "QUJD" * draw(st.integers(1, 50)))
        return [Message(role="user", content=(TextPart(draw(text(20))), image))]
    if kind == "assistant":
        return [Message(role="assistant", content=draw(text()))]
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
    calls = tuple(ToolCall(id=i, name=draw(st.sampled_from(["bash", "read_file", "lookup"])), arguments='{"command": "' + draw(text(80)).replace('"', "") + '"}') for i in ids)
    content = draw(st.none() | text(30))
    order = draw(st.permutations(list(calls)))
    results = [Message(role="tool", content=draw(text(600)), tool_call_id=c.id) for c in order]
    return [Message(role="assistant", content=content, tool_calls=calls), *results]


@st.composite
def session(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message(role="system", content="You are a careful assistant. " + draw(text(40))))
    agentic = draw(st.booleans())  # a coding-agent shape: one task message, then only tool work
    if agentic:
        messages.append(Message(role="user", content="task: " + draw(text())))
    for chunk in draw(st.lists(turn(agentic), min_size=draw(st.sampled_from([1, 8, 20])), max_size=50)):
        messages.extend(chunk)
    return messages


def assert_valid_sequence(messages: Sequence[Message]) -> None:
    """Every tool call is answered exactly once right after its message; no orphan results."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message.role != "tool", f"orphan tool result at {index}"
        index += 1
        if message.role == "assistant" and message.tool_calls:
            answers = [m.tool_call_id for m in messages[index:index + len(message.tool_calls)]]
            assert all(m.role == "tool" for m in messages[index:index + len(message.tool_calls)])
            assert sorted(answers) == sorted(c.id for c in message.tool_calls)  # type: ignore[type-var]
            index += len(message.tool_calls)


def unmerged(message: Message) -> Message:
    """The message a summary was merged into, as it was before (images and all); any other message as it is."""
    if message.compressed_summary and isinstance(message.content, str):
        return message.with_content(unmerge(message.content))
    if message.compressed_summary and isinstance(message.content, tuple) and message.content:
        lead = message.content[0]
        if isinstance(lead, TextPart) and lead.text.startswith(MERGED_PRIOR_HEADER):
            return message.with_content(message.content[1:])
    return message


def norm(message: Message) -> Message:
    """A message as it compares across compression: images as placeholders, no system note, no merged summary."""
    message = unmerged(message)
    if isinstance(message.content, tuple):
        message = message.with_content(tuple(TextPart(image_placeholder(p)) if isinstance(p, ImagePart) else p for p in message.content))
    if message.role == "system":
        message = message.with_content(message.text.replace("\n\n" + SYSTEM_NOTE, ""))
    return message


def same_role_pairs(messages: Sequence[Message]) -> list[tuple[Message, Message]]:
    return [(a, b) for a, b in zip(messages, messages[1:]) if a.role == b.role and a.role != "tool"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(session(), st.sampled_from([1_500, 3_000, 8_000]), st.sampled_from([0, 3]), st.booleans())
async def test_compression_output_is_always_valid(messages: list[Message], context_length: int, first_n: int, llm: bool) -> None:
    """Valid sequence, system prompt and latest user message kept, no new same-role neighbours, never more tokens."""
    summarizer = ScriptedSummarizer() if llm else None
    engine = make(context_length=context_length, protect_first_n=first_n, protect_last_n=4, summarizer=summarizer)
    result = await engine.compress(messages, trigger="manual", force=True)
    out = result.messages
    event(f"outcome: {result.outcome} {result.reason[:30]}{' (merged)' if result.explain and result.explain.merged else ''}"
          f"{' (pinned)' if result.explain and result.explain.pinned else ''}")
    if result.outcome != "compressed":
        assert out == tuple(messages)
        return
    assert_valid_sequence(out)
    if messages[0].role == "system":
        assert out[0].role == "system" and out[0].text.startswith(messages[0].text)
    users = [m for m in messages if is_real_user(m)]
    if users:
        # Kept whole, its images included; the summary may be merged in front of it (both roles collided).
        assert users[-1] in [unmerged(m) for m in out]
    original_pairs = {(norm(a), norm(b)) for a, b in zip(messages, messages[1:])}
    for a, b in same_role_pairs(out):
        assert (norm(a), norm(b)) in original_pairs, f"new {a.role}/{b.role} neighbours"
    assert COUNTER.count_messages(out) <= COUNTER.count_messages(messages)
