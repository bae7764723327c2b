"""Session hygiene: the safety net before the agent (docs/design.md §2.3).

Owns `HygieneDecision` and `check_hygiene`: compress when the session is past
a fixed 85% of the model's window (by the last real `prompt_tokens`, else a
character estimate) or past `hygiene_hard_message_limit` messages, unless the
previous hygiene run made no progress. Pure: the caller runs the compression,
at most once per inbound message. Knows nothing of platforms.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.messages import Message
from agent.tokens import IMAGE_TOKENS, estimate_tokens

HYGIENE_RATIO = 0.85
# Agent-state key remembering that the last hygiene run could not shrink the session.


@dataclass(frozen=True, slots=True)
class HygieneDecision:
    compress: bool
    reason: str
    tokens: int
    source: Literal["reported", "estimate"]
    threshold: int
    messages: int


def estimate_history_tokens(messages: Sequence[Message]) -> int:
    """A character estimate of the history (no tokenizer: hygiene must be cheap on huge sessions).

    Images count `IMAGE_TOKENS` each, as in the agent's own accounting (their base64 is never text).
    """
    return sum(estimate_tokens(m.text) + 4 + IMAGE_TOKENS * len(m.images) for m in messages)


def check_hygiene(
    messages: Sequence[Message],
    *,
    last_prompt_tokens: int,
    context_length: int,
    hard_message_limit: int,
    stalled_at: int | None,
) -> HygieneDecision:
    """Decide whether to compress before the agent runs.

    Args:
        messages: the session's history.
        last_prompt_tokens: the provider's last real reading (<= 0: none).
        context_length: the model's window.
        hard_message_limit: compress beyond this many messages whatever the tokens.
        stalled_at: message count at which the previous hygiene run made no progress (None: it did).
    """
    threshold = int(context_length * HYGIENE_RATIO)
    count = len(messages)
    if last_prompt_tokens > 0:
        tokens, source = last_prompt_tokens, "reported"
    else:
        tokens, source = estimate_history_tokens(messages), "estimate"
    source_kind: Literal["reported", "estimate"] = "reported" if last_prompt_tokens > 0 else "estimate"

    def decision(compress: bool, reason: str) -> HygieneDecision:
        return HygieneDecision(compress, reason, tokens, source_kind, threshold, count)

    over_tokens = tokens >= threshold
    over_count = count > hard_message_limit
    if not (over_tokens or over_count):
        return decision(False, "within limits")
    if stalled_at is not None:
        return decision(False, f"previous hygiene run made no progress at {stalled_at} messages")
    if over_count:
        return decision(True, f"{count} messages > hard limit {hard_message_limit}")
    return decision(True, f"{tokens} tokens ({source}) >= 85% of the window ({threshold})")

__all__ = ["HYGIENE_RATIO", "HygieneDecision", "check_hygiene", "estimate_history_tokens"]
