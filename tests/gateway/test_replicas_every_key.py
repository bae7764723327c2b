"""Must-show of issue 36, item 1: every key changed through one replica is in effect on the other, or needs a restart.

Two `chorus run` replicas share Redis. First, one representative key of each kind is changed through A's
`PATCH /api/config` and B is seen behaving differently (a new persona reaches the fake model, a new limit
refuses, a new model name is the one B requests, a rotated Telegram token makes B's adapter poll with it,
`enabled: false` stops it, a platform enabled without its token is reported by B's readiness while B keeps
serving). Then the schema is walked:
each key gets a value generated from its type (`tests/gateway/config_walk.py`); a live key must show on B
(`GET /api/config` and B's audit line) within 2 s, a restart key must be answered "restart needed: KEY".
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog

from gateway.config import TEST_CLOCK_ENV, load_config
from gateway.ops.live_config import LiveConfig, flatten, restart_needed, shown
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram
from tests.gateway.config_walk import DEAD_ORIGIN, candidates, changed_value, leaf_annotation
from tests.gateway.harness import chat
from tests.gateway.replicas import admin_port, replica, replica_config, web_port

ADMIN_TOKEN = "admin-token-for-tests"
IN_EFFECT = 2.0  # the bound: a change made on A is in effect on B within 2 s
BEHAVIOUR_DEADLINE = 30.0  # what B then does (a model call, an adapter reconnecting) on a busy machine
ROTATED_TOKEN = "654321:TEST-token-rotated"
NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture(autouse=True)
def _clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limits' clock stands still, so a per-minute window never passes during the test."""
    path = tmp_path / "clock"
    path.write_text(str(NOON), encoding="utf-8")
    monkeypatch.setenv(TEST_CLOCK_ENV, str(path))


