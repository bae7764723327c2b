"""Threshold arithmetic of docs/design.md §3.3 and the budgets derived from it."""
from __future__ import annotations

import pytest

from agent.context.thresholds import compute_threshold, summary_budget, tail_budget, threshold_ratio
from tests.agent.context.compressor_helpers import make


@pytest.mark.parametrize(
    ("context_length", "ratio", "max_tokens", "cap", "expected"),
    [
        (200_000, 0.50, None, None, 100_000),  # plain ratio
        (128_000, 0.50, None, None, 64_000),  # exactly the 64K floor
        (100_000, 0.50, None, None, 64_000),  # floored up to 64K
        (32_000, 0.50, None, None, 27_200),  # floor >= window: 85% of the window
        (200_000, 0.50, 40_000, None, 80_000),  # the reply reservation comes off first
        (128_000, 0.50, 128_000, None, 64_000),  # reservation >= window: the window itself
        (1_000_000, 0.50, None, 150_000, 150_000),  # absolute cap wins
        (200_000, 0.95, None, None, 190_000),  # a high ratio is kept when below the window
        (70_000, 0.99, None, None, 69_300),  # high ratio, above the floor, below the window
        (64_000, 0.50, None, None, 54_400),  # floor == window -> 85%
    ],
)
def test_compute_threshold(context_length: int, ratio: float, max_tokens: int | None, cap: int | None, expected: int) -> None:
    """The threshold follows docs/design.md §3.3 step by step."""
    assert compute_threshold(context_length, ratio, max_tokens=max_tokens, threshold_tokens=cap) == expected


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o-mini-2024", 0.3),  # the longest matching key wins
        ("GPT-4O-2024", 0.4),  # case-insensitive
        ("glm-5.2-air", 0.6),
        ("claude-3", 0.5),  # no match: the default
    ],
)
def test_threshold_ratio_by_substring(model: str, expected: float) -> None:
    """model_thresholds overrides the ratio by model-name substring."""
    overrides = {"gpt-4o": 0.4, "gpt-4o-mini": 0.3, "glm-5.2": 0.6}
    assert threshold_ratio(model, 0.5, overrides) == expected


def test_engine_threshold_uses_model_thresholds_and_cap() -> None:
    """The compressor's threshold_tokens applies the model override, then the absolute cap."""
    engine = make(context_length=400_000, model_thresholds={"test-model": 0.25}, threshold_tokens=90_000)
    assert engine.threshold_tokens == 90_000
    assert make(context_length=400_000, model_thresholds={"test-model": 0.25}).threshold_tokens == 100_000


@pytest.mark.parametrize(
    ("content", "window", "expected"),
    [
        (1_000, 128_000, 2_000),  # floor
        (30_000, 128_000, 6_000),  # 20%
        (200_000, 128_000, 6_400),  # 5% of the window
        (500_000, 1_000_000, 12_000),  # absolute ceiling
        (50_000, 16_000, 2_000),  # the floor beats a small window's ceiling
    ],
)
def test_summary_budget(content: int, window: int, expected: int) -> None:
    """Summary budget = 20% of the content, >= 2,000, <= min(5% window, 12,000)."""
    assert summary_budget(content, window) == expected


def test_tail_budget_is_threshold_times_ratio() -> None:
    """The tail budget is threshold x target_ratio."""
    assert tail_budget(64_000, 0.20) == 12_800
    assert make(context_length=128_000, target_ratio=0.25).tail_budget == 16_000


def test_engine_threshold_follows_the_window_and_the_model() -> None:
    """threshold_tokens is kept between reads, but a new window (learned, a fallback) or model changes it at once."""
    from agent.context.compressor import ContextCompressor
    from agent.settings import CompressionSettings
    from agent.tokens import estimate_counter

    class Window:
        tokens = 400_000

        def active_window(self) -> int:
            return self.tokens

    window = Window()
    engine = ContextCompressor(CompressionSettings(model_thresholds={"small": 0.25}), context_length=400_000,
                               model="big", counter=estimate_counter(), window=window)
    first = engine.threshold_tokens
    assert engine.threshold_tokens == first
    window.tokens = 200_000
    assert engine.threshold_tokens == compute_threshold(200_000, CompressionSettings().threshold)
    engine.on_model_switch("small")
    assert engine.threshold_tokens == compute_threshold(200_000, 0.25)
