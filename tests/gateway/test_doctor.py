"""`chorus doctor` against real local services: Redis, the fake OpenAI server, the fake Slack."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import yaml

from agent.model_windows import FileWindowStore, LearnedWindow, window_key
from gateway.cli import main
from gateway.cli.doctor import handle
from tests.fakes.discord_api import TOKEN as DISCORD_TOKEN
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack
from tests.fakes.telegram_api import TOKEN as TELEGRAM_TOKEN
from tests.fakes.telegram_api import FakeTelegram


def _write(tmp_path: Path, config: dict[str, object]) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _rows(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, object]]:
    return {row["check"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}


async def _doctor(path: str) -> int:
    return await handle(argparse.Namespace(config=path, json=True))


async def test_all_checks_pass(tmp_path: Path, fake_openai: FakeOpenAI, redis_url: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """With Redis, the model and Slack all reachable, every check passes and the exit code is 0."""
    async with FakeSlack() as slack:
        path = _write(tmp_path, {
            "home": str(tmp_path / "home"),
            "model": {"name": "m", "base_url": fake_openai.base_url, "api_key": "sk-secret-value"},
            "redis": {"url": redis_url},
            "admin": {"port": 0},
            "platforms": {"slack": {"enabled": True, "bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET,
                                    "api_base_url": slack.api_base_url}, "web": {"port": 0}},
        })
        code = await _doctor(path)
    rows = _rows(capsys)
    assert code == 0
    assert {name: row["ok"] for name, row in rows.items()} == {
        "config": True, "home": True, "ports": True, "store": True, "redis": True, "model": True, "auxiliary.compression": True,
        "platforms.slack": True, "platforms.web.auth": True, "context.engine": True, "memory.provider": True}


async def test_failures_name_the_fix_and_hide_secrets(tmp_path: Path, fake_openai: FakeOpenAI,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Unreachable Redis, a 401 model, a too-small summary window and a bad Slack token each fail with a fix."""
    fake_openai.push(Reply(status=401))
    async with FakeSlack() as slack:
        path = _write(tmp_path, {
            "home": str(tmp_path / "home"),
            "model": {"name": "m", "base_url": fake_openai.base_url, "api_key": "sk-secret-value",
                      "context_length": 128000},
            "auxiliary": {"compression": {"context_length": 32000}},
            "redis": {"url": "redis://127.0.0.1:1/0"},
            "platforms": {"slack": {"enabled": True, "bot_token": "xoxb-wrong-token", "signing_secret": SIGNING_SECRET,
                                    "api_base_url": slack.api_base_url}},
        })
        code = await _doctor(path)
    output = capsys.readouterr().out
    rows = {row["check"]: row for row in map(json.loads, output.splitlines())}
    assert code == 1
    assert {name: row["ok"] for name, row in rows.items() if not row["ok"]} == {
        "redis": False, "model": False, "auxiliary.compression": False, "platforms.slack": False}
    assert rows["model"]["fix"] == "check model.api_key"
    assert "redis.url" in str(rows["redis"]["fix"])
    assert "platforms.slack.bot_token" in str(rows["platforms.slack"]["detail"])
    assert "sk-secret-value" not in output and "xoxb-wrong-token" not in output


def test_no_model_says_what_to_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With no model configured, doctor fails and names the keys to set."""
    path = _write(tmp_path, {"home": str(tmp_path / "home")})
    code = main(["doctor", "--config", path])
    output = capsys.readouterr().out
    assert code == 1
    assert "FAIL model: no model configured" in output and "set model.name" in output


def test_invalid_config_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid config is exit code 2 with the key in the message."""
    path = _write(tmp_path, {"compression": {"threshold": 3}})
    code = main(["doctor", "--config", path])
    assert code == 2
    assert "compression.threshold: got 3" in capsys.readouterr().err


async def test_every_platform_is_probed(tmp_path: Path, fake_openai: FakeOpenAI,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Telegram, Discord and Slack enabled at once: each is reported reachable, or why not when its token is wrong."""
    async with FakeTelegram() as telegram, FakeDiscord() as discord_fake, FakeSlack() as slack:
        platforms = {
            "telegram": {"enabled": True, "token": TELEGRAM_TOKEN, "base_url": f"http://127.0.0.1:{telegram.port}/"},
            "discord": {"enabled": True, "token": DISCORD_TOKEN, "api_base_url": discord_fake.api_base_url,
                        "gateway_url": discord_fake.gateway_url},
            "slack": {"enabled": True, "bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET,
                      "api_base_url": slack.api_base_url},
        }
        base = {"home": str(tmp_path / "home"), "model": {"name": "m", "base_url": fake_openai.base_url},
                "admin": {"port": 0}}
        platforms["web"] = {"port": 0}
        good = await _doctor(_write(tmp_path, {**base, "platforms": platforms}))
        good_rows = _rows(capsys)
        platforms["telegram"]["token"] = "999:wrong-token-value"
        platforms["discord"]["token"] = "wrong-discord-token"
        bad = await _doctor(_write(tmp_path, {**base, "platforms": platforms}))
        output = capsys.readouterr().out
    bad_rows = {row["check"]: row for row in map(json.loads, output.splitlines())}
    names = ("platforms.telegram", "platforms.discord", "platforms.slack")
    assert (good, [good_rows[n]["ok"] for n in names]) == (0, [True, True, True])
    assert (bad, [bad_rows[n]["ok"] for n in names]) == (1, [False, False, True])
    assert "platforms.telegram.token" in str(bad_rows["platforms.telegram"]["detail"])
    assert "platforms.discord.token" in str(bad_rows["platforms.discord"]["detail"])
    assert "wrong-token-value" not in output and "wrong-discord-token" not in output


async def test_learned_window_and_fallbacks_are_reported(tmp_path: Path, fake_openai: FakeOpenAI,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A window a provider proved smaller names model.context_length; each fallback is probed."""
    home = tmp_path / "home"
    FileWindowStore(home / "model_windows.json").save(
        window_key("m", fake_openai.base_url), LearnedWindow(tokens=8192, stated=True, learned_at=0.0)
    )
    path = _write(tmp_path, {
        "home": str(home),
        "model": {"name": "m", "base_url": fake_openai.base_url, "api_key": "sk-secret-value",
                  "fallbacks": [{"name": "backup", "base_url": fake_openai.base_url}]},
    })
    code = await _doctor(path)
    rows = _rows(capsys)
    assert code != 0
    assert rows["model.fallbacks[0]"]["ok"] is True
    window = rows["model.context_length"]
    assert window["ok"] is False and "8,192" in str(window["detail"])
    assert window["fix"] == "set model.context_length: 8192 (or start the server with a larger context)"
