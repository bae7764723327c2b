"""LiveConfig: validated runtime changes, subscribers, file reload (API and SIGHUP), saving back to the file."""
from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from chorus_errors import ConfigError
from gateway.admin.config_file import save_changes
from gateway.config import ChorusConfig, load_config
from gateway.ops.live_config import ConfigChange, LiveConfig, install_sighup

CONFIG_TEXT = """\
# operator's notes stay
model:
  name: m1
  api_key: ${CHORUS_TEST_KEY:-sk-test-not-real}
compression:
  threshold: 0.50                   # compress at half the window
  hygiene_hard_message_limit: 5000  # safety net
admin:
  port: 9090
"""


def write(tmp_path: Path, text: str = CONFIG_TEXT) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_update_applies_a_valid_change_and_tells_subscribers() -> None:
    """A valid change swaps the config, bumps the version and calls subscribers with (old, new)."""
    live = LiveConfig(ChorusConfig())
    seen: list[tuple[float, float]] = []
    live.subscribe(lambda old, new: seen.append((old.compression.threshold, new.compression.threshold)))
    change = live.update({"compression.threshold": 0.7}, who="test")
    assert (live.current().compression.threshold, live.version, seen) == (0.7, 1, [(0.5, 0.7)])
    assert [(c.key, c.old, c.new) for c in change.changes] == [("compression.threshold", 0.5, 0.7)]


@pytest.mark.parametrize(
    ("changes", "key", "words"),
    [
        ({"compression.threshold": 1.5}, "compression.threshold", "less than or equal to 1"),
        ({"compression.hygiene_hard_message_limit": 3}, "compression.hygiene_hard_message_limit", "greater than or equal to 10"),
        ({"compression.enabled": "maybe"}, "compression.enabled", "valid boolean"),
        ({"compression.nope": 1}, "compression.nope", "unknown key"),
        ({"admin.port": 9999}, "admin.port", "restart needed: admin.port"),
    ],
)
def test_invalid_changes_are_rejected_whole_naming_the_key(changes: dict[str, object], key: str, words: str) -> None:
    """An invalid value, an unknown key or a start-only key raises ConfigError naming the key; nothing changes."""
    live = LiveConfig(ChorusConfig())
    with pytest.raises(ConfigError) as caught:
        live.update({"compression.protect_last_n": 30, **changes})
    assert (caught.value.key, key in str(caught.value), words in str(caught.value)) == (key, True, True)
    assert (live.current(), live.version) == (ChorusConfig(), 0)


def test_reload_applies_live_keys_and_reports_restart_only_keys(tmp_path: Path) -> None:
    """A changed file: live keys take effect, start-only keys are listed as restart_required and not applied."""
    path = write(tmp_path)
    live = LiveConfig(load_config(path), path=path)
    path.write_text(CONFIG_TEXT.replace("0.50 ", "0.65 ").replace("port: 9090", "port: 9191"), encoding="utf-8")
    change = live.reload()
    assert [c.key for c in change.changes] == ["compression.threshold"]
    assert change.restart_required == ("admin.port",)
    assert (live.current().compression.threshold, live.current().admin.port) == (0.65, 9090)


