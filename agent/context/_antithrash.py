"""Anti-thrash and cooldown rules (docs/design.md §3.4) as transitions of `EngineState`.

Owns when automatic compression is blocked (two ineffective or two fallback
compressions in a row, then one probe after 300 s), the summary-model failure
cooldowns (600 s when no provider is configured, 60 -> 300 -> 900 s
otherwise), how a real `prompt_tokens` reading judges the last compression,
and what `/compress` clears. Every function takes the time as a number; the
clock lives with the caller.
"""
from __future__ import annotations

from agent.context.engine import EngineState, SummaryKind

BLOCK_SECONDS = 300.0
INEFFECTIVE_LIMIT = 2
FALLBACK_LIMIT = 2
MIN_SAVINGS_RATIO = 0.10
NOT_CONFIGURED_COOLDOWN = 600.0
COOLDOWN_LADDER = (60.0, 300.0, 900.0)


def block_reason(state: EngineState, now: float) -> str | None:
    """Why automatic compression may not run now, or None."""
    if state.cooldown_until > now:
        return f"summary model cooling down for {state.cooldown_until - now:.0f}s after a failure"
    if state.blocked_until > now:
        if state.fallback_streak >= FALLBACK_LIMIT:
            return f"{state.fallback_streak} fallback summaries in a row; next try in {state.blocked_until - now:.0f}s"
        return f"{state.ineffective_streak} ineffective compressions in a row; next try in {state.blocked_until - now:.0f}s"
    return None


def _maybe_block(state: EngineState, now: float) -> None:
    if state.ineffective_streak >= INEFFECTIVE_LIMIT or state.fallback_streak >= FALLBACK_LIMIT:
        state.blocked_until = now + BLOCK_SECONDS
        state.blocked_notice_sent = False


def is_effective(tokens_before: int, tokens_after: int) -> bool:
    """Saved at least 10%."""
    return tokens_before > 0 and tokens_after <= tokens_before * (1 - MIN_SAVINGS_RATIO)


def record_compression(
    state: EngineState, now: float, *, tokens_before: int, tokens_after: int, kind: SummaryKind,
    shrank_count: bool = False,
) -> None:
    """Count one finished compression and judge it by its savings (or, past the hard limit, by the message count)."""
    state.compression_count += 1
    state.last_compressed_at = now
    state.last_prompt_tokens = -1
    state.awaiting_usage = True
    state.usage_fits = False
    # Only a real reading below the threshold resets the streak (record_usage):
    # a big saving that still leaves the prompt over the threshold is thrash too.
    ineffective = not (shrank_count or is_effective(tokens_before, tokens_after))
    if ineffective:
        state.ineffective_streak += 1
    if kind == "fallback":
        state.fallback_streak += 1
    elif kind == "llm":
        state.fallback_streak = 0
    if (ineffective and state.ineffective_streak >= INEFFECTIVE_LIMIT) or (
        kind == "fallback" and state.fallback_streak >= FALLBACK_LIMIT
    ):
        _maybe_block(state, now)


def record_no_gain(state: EngineState, now: float) -> None:
    """A compression that changed nothing is ineffective too."""
    state.ineffective_streak += 1
    _maybe_block(state, now)


def record_usage(state: EngineState, now: float, prompt_tokens: int, threshold: int) -> None:
    """A real provider reading: the first one after a compression judges it; any reading below resets."""
    if prompt_tokens < threshold:
        state.ineffective_streak = 0
        if state.fallback_streak < FALLBACK_LIMIT:
            state.blocked_until = 0.0
        if state.awaiting_usage:
            state.usage_fits = True
    elif state.awaiting_usage:
        state.ineffective_streak += 1
        _maybe_block(state, now)
    state.awaiting_usage = False
    state.last_prompt_tokens = prompt_tokens


def record_summary_failure(state: EngineState, now: float, *, not_configured: bool) -> float:
    """Start a cooldown after a summary-model failure; returns its length in seconds."""
    if not_configured:
        seconds = NOT_CONFIGURED_COOLDOWN
    else:
        seconds = COOLDOWN_LADDER[min(state.cooldown_step, len(COOLDOWN_LADDER) - 1)]
        state.cooldown_step += 1
    state.cooldown_until = now + seconds
    return seconds


def record_summary_success(state: EngineState) -> None:
    state.cooldown_step = 0
    state.cooldown_until = 0.0


def clear_blocks(state: EngineState) -> None:
    """`/compress`: forget cooldowns, blocks and streaks."""
    state.blocked_until = 0.0
    state.blocked_notice_sent = False
    state.cooldown_until = 0.0
    state.cooldown_step = 0
    state.ineffective_streak = 0
    state.fallback_streak = 0
