"""Every key is live but those of the restart table, and each live key has a running part that follows it.

The tables themselves (`RESTART_KEYS`, `FOLLOWERS`) are checked against the schema, so a key added to
`ChorusConfig` fails here until it is followed or listed; the schema walker makes a value for every key;
and in one process, a platform whose keys changed is restarted alone: a reply in flight on another
platform finishes, and a new config that cannot start is reported by readiness, not raised.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from chorus_errors import ConfigError
from gateway.config import ChorusConfig, load_config
from gateway.live_parts import FOLLOWERS, redactor, unfollowed
from gateway.ops.live_config import LIVE_KEYS, RESTART_KEYS, LiveConfig, flatten, restart_needed
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.config_walk import changed_value
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus, until

KEYS = sorted(flatten(ChorusConfig()))


def test_every_live_key_is_followed_by_a_running_part() -> None:
    assert unfollowed() == []
    assert set(KEYS) == LIVE_KEYS | {key for key in KEYS if restart_needed(key)}


def test_the_restart_table_names_keys_of_the_schema() -> None:
    """An entry that names no key (a renamed one) would silently make nothing restart-only."""
    for entry in RESTART_KEYS:
        assert any(key == entry or key.startswith(f"{entry}.") for key in KEYS), entry
    assert restart_needed("admin.port") and restart_needed("logging.level") and restart_needed("home")
    assert not restart_needed("agent.system_prompt") and not restart_needed("platforms.telegram.token")
    assert not restart_needed("admin.portal")  # a section entry covers its keys, not a longer name


def test_follower_keys_name_keys_of_the_schema() -> None:
    for follower in FOLLOWERS:
        for mine in follower.keys:
            assert any(key == mine or key.startswith(f"{mine}.") for key in KEYS), (follower.part, mine)


def test_the_walker_makes_a_changed_value_for_every_live_key() -> None:
    """The two-replica walk's values, made here in one process (no key is left for it to fail on)."""
    live = LiveConfig(ChorusConfig())
    for key in KEYS:
        if not restart_needed(key):
            live.update({key: changed_value(live, key)})


def test_a_change_with_restart_keys_names_each_and_applies_nothing() -> None:
    live = LiveConfig(ChorusConfig())
    with pytest.raises(ConfigError) as caught:
        live.update({"compression.threshold": 0.61, "admin.port": 9999, "home": "/elsewhere"})
    assert "restart needed: admin.port (the admin listener binds at start)" in str(caught.value)
    assert "restart needed: home (" in str(caught.value)
    assert live.current().compression.threshold != 0.61 and live.version == 0


def test_a_reload_applies_the_live_keys_and_keeps_the_restart_ones(tmp_path: Path) -> None:
    """SIGHUP and POST /api/config/reload: the file's live keys apply, a restart key is reported and kept."""
    path = tmp_path / "chorus.yaml"
    path.write_text("admin:\n  port: 9090\n", encoding="utf-8")
    live = LiveConfig(load_config(path), path=path)
    path.write_text("admin:\n  port: 9191\nagent:\n  system_prompt: Hello\n", encoding="utf-8")
    with capture_logs() as logs:
        change = live.reload(who="sighup")
    assert change.restart_required == ("admin.port",)
    assert (live.current().admin.port, live.current().agent.system_prompt) == (9090, "Hello")
    (line,) = [entry for entry in logs if entry["event"] == "config.restart_required"]
    assert "restart needed: admin.port (the admin listener binds at start)" in line["note"]


def test_an_error_quoting_a_secret_of_the_config_shows_it_hidden() -> None:
    config = ChorusConfig.model_validate({"platforms": {"telegram": {"token": "123:SECRET-abc"}}})
    text = redactor(config)("rejected 123:SECRET-abc at http://x/bot123:SECRET-abc/getMe")
    assert text == "rejected <hidden> at http://x/bot<hidden>/getMe"


def test_a_mistyped_key_gets_a_did_you_mean() -> None:
    with pytest.raises(ConfigError, match="did you mean platforms.telegram.token"):
        LiveConfig(ChorusConfig()).update({"platforms.telegram.tokn": "x"})


async def test_a_platform_that_cannot_start_is_reported_while_others_keep_replying(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Discord enabled without a token: readiness names it; the Telegram reply in flight still arrives."""
    held = asyncio.Event()
    fake_openai.push(Reply(content="the slow answer", gate=held))
    telegram = FakePlatform("telegram")
    config = make_config(tmp_path / "home", fake_openai.base_url,
                         platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}})
    async with run_like_chorus(config, adapters={"telegram": telegram}) as (gateway, ops):
        await telegram.inject("hello")
        await fake_openai.wait_for_request()
        with capture_logs() as logs:
            ops.live.update({"platforms.discord.token": "discord-secret-0042", "platforms.discord.enabled": True})

            async def reported() -> str | None:
                report = await gateway.readiness()
                return report.detail if not report.adapters_started and "adapter discord" in report.detail else None

            detail = await until(reported, timeout=30.0)
        held.set()
        assert await telegram.wait_final("the slow answer") == "the slow answer"
        assert telegram.queue is not None  # never restarted: its keys did not change
        ops.live.update({"platforms.discord.enabled": False})

        async def cleared() -> bool | None:
            return True if (await gateway.readiness()).ready else None

        await until(cleared, timeout=30.0)
    assert "did not start after a config change" in detail
    assert "discord-secret-0042" not in repr(logs)
    assert [e["platform"] for e in logs if e["event"] == "adapter.restart_failed"] == ["discord"]


async def test_a_first_model_applies_without_a_restart(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """Started with no model: the chat is told how to set one; once model.* is set live, the next message is answered."""
    telegram = FakePlatform("telegram")
    config = make_config(tmp_path / "home", fake_openai.base_url, model={"name": None, "base_url": None, "api_key": None},
                         platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}})
    fake_openai.push(Reply(content="hello from the first model"))
    async with run_like_chorus(config, adapters={"telegram": telegram}) as (_gateway, ops):
        await telegram.inject("hello?")
        told = await telegram.wait_final("No model is configured yet")
        ops.live.update({"model.name": "fake-model", "model.base_url": fake_openai.base_url,
                         "model.api_key": "sk-test-not-real"})
        await telegram.inject("and now?")
        answered = await telegram.wait_final("hello from the first model", timeout=30.0)
    assert "no restart needed" in told and "dashboard" in told
    assert answered == "hello from the first model" and len(fake_openai.requests) == 1
