"""Must-show of issue 33: spend and rate limits hold across two `chorus run` replicas on one Redis.

Time is injected through `CHORUS_TEST_CLOCK_FILE` (gateway/config.py `limits_clock`): the file holds the
epoch seconds the limits read, so a test moves both replicas past a window or a day boundary without waiting.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog

from gateway.config import TEST_CLOCK_ENV
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram, message, private_chat, user
from tests.gateway.harness import ChatClient, chat
from tests.gateway.replicas import admin_port, replica, replica_config, web_port

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()
MIDNIGHT = datetime(2026, 12, 7, 0, 0, tzinfo=UTC).timestamp()
REPLY_TIMEOUT = 30.0
SECOND_TOKEN = "654321:TEST-token-second"
ADMIN_TOKEN = "admin-token-for-tests"


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture
def clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The replicas' limits clock, at noon UTC until a test writes another time."""
    path = tmp_path / "clock"
    path.write_text(str(NOON), encoding="utf-8")
    monkeypatch.setenv(TEST_CLOCK_ENV, str(path))
    return path


def _reply(request: dict[str, Any]) -> Reply:
    return Reply(content=f"re: {request['messages'][-1]['content']}", prompt_tokens=100, completion_tokens=5)


def _configs(tmp_path: Path, fake: FakeOpenAI, redis_url: str, prefix: str, limits: dict[str, Any],
             platforms: dict[str, dict[str, Any]]) -> dict[str, Path]:
    return {name: replica_config(
        tmp_path, name, redis={"url": redis_url, "key_prefix": prefix}, limits=limits,
        model={"name": "fake-model", "base_url": fake.base_url, "api_key": "sk-test-not-real"},
        platforms=platforms[name],
    ) for name in "ab"}


async def _hits(port: int) -> float:
    """`chorus_limit_hits_total` summed over scopes, from a replica's /metrics."""
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as response:
        text = await response.text()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("chorus_limit_hits_total{"))


async def _hits_reach(ports: list[int], count: int) -> float:
    deadline = asyncio.get_running_loop().time() + REPLY_TIMEOUT
    while True:
        total = sum([await _hits(port) for port in ports])
        if total >= count or asyncio.get_running_loop().time() > deadline:
            return total
        await asyncio.sleep(0.05)


def _texts(tab: ChatClient) -> list[str]:
    """Every final bot message the tab has seen (drafts followed to their last edit)."""
    final: dict[str, str] = {}
    for frame in tab.frames:
        if frame["type"] in ("message", "edit"):
            final[str(frame["id"])] = str(frame["text"])
    return list(final.values())


async def _until_reply(tab: ChatClient, wanted: str) -> None:
    while True:
        if await tab.reply(timeout=REPLY_TIMEOUT) == wanted:
            return


async def test_a_per_user_limit_admits_exactly_n_of_a_burst_across_replicas(
    fake_openai: FakeOpenAI, tmp_path: Path, redis_url: str, redis_prefix: str, clock: Path
) -> None:
    """N = 3 per minute, 5N messages from one person spread over both replicas: 3 answered, one line said."""
    n = 3
    fake_openai.responder = _reply
    web = {name: {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}} for name in "ab"}
    configs = _configs(tmp_path, fake_openai, redis_url, redis_prefix, {"per_user": {"messages_per_minute": n}}, web)
    async with replica(configs["a"]) as lines_a, replica(configs["b"]) as lines_b:
        ports = [admin_port(lines_a), admin_port(lines_b)]
        async with chat(web_port(lines_a), "burst") as tab_a, chat(web_port(lines_b), "burst") as tab_b:
            await asyncio.gather(*((tab_a if i % 2 else tab_b).say(f"m{i}") for i in range(5 * n)))
            assert await _hits_reach(ports, 4 * n) == 4 * n
            clock.write_text(str(NOON + 61), encoding="utf-8")  # the window has passed: each lane's last job
            for tab, name in ((tab_a, "a"), (tab_b, "b")):
                await tab.say(f"after {name}")
                await _until_reply(tab, f"re: after {name}")  # one lane per replica: everything before it is done
            said = [t for tab in (tab_a, tab_b) for t in _texts(tab) if t.startswith("Limit reached")]
            answered = [t for tab in (tab_a, tab_b) for t in _texts(tab) if t.startswith("re: m")]
    assert said == ["Limit reached: 3 messages per minute per person. It resets at 12:01 UTC."]
    assert len(answered) == n
    assert len(fake_openai.requests) == n + 2
    hit_logs = [line for line in lines_a + lines_b if line.get("event") == "limits.hit"]
    assert len(hit_logs) == 1 and hit_logs[0]["limit"] == "per_user.messages_per_minute"


