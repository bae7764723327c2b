"""Cheap, deterministic shrinking of old tool traffic (docs/design.md §3.5 step 1, §3.8).

Owns the prune passes: older duplicates of a tool output, one-line stand-ins
for long old tool results, JSON-valid truncation of long tool-call arguments,
the tail pressure pass, and the hard cap for a single result bigger than the
whole tail budget. Every pass is a pure function over a message list and
returns the new list plus which indices it touched and how. Never calls a
model and never tokenises what it throws away.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal, TypeAlias

from agent.context._pairing import ToolLink
from agent.context._toolsummary import DUPLICATE_PLACEHOLDER, summarize_tool_result, truncate_arguments
from agent.messages import Message
from agent.tokens import TokenCounter, estimate_tokens

PruneKind: TypeAlias = Literal["duplicate", "one_line", "arguments", "pressure", "oversize"]

ARGUMENT_LIMIT_CHARS = 500
DUPLICATE_MIN_CHARS = 200
PRESSURE_FACTOR = 1.5
# Under tail pressure the newest few messages stay verbatim: the active ask and
# the latest tool pair must remain readable.
PRESSURE_KEEP_RECENT = 3
OVERSIZE_MARKER = "\n[… {elided:,} chars of this tool output elided by context compression …]\n"


def _kept(message: Message, links: Mapping[int, ToolLink], index: int, keep: frozenset[str]) -> bool:
    """`compression.prune_exclude_tools`: results of these tools are never pruned (e.g. a memory-like tool)."""
    if not keep:
        return False
    link = links.get(index)
    return (link.call.name if link is not None else message.name) in keep


def _one_line(message: Message, links: Mapping[int, ToolLink], index: int) -> Message:
    link = links.get(index)
    return message.with_content(summarize_tool_result(link.call if link else None, message.text))


def prune_old(
    messages: Sequence[Message],
    links: Mapping[int, ToolLink],
    *,
    end: int,
    min_prune_chars: int,
    keep: frozenset[str] = frozenset(),
) -> tuple[list[Message], dict[int, PruneKind]]:
    """Prune tool traffic before index `end` (the protected tail starts there).

    Older copies of an identical tool output (compared against every later
    output, the tail included) become a duplicate placeholder; other tool
    results longer than `min_prune_chars` become one informative line; tool
    call arguments over 500 chars are shrunk while staying valid JSON.
    """
    out = list(messages)
    touched: dict[int, PruneKind] = {}
    seen: set[str] = set()
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "tool" or not isinstance(message.content, str) or _kept(message, links, index, keep):
            continue
        text = message.content
        if len(text) >= DUPLICATE_MIN_CHARS:
            if index < end and text in seen:
                out[index] = message.with_content(DUPLICATE_PLACEHOLDER)
                touched[index] = "duplicate"
                continue
            seen.add(text)
        if index < end and len(text) > min_prune_chars:
            out[index] = _one_line(message, links, index)
            touched[index] = "one_line"
    for index in range(min(end, len(messages))):
        message = messages[index]
        if message.role != "assistant" or not message.tool_calls:
            continue
        if all(len(call.arguments) <= ARGUMENT_LIMIT_CHARS for call in message.tool_calls):
            continue
        calls = tuple(
            replace(call, arguments=truncate_arguments(call.arguments, limit=ARGUMENT_LIMIT_CHARS))
            for call in message.tool_calls
        )
        if calls != message.tool_calls:
            out[index] = replace(message, tool_calls=calls)
            touched[index] = "arguments"
    return out, touched


def relieve_tail_pressure(
    tail: Sequence[Message],
    tokens: Sequence[int],
    links: Mapping[int, ToolLink],
    *,
    offset: int,
    budget: int,
    min_prune_chars: int,
    counter: TokenCounter,
    keep: frozenset[str] = frozenset(),
) -> tuple[list[Message], list[int], dict[int, PruneKind]]:
    """Downgrade bulky tool outputs inside the tail while it exceeds 1.5 x its budget.

    The biggest results go first and the newest `PRESSURE_KEEP_RECENT`
    messages are never touched. `offset` is the tail's index in the session
    (for `links` and the returned indices). Returns the tail, its token counts
    and the touched session indices.
    """
    out, counts = list(tail), list(tokens)
    touched: dict[int, PruneKind] = {}
    limit = int(budget * PRESSURE_FACTOR)
    total = sum(counts)
    if total <= limit:
        return out, counts, touched
    candidates = sorted(
        (
            position
            for position in range(max(0, len(out) - PRESSURE_KEEP_RECENT))
            if out[position].role == "tool" and len(out[position].text) > min_prune_chars
            and not _kept(out[position], links, offset + position, keep)
        ),
        key=lambda position: counts[position],
        reverse=True,
    )
    for position in candidates:
        if total <= limit:
            break
        replacement = _one_line(out[position], links, offset + position)
        new_count = counter.count_message(replacement)
        total += new_count - counts[position]
        out[position], counts[position] = replacement, new_count
        touched[offset + position] = "pressure"
    return out, counts, touched


def cap_oversized(
    tail: Sequence[Message],
    tokens: Sequence[int],
    *,
    offset: int,
    budget: int,
    counter: TokenCounter,
) -> tuple[list[Message], list[int], dict[int, PruneKind]]:
    """Cut tool outputs bigger than the whole tail budget to their head and tail, while the tail is over 1.5x budget.

    One result can be larger than the model's window (a submitted 800K-char
    diff); kept verbatim it would leave the session over the threshold
    forever. The biggest go first; each keeps its start and end around an
    explicit elision marker.
    """
    out, counts = list(tail), list(tokens)
    touched: dict[int, PruneKind] = {}
    limit = int(budget * PRESSURE_FACTOR)
    total = sum(counts)
    candidates = sorted(
        (p for p, m in enumerate(tail) if m.role == "tool" and counts[p] > budget and isinstance(m.content, str)),
        key=lambda p: counts[p],
        reverse=True,
    )
    for position in candidates:
        if total <= limit:
            break
        text = tail[position].text
        chars_per_token = len(text) / max(1, counts[position])
        keep = max(200, int(budget // 2 * chars_per_token))
        head, end = keep * 2 // 3, keep // 3
        cut = text[:head] + OVERSIZE_MARKER.format(elided=len(text) - head - end) + text[len(text) - end:]
        replacement = tail[position].with_content(cut)
        new_count = counter.count_message(replacement)
        total += new_count - counts[position]
        out[position], counts[position] = replacement, new_count
        touched[offset + position] = "oversize"
    return out, counts, touched


def proactive_candidates(
    messages: Sequence[Message],
    links: Mapping[int, ToolLink],
    *,
    end: int,
    min_result_chars: int,
    keep: frozenset[str] = frozenset(),
) -> tuple[list[Message], dict[int, PruneKind], int]:
    """One-line every tool result over `min_result_chars` before `end`; also return the estimated reclaim."""
    out = list(messages)
    touched: dict[int, PruneKind] = {}
    reclaimed = 0
    for index in range(min(end, len(messages))):
        message = messages[index]
        if message.role != "tool" or not isinstance(message.content, str) or len(message.content) <= min_result_chars:
            continue
        if _kept(message, links, index, keep):
            continue
        replacement = _one_line(message, links, index)
        reclaimed += estimate_tokens(message.content) - estimate_tokens(replacement.text)
        out[index] = replacement
        touched[index] = "one_line"
    return out, touched, reclaimed