async def _call(method: str, port: int, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as http:
        async with http.request(method, f"http://127.0.0.1:{port}{path}", json=body) as response:
            return response.status, await response.json()


async def _patch(port: int, key: str, value: Any) -> dict[str, Any]:
    status, body = await _call("PATCH", port, "/api/config", {key: value})
    assert status == 200, body
    return body


def _audited(lines: list[dict[str, Any]], key: str) -> int:
    return sum(1 for line in lines if line.get("event") == "admin.config_changed" and line.get("setting") == key)


async def _shown_on(port: int, key: str) -> Any:
    status, body = await _call("GET", port, "/api/config")
    assert status == 200, body
    return body["values"].get(key)


async def _in_effect(port: int, lines: list[dict[str, Any]], key: str, expected: Any, before: tuple[int, Any]) -> None:
    """Poll B until its running config shows `expected` for `key` and B logged the change (within IN_EFFECT).

    `before` is B's audit count for the key and the value B showed before the PATCH: a value B had already
    (its own file said so) is in effect without a change to log; a secret always shows "<hidden>", so its
    change must be logged.
    """
    wanted = json.loads(json.dumps(shown(expected)))
    audited_before, shown_before = before
    had_it = shown_before == wanted and wanted != "<hidden>"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + IN_EFFECT
    while True:
        value = await _shown_on(port, key)
        if value == wanted and (had_it or _audited(lines, key) > audited_before):
            return
        assert loop.time() < deadline, f"{key}: B shows {value!r} (wanted {wanted!r}) after {IN_EFFECT} s"
        await asyncio.sleep(0.02)  # a polling interval


async def _until(condition: Any, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BEHAVIOUR_DEADLINE
    while not await condition():
        assert loop.time() < deadline, what
        await asyncio.sleep(0.05)  # a polling interval


def _stops(lines: list[dict[str, Any]], platform: str) -> int:
    return sum(1 for line in lines if line.get("event") == "adapter.stopped" and line.get("platform") == platform)


class Rig:
    """Replica A (changed through), replica B (watched), the fakes, and A's config as A runs it (`mirror`)."""

    def __init__(self, port_a: int, port_b: int, lines_b: list[dict[str, Any]], mirror: LiveConfig) -> None:
        self.port_a, self.port_b, self.lines_b, self.mirror = port_a, port_b, lines_b, mirror

    async def change(self, key: str, value: Any) -> None:
        """PATCH `key` on A and wait until it is in effect on B."""
        before = (_audited(self.lines_b, key), await _shown_on(self.port_b, key))
        self.mirror.update({key: value})
        await _patch(self.port_a, key, value)
        await _in_effect(self.port_b, self.lines_b, key, flatten(self.mirror.current())[key], before)


def _configs(tmp_path: Path, fake: FakeOpenAI, telegram: FakeTelegram, redis_url: str, prefix: str) -> dict[str, Path]:
    common: dict[str, Any] = {
        "redis": {"url": redis_url, "key_prefix": prefix},
        "admin": {"host": "127.0.0.1", "port": 0, "token": ADMIN_TOKEN},
        "model": {"name": "fake-model", "base_url": fake.base_url, "api_key": "sk-test-not-real"},
    }
    # Every platform URL points at loopback (a platform the walk enables must never reach a real host).
    platforms: dict[str, Any] = {
        "web": {"enabled": False, "host": "127.0.0.1", "port": 0},
        "discord": {"api_base_url": DEAD_ORIGIN, "gateway_url": "ws://127.0.0.1:9"},
        "slack": {"api_base_url": f"{DEAD_ORIGIN}/api/"},
        "telegram": {"base_url": f"http://127.0.0.1:{telegram.port}/a/bot"},
    }
    b_platforms = {
        **platforms, "web": {**platforms["web"], "enabled": True},
        "telegram": {"enabled": True, "token": TOKEN, "allow_all_users": True,
                     "base_url": f"http://127.0.0.1:{telegram.port}/b/bot"},
    }
    return {
        "a": replica_config(tmp_path, "a", platforms=platforms, **common),
        "b": replica_config(tmp_path, "b", platforms=b_platforms, **common),
    }


async def _representative_keys(rig: Rig, fake: FakeOpenAI, telegram: FakeTelegram, web: int) -> int:
    """One key of each kind changed on A, B seen acting on it; returns B's getUpdates count once Telegram stopped."""
    # Persona: the next new session on B is prompted with it.
    await rig.change("agent.system_prompt", "You are Persona-Seven.")
    async with chat(web, "persona") as tab:
        await tab.say("who are you?")
        assert await tab.replies(1, timeout=BEHAVIOUR_DEADLINE) == ["re: who are you?"]
    assert "Persona-Seven" in fake.requests[-1]["messages"][0]["content"]
    # A limit: one message a minute per person; the second is refused on B.
    await rig.change("limits.per_user.messages_per_minute", 1)
    async with chat(web, "limited") as tab:
        await tab.say("first")
        assert await tab.replies(1, timeout=BEHAVIOUR_DEADLINE) == ["re: first"]
        await tab.say("second")
        (refusal,) = await tab.replies(1, timeout=BEHAVIOUR_DEADLINE)
    assert refusal.startswith("Limit reached: 1 message per minute per person")
    # The model: B's next request names the new one (its chain is replaced in place).
    await rig.change("model.name", "fake-model-renamed")
    async with chat(web, "model") as tab:
        await tab.say("which model?")
        assert await tab.replies(1, timeout=BEHAVIOUR_DEADLINE) == ["re: which model?"]
    assert fake.requests[-1]["model"] == "fake-model-renamed"
    # A rotated Telegram token: B's adapter reconnects to the fake with it.
    telegram.tokens.add(ROTATED_TOKEN)
    await rig.change("platforms.telegram.token", ROTATED_TOKEN)

    async def polls_with_rotated_token() -> bool:
        return any(c.via == "b" and c.token == ROTATED_TOKEN for c in telegram.calls_of("getUpdates"))

    await _until(polls_with_rotated_token, "B's Telegram adapter never polled with the rotated token")
    assert await _shown_on(rig.port_b, "platforms.telegram.token") == "<hidden>"  # write-only
    # `enabled: false`: B's Telegram adapter stops (and polls no more: checked at the end of the walk).
    stops = _stops(rig.lines_b, "telegram")  # the token's restart stopped it once already
    await rig.change("platforms.telegram.enabled", False)

    async def telegram_stopped() -> bool:
        return _stops(rig.lines_b, "telegram") > stops

    await _until(telegram_stopped, "B's Telegram adapter did not stop")
    polled = len([c for c in telegram.calls_of("getUpdates") if c.via == "b"])
    # A platform enabled without its token: B reports it (readiness) and keeps serving.
    await rig.change("platforms.discord.enabled", True)

    async def discord_reported() -> bool:
        status, body = await _call("GET", rig.port_b, "/readyz")
        return status == 503 and "adapter discord did not start after a config change" in body["detail"]

    await _until(discord_reported, "B's readiness does not report the Discord adapter that could not start")
    assert any(line.get("event") == "adapter.restart_failed" and line.get("platform") == "discord" for line in rig.lines_b)
    return polled


async def test_every_key_changed_on_one_replica_is_in_effect_on_the_other_or_needs_a_restart(
    fake_openai: FakeOpenAI, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    fake_openai.responder = lambda request: Reply(content=f"re: {request['messages'][-1]['content']}")
    async with FakeTelegram() as telegram:
        configs = _configs(tmp_path, fake_openai, telegram, redis_url, redis_prefix)
        async with replica(configs["a"]) as lines_a, replica(configs["b"]) as lines_b:
            rig = Rig(admin_port(lines_a), admin_port(lines_b), lines_b, LiveConfig(load_config(configs["a"])))
            polled = await _representative_keys(rig, fake_openai, telegram, web_port(lines_b))
            restart: list[str] = []
            for key in sorted(flatten(rig.mirror.current())):
                if not restart_needed(key):
                    await rig.change(key, changed_value(rig.mirror, key))
                    continue
                value = candidates(leaf_annotation(key), flatten(rig.mirror.current())[key])[0]
                status, body = await _call("PATCH", rig.port_a, "/api/config", {key: value})
                assert (status, body["key"]) == (400, key)
                assert f"restart needed: {key} (" in body["error"]
                restart.append(key)
            status, _ = await _call("GET", rig.port_b, "/healthz")
            assert status == 200  # B still runs after every key changed under it
            assert len([c for c in telegram.calls_of("getUpdates") if c.via == "b"]) == polled
    assert {"home", "store.url", "redis.url", "admin.port"} <= set(restart)
    logged = json.dumps([*lines_a, *lines_b])
    assert ROTATED_TOKEN not in logged and "secret-changed" not in logged  # secrets never reach a log line
    failed = ("config.sync_rejected", "config.follow_failed", "config.subscriber_failed")
    assert [line for line in lines_b if line.get("event") in failed] == []  # every part followed every change