async def test_tokens_per_day_stop_at_the_budget_and_reset_at_midnight(
    fake_openai: FakeOpenAI, tmp_path: Path, redis_url: str, redis_prefix: str, clock: Path
) -> None:
    """105 tokens a turn, 300 a day: the fourth message is refused (on either replica) until midnight."""
    fake_openai.responder = _reply
    web = {name: {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}} for name in "ab"}
    configs = _configs(tmp_path, fake_openai, redis_url, redis_prefix, {"per_user": {"tokens_per_day": 300}}, web)
    async with replica(configs["a"]) as lines_a, replica(configs["b"]) as lines_b:
        ports = [admin_port(lines_a), admin_port(lines_b)]
        async with chat(web_port(lines_a), "daily") as tab_a, chat(web_port(lines_b), "daily") as tab_b:
            for i, tab in enumerate((tab_a, tab_b, tab_a)):
                await tab.say(f"t{i}")
                assert await tab.replies(1, timeout=REPLY_TIMEOUT) == [f"re: t{i}"]
            await tab_b.say("t3")  # 315 of 300 spent
            assert await tab_b.replies(1, timeout=REPLY_TIMEOUT) == [
                "Limit reached: 300 tokens per day per person. It resets at 00:00 UTC."]
            await tab_a.say("t4")  # refused again, on the other replica: silent
            assert await _hits_reach(ports, 2) == 2
            await tab_a.say("/usage")
            usage = await tab_a.replies(1, timeout=REPLY_TIMEOUT)
            assert "per person: 0 of 300 tokens left today (resets 00:00 UTC)" in usage[0]
            clock.write_text(str(MIDNIGHT + 1), encoding="utf-8")
            await tab_a.say("t5")
            assert await tab_a.replies(1, timeout=REPLY_TIMEOUT) == ["re: t5"]
            assert not [t for t in _texts(tab_a) if t.startswith("Limit reached")]
    assert len(fake_openai.requests) == 4
    contents = [m["content"] for m in fake_openai.requests[-1]["messages"] if m["role"] == "user"]
    assert contents[-3:] == ["t2", "t4", "t5"]  # t4, refused on A, was kept as context (t3 is in B's own home)


async def test_an_admin_is_exempt_and_others_are_told_once(
    fake_openai: FakeOpenAI, tmp_path: Path, redis_url: str, redis_prefix: str, clock: Path
) -> None:
    """One message a minute; the admin (Telegram 777) is answered every time on both replicas, Eve once."""
    fake_openai.responder = _reply
    async with FakeTelegram() as tg_a, FakeTelegram(token=SECOND_TOKEN, first_update_id=10_000) as tg_b:
        platforms = {name: {"web": {"enabled": False}, "telegram": {
            "enabled": True, "token": token, "base_url": f"http://127.0.0.1:{tg.port}", "allow_all_users": True,
            "admins": ["777"]}} for name, tg, token in (("a", tg_a, TOKEN), ("b", tg_b, SECOND_TOKEN))}
        configs = _configs(tmp_path, fake_openai, redis_url, redis_prefix,
                           {"per_user": {"messages_per_minute": 1}, "exempt_admins": True}, platforms)
        ada, eve = user(777, "Ada", "ada"), user(555, "Eve", "eve")
        async with replica(configs["a"]) as lines_a, replica(configs["b"]) as lines_b:
            ports = [admin_port(lines_a), admin_port(lines_b)]
            for i, tg in enumerate((tg_a, tg_b, tg_a)):
                await tg.push_update(message=message(private_chat(777), f"admin {i}", sender=ada))
                await tg.wait_for_text(777, f"re: admin {i}", timeout=REPLY_TIMEOUT)
            await tg_a.push_update(message=message(private_chat(555), "eve 0", sender=eve))
            await tg_a.wait_for_text(555, "re: eve 0", timeout=REPLY_TIMEOUT)
            await tg_b.push_update(message=message(private_chat(555), "eve 1", sender=eve))
            said = await tg_b.wait_for_text(555, "Limit reached", timeout=REPLY_TIMEOUT)
            await tg_b.push_update(message=message(private_chat(555), "eve 2", sender=eve))
            assert await _hits_reach(ports, 2) == 2
            clock.write_text(str(NOON + 61), encoding="utf-8")
            await tg_b.push_update(message=message(private_chat(555), "eve 3", sender=eve))
            await tg_b.wait_for_text(555, "re: eve 3", timeout=REPLY_TIMEOUT)
            told = [t for t in tg_b.texts(555).values() if t.startswith("Limit reached")]
    assert said == "Limit reached: 1 message per minute per person. It resets at 12:01 UTC."
    assert told == [said]
    assert len(fake_openai.requests) == 5


async def test_a_limit_patched_on_one_replica_applies_on_the_other(
    fake_openai: FakeOpenAI, tmp_path: Path, redis_url: str, redis_prefix: str, clock: Path
) -> None:
    """PATCH limits.per_user.messages_per_minute on A's admin API: B refuses the second message of a minute."""
    fake_openai.responder = _reply
    web = {name: {"web": {"enabled": True, "host": "127.0.0.1", "port": 0}} for name in "ab"}
    configs = {name: replica_config(
        tmp_path, name, redis={"url": redis_url, "key_prefix": redis_prefix},
        admin={"host": "127.0.0.1", "port": 0, "token": ADMIN_TOKEN},
        model={"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test-not-real"},
        platforms=web[name],
    ) for name in "ab"}
    async with replica(configs["a"]) as lines_a, replica(configs["b"]) as lines_b:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with aiohttp.ClientSession(headers=headers) as http:
            url_a, url_b = (f"http://127.0.0.1:{admin_port(lines)}/api/config" for lines in (lines_a, lines_b))
            async with http.patch(url_a, json={"limits.per_user.messages_per_minute": 1}) as response:
                assert response.status == 200, await response.text()
            deadline = asyncio.get_running_loop().time() + REPLY_TIMEOUT
            while True:  # B hears of it over Redis within moments
                async with http.get(url_b) as response:
                    values = (await response.json())["values"]
                if values["limits.per_user.messages_per_minute"] == 1:
                    break
                assert asyncio.get_running_loop().time() < deadline, values
                await asyncio.sleep(0.05)
        async with chat(web_port(lines_b), "patched") as tab:
            await tab.say("first")
            assert await tab.replies(1, timeout=REPLY_TIMEOUT) == ["re: first"]
            await tab.say("second")
            assert await tab.replies(1, timeout=REPLY_TIMEOUT) == [
                "Limit reached: 1 message per minute per person. It resets at 12:01 UTC."]
    assert len(fake_openai.requests) == 1
