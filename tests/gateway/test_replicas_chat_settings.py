"""Two `chorus run` replicas with separate homes on one PostgreSQL store share per-chat settings, pairing and locks.

/model switched through one replica is the model the other calls next; a pairing
approved by `chorus pairing approve` against the shared store admits the sender on both;
with Redis killed, the store's advisory locks still run one turn per session at a time.
"""
from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from agent.store.postgres import PostgresSessionStore
from gateway.cli import main
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram, message, private_chat, user
from tests.gateway.coord.test_redis_outage import OwnRedis, own_redis  # noqa: F401 - the fixture
from tests.gateway.harness import chat
from tests.gateway.replicas import replica, replica_config, web_port
from tests.postgres import fresh_database

REPLY_TIMEOUT = 30.0


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("chorus_replica_chats") as url:
        yield url


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


async def test_model_switched_on_one_replica_is_used_by_the_other(
    fake_openai: FakeOpenAI, tmp_path: Path, database: str, redis_url: str, redis_prefix: str
) -> None:
    """Both replicas answered the chat on the main model; /model on A; B's next turn calls the new model."""
    fake_openai.responder = lambda request: Reply(content=f"on {request['model']}")
    configs = {name: replica_config(
        tmp_path, name, store={"url": database}, redis={"url": redis_url, "key_prefix": redis_prefix},
        model={"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test-not-real",
               "allowed": ["big-model"]},
        platforms={"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
    ) for name in "ab"}
    async with replica(configs["a"]) as lines_a, replica(configs["b"]) as lines_b:
        async with chat(web_port(lines_a), "dm-m") as tab_a, chat(web_port(lines_b), "dm-m") as tab_b:
            await tab_a.say("hello a")
            assert await tab_a.reply(timeout=REPLY_TIMEOUT) == "on fake-model"
            await tab_b.say("hello b")  # B now holds the session's agent, built on the main model
            assert await tab_b.reply(timeout=REPLY_TIMEOUT) == "on fake-model"
            await tab_a.say("/model big-model")
            assert await tab_a.reply(timeout=REPLY_TIMEOUT) == "switched this chat to big-model."
            await tab_b.say("/model")
            assert (await tab_b.reply(timeout=REPLY_TIMEOUT)).startswith("model: big-model")
            await tab_b.say("and now?")
            got = await tab_b.reply(timeout=REPLY_TIMEOUT)
            assert got == "on big-model"
            usage = await _usage_until(tab_a, "3 requests")  # B's count is written behind, within ~50 ms
    assert [r["model"] for r in fake_openai.requests] == ["fake-model", "fake-model", "big-model"]
    assert "this chat, all time:" in usage and "3 requests" in usage.splitlines()[-1]  # both replicas counted


async def _usage_until(tab: Any, wanted: str) -> str:
    """`/usage` asked again until its last line shows `wanted` (another replica's usage is written behind)."""
    deadline = asyncio.get_running_loop().time() + REPLY_TIMEOUT
    while True:
        await tab.say("/usage")
        usage = str(await tab.reply(timeout=REPLY_TIMEOUT))
        if wanted in usage.splitlines()[-1] or asyncio.get_running_loop().time() > deadline:
            return usage


async def test_a_pairing_approved_against_the_shared_store_admits_the_sender_on_both(
    fake_openai: FakeOpenAI, tmp_path: Path, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stranger gets a code from replica A; `chorus pairing approve` (B's config) admits them on A and B."""
    fake_openai.responder = lambda request: Reply(content="welcome")
    async with FakeTelegram() as tg_a, FakeTelegram() as tg_b:
        configs = {name: replica_config(
            tmp_path, name, store={"url": database},
            model={"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test-not-real"},
            platforms={"web": {"enabled": False}, "telegram": {
                "enabled": True, "token": TOKEN, "base_url": f"http://127.0.0.1:{tg.port}", "pairing": True}},
        ) for name, tg in (("a", tg_a), ("b", tg_b))}
        eve = user(555, "Eve", "eve")
        async with replica(configs["a"]), replica(configs["b"]):
            await tg_a.push_update(message=message(private_chat(555), "hello?", sender=eve))
            prompt = await tg_a.wait_for_text(555, "pairing code", timeout=REPLY_TIMEOUT)
            code = re.search(r"code is ([A-Z0-9]{8})", prompt)
            assert code is not None
            assert main(["pairing", "list", "--config", str(configs["b"])]) == 0
            assert f"{code.group(1)}  telegram  555 (Eve)" in capsys.readouterr().out
            assert main(["pairing", "approve", code.group(1), "--platform", "telegram",
                         "--config", str(configs["b"])]) == 0
            assert capsys.readouterr().out == "approved 555 (Eve) on telegram\n"
            await tg_b.push_update(message=message(private_chat(555), "on b?", sender=eve))
            assert await tg_b.wait_for_text(555, "welcome", timeout=REPLY_TIMEOUT) == "welcome"
            await tg_a.push_update(message=message(private_chat(555), "on a?", sender=eve))
            assert await tg_a.wait_for_text(555, "welcome", timeout=REPLY_TIMEOUT) == "welcome"
    assert sorted(r["messages"][-1]["content"] for r in fake_openai.requests) == ["on a?", "on b?"]
    for name in "ab":
        assert not (tmp_path / name / "home" / "pairing.db").exists()
        assert not (tmp_path / name / "home" / "chats.db").exists()


async def test_with_redis_killed_two_replicas_serialise_turns_of_one_session(
    fake_openai: FakeOpenAI, tmp_path: Path, database: str, own_redis: OwnRedis,  # noqa: F811
) -> None:
    """Redis SIGKILLed; both replicas take a message of one DM at the same moment, three times: each turn saw
    every earlier one (the PostgreSQL advisory lock serialised them) and the stored history is one conversation."""
    def count_history(request: dict[str, Any]) -> Reply:
        texts = [m["content"] for m in request["messages"] if m.get("role") == "user"]
        return Reply(content=f"#{len(texts)} {texts[-1]}", delay_seconds=0.3)

    fake_openai.responder = count_history
    configs = {name: replica_config(
        tmp_path, name, store={"url": database}, redis={"url": own_redis.url, "key_prefix": "serialise"},
        model={"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test-not-real"},
        platforms={"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
    ) for name in "ab"}
    async with replica(configs["a"]) as lines_a, replica(configs["b"]) as lines_b:
        await own_redis.kill()
        async with chat(web_port(lines_a), "dm-r") as tab_a, chat(web_port(lines_b), "dm-r") as tab_b:
            replies = []
            for round_ in range(3):
                await asyncio.gather(tab_a.say(f"a{round_}"), tab_b.say(f"b{round_}"))
                # The replica that waits for the lock says "queued: …" first.
                for got in await asyncio.gather(*(tab.replies(1, timeout=REPLY_TIMEOUT)
                                                   for tab in (tab_a, tab_b))):
                    replies += got
    assert all(reply.startswith("#") for reply in replies), replies
    counts = sorted(int(reply.split()[0][1:]) for reply in replies)
    assert counts == [1, 2, 3, 4, 5, 6], replies  # two turns at once would both have seen the same history
    with PostgresSessionStore(database) as store:
        (session,) = [s.session for s in store.list_sessions()]
        roles = [m.role for m in store.active_messages(session.id)]
    assert roles == ["user", "assistant"] * 6
