"""Where the protected head ends and the verbatim tail starts (docs/design.md §3.5 steps 2-4).

Owns head protection (the system prompt always; `protect_first_n` more
messages on the first compression only), the token-budget tail walk with its
guarantees (a message floor, the latest user message, the latest assistant
message with text, `min_tail_user_messages`), and tool-group alignment of both
boundaries. Real tokens are counted only for messages that stay (the tail);
the span that will be summarised is sized with the character estimate.
Pure functions; knows nothing of summaries or state.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.context._handoff import is_real_user
from agent.context._pairing import group_end, group_start
from agent.messages import Message
from agent.tokens import TokenCounter, estimate_tokens

TAIL_FLOOR_CAP = 8  # the message floor is min(protect_last_n, 8)
# A tool output longer than budget x this many chars is over 3x the tail budget
# at any plausible tokenisation: it will be cut to its head and tail, so its
# size is estimated instead of tokenised.
OVERSIZE_CHARS_PER_TOKEN = 12


@dataclass(frozen=True, slots=True)
class Split:
    """A partition of the session: head | middle (with pinned messages) | tail.

    `pinned` are indices inside the middle kept verbatim (the latest user
    message when it is older than the budget tail: an agent session's single
    task message must survive without dragging hundreds of turns into the
    tail). `tail_tokens[i]` is the real token count of `messages[tail_start + i]`.
    """

    head_end: int
    tail_start: int
    pinned: tuple[int, ...]
    tail_tokens: tuple[int, ...]

    def middle(self) -> range:
        return range(self.head_end, self.tail_start)

    def summarised(self) -> list[int]:
        pinned = set(self.pinned)
        return [index for index in self.middle() if index not in pinned]


def head_size(messages: Sequence[Message], protect_first_n: int) -> int:
    """Leading system messages, plus `protect_first_n` more, never ending inside a tool group."""
    index = 0
    while index < len(messages) and messages[index].role == "system":
        index += 1
    index = min(len(messages), index + protect_first_n)
    return group_end(messages, index)


def _estimate(messages: Sequence[Message], start: int, end: int) -> int:
    total = 0
    for message in messages[start:end]:
        total += estimate_tokens(message.text) + 4
        for call in message.tool_calls:
            total += estimate_tokens(call.arguments) + 8
    return total


def _tail_tokens(message: Message, budget: int, counter: TokenCounter) -> int:
    """Real tokens, except for a tool output so big it will be cut anyway (never tokenise what is thrown away)."""
    if message.role == "tool" and isinstance(message.content, str) and len(message.content) > budget * OVERSIZE_CHARS_PER_TOKEN:
        return estimate_tokens(message.content) + 4
    return counter.count_message(message)


def _walk_back(
    messages: Sequence[Message], head_end: int, budget: int, floor: int, counter: TokenCounter, cap: int
) -> tuple[int, list[int]]:
    """Walk back from the end until the budget (or the `cap` on messages) is used, keeping at least `floor`."""
    counts: list[int] = []
    used = 0
    start = len(messages)
    for index in range(len(messages) - 1, head_end - 1, -1):
        kept = len(messages) - start
        if kept >= floor and (used >= budget or kept >= cap):
            break
        tokens = _tail_tokens(messages[index], budget, counter)
        if kept >= floor and used + tokens > budget:
            break
        used += tokens
        start = index
        counts.append(tokens)
    counts.reverse()
    return start, counts


def _extend(
    messages: Sequence[Message], start: int, new_start: int, counts: list[int], counter: TokenCounter
) -> tuple[int, list[int]]:
    if new_start >= start:
        return start, counts
    extra = [counter.count_message(message) for message in messages[new_start:start]]
    return new_start, extra + counts


def find_split(
    messages: Sequence[Message],
    *,
    protect_first_n: int,
    budget: int,
    protect_last_n: int,
    min_tail_user_messages: int,
    counter: TokenCounter,
    max_tail_messages: int | None = None,
) -> Split:
    """Compute head, tail and pinned messages for one compression.

    `max_tail_messages` bounds the tail by count as well as by tokens (the hard
    message limit: many short lines fit any token budget); the bound yields
    only to whole tool groups, and the latest user message is pinned instead.
    """
    head_end = head_size(messages, protect_first_n)
    cap = max(1, max_tail_messages) if max_tail_messages is not None else len(messages)
    floor = min(protect_last_n, TAIL_FLOOR_CAP, cap)
    start, counts = _walk_back(messages, head_end, budget, floor, counter, cap)
    start, counts = _extend(messages, start, max(head_end, group_start(messages, start)), counts, counter)
    # The latest assistant message with text is always in the tail (unless that breaks the count bound).
    for index in range(len(messages) - 1, head_end - 1, -1):
        message = messages[index]
        if message.role == "assistant" and message.text.strip():
            if index < start and len(messages) - group_start(messages, index) <= cap:
                start, counts = _extend(messages, start, group_start(messages, index), counts, counter)
            break
    # The latest real user messages: in the tail when that costs at most one more
    # tail budget; otherwise the latest one is pinned, the older ones dropped.
    users = [index for index in range(len(messages) - 1, -1, -1) if is_real_user(messages[index])]
    wanted = users[: max(1, min_tail_user_messages)]
    pinned: tuple[int, ...] = ()
    for rank, index in enumerate(wanted):
        if index >= start or index < head_end:
            continue
        if _estimate(messages, index, start) <= budget and len(messages) - index <= cap:
            start, counts = _extend(messages, start, index, counts, counter)
        elif rank == 0:
            pinned = (index,)
    pinned = tuple(index for index in pinned if head_end <= index < start)
    return Split(head_end=head_end, tail_start=start, pinned=pinned, tail_tokens=tuple(counts))


def widen_tail(messages: Sequence[Message], split: Split, counter: TokenCounter) -> Split | None:
    """Move the tail start back by one message (one whole tool group); None if the middle would empty."""
    new_start = group_start(messages, split.tail_start - 1)
    if new_start <= split.head_end:
        return None
    start, counts = _extend(messages, split.tail_start, new_start, list(split.tail_tokens), counter)
    pinned = tuple(index for index in split.pinned if index < start)
    if not [index for index in range(split.head_end, start) if index not in pinned]:
        return None
    return Split(head_end=split.head_end, tail_start=start, pinned=pinned, tail_tokens=tuple(counts))
