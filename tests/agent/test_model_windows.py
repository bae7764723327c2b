"""Learned windows: lowered by what providers state or prove, kept across restarts, logged once."""
from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from agent.model_windows import FileWindowStore, ModelEndpoint, ModelWindows

MAIN = ModelEndpoint(name="qwen", base_url="http://127.0.0.1:8000/v1", context_length=128_000)


def test_stated_window_is_kept_across_restarts_and_logged_once(tmp_path: Path) -> None:
    """8192 stated: the window drops to it, a warning names model.context_length once, a new process reads it."""
    store = FileWindowStore(tmp_path / "model_windows.json")
    windows = ModelWindows(MAIN, store)
    with capture_logs() as logs:
        assert windows.learn(MAIN, stated=8192, request_tokens=9000) == 8192
        assert windows.learn(MAIN, stated=200_000, request_tokens=9000) == 8192  # never raised by a bigger figure
    warnings = [entry for entry in logs if entry["event"] == "model.window_lowered"]
    assert len(warnings) == 1 and "model.context_length" in warnings[0]["fix"]
    assert ModelWindows(MAIN, FileWindowStore(tmp_path / "model_windows.json")).active_window() == 8192


def test_no_figure_shrinks_below_what_overflowed_step_by_step(tmp_path: Path) -> None:
    """Without a stated limit each overflow lowers the assumption to 3/4 of the request that failed."""
    windows = ModelWindows(MAIN, FileWindowStore(tmp_path / "w.json"))
    first = windows.learn(MAIN, stated=None, request_tokens=20_000)
    second = windows.learn(MAIN, stated=None, request_tokens=14_000)
    assert (first, second) == (15_000, 10_500)


def test_overflow_again_at_the_stated_window_leaves_a_margin(tmp_path: Path) -> None:
    """A provider tokenizer counting more than ours: the same stated figure again lowers the window by 10%."""
    windows = ModelWindows(MAIN, FileWindowStore(tmp_path / "w.json"))
    windows.learn(MAIN, stated=8192, request_tokens=9000)
    assert windows.learn(MAIN, stated=8192, request_tokens=8000) == 7372


def test_other_endpoints_keep_their_window(tmp_path: Path) -> None:
    """The same model name on another server is another window."""
    windows = ModelWindows(MAIN, FileWindowStore(tmp_path / "w.json"))
    windows.learn(MAIN, stated=4096, request_tokens=5000)
    other = ModelEndpoint(name="qwen", base_url="http://10.0.0.2:8000/v1", context_length=32_000)
    assert windows.window(other) == 32_000
