"""The compression threshold (docs/design.md §3.3): when a prompt is big enough to compress.

Owns the threshold arithmetic, the per-model ratio override and the tail and
summary budgets derived from it. Pure functions of numbers and names; knows
nothing of messages or state.
"""
from __future__ import annotations

from collections.abc import Mapping

# Big windows do not compress early: the threshold never drops below this.
MINIMUM_CONTEXT_LENGTH = 64_000
# ...and never reaches the window: at most 85% of it.
MAX_TRIGGER_RATIO = 0.85
# Summary budget (docs/design.md §3.5 step 5): 20% of the summarised content, within bounds.
SUMMARY_RATIO = 0.20
MIN_SUMMARY_TOKENS = 2_000
SUMMARY_WINDOW_RATIO = 0.05
SUMMARY_TOKENS_CEILING = 12_000


def effective_window(context_length: int, max_tokens: int | None) -> int:
    """The input budget: the window minus the reply reservation (the window itself if that leaves nothing)."""
    window = context_length - (max_tokens or 0)
    return window if window > 0 else context_length


def threshold_ratio(model: str, default: float, model_thresholds: Mapping[str, float]) -> float:
    """The trigger ratio for `model`: the longest matching `model_thresholds` substring wins.

    Matching is case-insensitive; the longest key wins so that `gpt-4o-mini`
    can override a broader `gpt-4o` entry regardless of mapping order.
    """
    lowered = model.lower()
    best: tuple[int, float] | None = None
    for key, ratio in model_thresholds.items():
        if key and key.lower() in lowered and (best is None or len(key) > best[0]):
            best = (len(key), ratio)
    return best[1] if best is not None else default


def compute_threshold(
    context_length: int,
    ratio: float,
    *,
    max_tokens: int | None = None,
    threshold_tokens: int | None = None,
) -> int:
    """docs/design.md §3.3 exactly: ratio of the effective window, 64K floor, 85% cap, optional absolute cap."""
    window = effective_window(context_length, max_tokens)
    threshold = int(window * ratio)
    threshold = max(threshold, MINIMUM_CONTEXT_LENGTH)
    if threshold >= window:
        threshold = max(1, min(int(window * MAX_TRIGGER_RATIO), window - 1))
    if threshold_tokens is not None:
        threshold = min(threshold, threshold_tokens)
    return threshold


def tail_budget(threshold: int, target_ratio: float) -> int:
    """Tokens of recent context kept verbatim: threshold x target_ratio."""
    return max(1, int(threshold * target_ratio))


def summary_budget(content_tokens: int, context_length: int) -> int:
    """Target summary size: 20% of what is summarised, at least 2,000, at most min(5% window, 12,000).

    The floor wins over a small window's ceiling, so a summary always has room
    for the handoff template. Never sent as `max_tokens` (a cut summary is worse
    than a long one); it is a target in the prompt.
    """
    ceiling = min(int(context_length * SUMMARY_WINDOW_RATIO), SUMMARY_TOKENS_CEILING)
    return max(MIN_SUMMARY_TOKENS, min(int(content_tokens * SUMMARY_RATIO), ceiling))