def test_reload_of_an_invalid_file_keeps_the_running_config(tmp_path: Path) -> None:
    """An invalid file is rejected naming the key; the running config stays."""
    path = write(tmp_path)
    live = LiveConfig(load_config(path), path=path)
    path.write_text(CONFIG_TEXT.replace("0.50 ", "7 "), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        live.reload()
    assert caught.value.key == "compression.threshold"
    assert (live.current().compression.threshold, live.version) == (0.5, 0)


async def test_sighup_reloads_the_file_and_ignores_an_invalid_one(tmp_path: Path) -> None:
    """SIGHUP to this process: a valid edit is picked up; an invalid one is rejected and the old config kept."""
    path = write(tmp_path)
    live = LiveConfig(load_config(path), path=path)
    outcomes: asyncio.Queue[ConfigChange | None] = asyncio.Queue()
    remove = install_sighup(asyncio.get_running_loop(), live, path, on_done=outcomes.put_nowait)
    try:
        path.write_text(CONFIG_TEXT.replace("0.50 ", "0.6 "), encoding="utf-8")
        os.kill(os.getpid(), signal.SIGHUP)
        first = await asyncio.wait_for(outcomes.get(), 5)
        path.write_text(CONFIG_TEXT.replace("0.50 ", "not-a-number "), encoding="utf-8")
        os.kill(os.getpid(), signal.SIGHUP)
        second = await asyncio.wait_for(outcomes.get(), 5)
    finally:
        remove()
    assert first is not None and [c.key for c in first.changes] == ["compression.threshold"]
    assert second is None
    assert (live.current().compression.threshold, live.version) == (0.6, 1)


def test_save_changes_edits_values_in_place_keeping_comments(tmp_path: Path) -> None:
    """Saving edits only the changed values: comments, other keys and ${ENV} references stay as written."""
    path = write(tmp_path)
    result = save_changes(path, {"compression.threshold": 0.6, "compression.protect_last_n": 12})
    text = path.read_text(encoding="utf-8")
    assert result.mode == "edited"
    assert "  threshold: 0.6                    # compress at half the window\n" in text
    assert "  protect_last_n: 12\n" in text
    assert "# operator's notes stay\n" in text and "${CHORUS_TEST_KEY:-sk-test-not-real}" in text
    loaded = load_config(path)
    assert (loaded.compression.threshold, loaded.compression.protect_last_n) == (0.6, 12)


def test_save_changes_rewrites_a_flow_style_section(tmp_path: Path) -> None:
    """A flow-style section cannot be edited in place: the file is rewritten (comments lost) and still loads."""
    path = write(tmp_path, "# gone after a rewrite\ncompression: {threshold: 0.5}\n")
    result = save_changes(path, {"compression.hygiene_hard_message_limit": 200})
    loaded = load_config(path)
    assert (result.mode, loaded.compression.hygiene_hard_message_limit, loaded.compression.threshold) == (
        "rewritten", 200, 0.5
    )


def test_save_changes_replaces_a_value_written_as_a_nested_block(tmp_path: Path) -> None:
    """model_thresholds written as a nested block is replaced by the new value on its line; comments stay."""
    path = write(tmp_path, "# kept\ncompression:\n  model_thresholds:\n    gpt-4o: 0.6\n  threshold: 0.5  # half\n")
    result = save_changes(path, {"compression.model_thresholds": {"gpt-4o": 0.7, "mini": 0.4}})
    loaded = load_config(path)
    assert (result.mode, loaded.compression.model_thresholds, loaded.compression.threshold) == (
        "edited", {"gpt-4o": 0.7, "mini": 0.4}, 0.5
    )
    assert "# kept\n" in path.read_text(encoding="utf-8") and "0.5  # half" in path.read_text(encoding="utf-8")


def test_save_changes_edits_nested_sections_and_lists_in_place(tmp_path: Path) -> None:
    """platforms.telegram.allowed_users written as a `- item` list: replaced on its line, other keys and comments
    kept; a key of a missing section is added at the end, still without a rewrite."""
    path = write(tmp_path, "platforms:\n  telegram:  # the bot\n    enabled: true\n    allowed_users:\n    - '1'\n"
                           "    admins: ['1']  # ops\n  web:\n    enabled: false\n")
    result = save_changes(path, {"platforms.telegram.allowed_users": ["1", "2"], "limits.per_user.tokens_per_day": 5})
    loaded = load_config(path)
    text = path.read_text(encoding="utf-8")
    assert result.mode == "edited"
    assert loaded.platforms.telegram.allowed_users == ["1", "2"] and loaded.platforms.telegram.admins == ["1"]
    assert loaded.limits.per_user.tokens_per_day == 5 and loaded.platforms.web.enabled is False
    assert "  telegram:  # the bot\n" in text and "admins: ['1']  # ops\n" in text
