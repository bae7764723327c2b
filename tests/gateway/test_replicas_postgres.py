"""Must-show: two `chorus run` replicas with separate homes on the real PostgreSQL and Redis serve one chat.

A DM whose messages reach the replicas alternately keeps one history; a note
saved through one replica is in the next session's system prompt on the
other; search from either replica's configuration finds the same messages.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from agent.store.postgres import PostgresSessionStore
from gateway.cli import main
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.harness import chat
from tests.gateway.replicas import replica, replica_config, web_port
from tests.postgres import fresh_database

REPLY_TIMEOUT = 30.0
NOTE = "Prefers metric units."


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("chorus_replicas") as url:
        yield url


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def _config(tmp_path: Path, name: str, *, model_url: str, store_url: str, redis: dict[str, str]) -> Path:
    return replica_config(
        tmp_path, name, model={"name": "fake-model", "base_url": model_url, "api_key": "sk-test-not-real"},
        platforms={"web": {"enabled": True, "host": "127.0.0.1", "port": 0}}, store={"url": store_url}, redis=redis,
    )


def _user_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m.get("role") == "user" and isinstance(m.get("content"), str)]


def _memory_call(content: str) -> dict[str, Any]:
    arguments = json.dumps({"action": "add", "target": "user", "content": content})
    return {"id": "call_note", "type": "function", "function": {"name": "memory", "arguments": arguments}}


async def test_two_replicas_share_history_notes_and_search(
    fake_openai: FakeOpenAI, tmp_path: Path, database: str, redis_url: str, redis_prefix: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Alternating replicas: one transcript, a note crosses replicas, and search agrees from both homes."""

    def count_history(request: dict[str, Any]) -> Reply:
        texts = _user_texts(request)
        return Reply(content=f"#{len(texts)} {texts[-1]}")

    fake_openai.responder = count_history
    redis = {"url": redis_url, "key_prefix": redis_prefix}
    config_a, config_b = (
        _config(tmp_path, name, model_url=fake_openai.base_url, store_url=database, redis=redis) for name in "ab"
    )
    async with replica(config_a) as lines_a, replica(config_b) as lines_b:
        async with chat(web_port(lines_a), "dm-1") as tab_a, chat(web_port(lines_b), "dm-1") as tab_b:
            tabs = (tab_a, tab_b)
            replies = []
            for i in range(6):
                await tabs[i % 2].say(f"kiwi{i} question")
                replies.append(await tabs[i % 2].reply(timeout=REPLY_TIMEOUT))
            # Each replica saw every earlier message, whichever replica received it.
            assert replies == [f"#{i + 1} kiwi{i} question" for i in range(6)]

            fake_openai.push(Reply(content=None, tool_calls=[_memory_call(NOTE)]), Reply(content="saved"))
            await tab_a.say("remember that I like metric units")
            # tool_progress.dms defaults to "new": a "🔧 memory(…)" notice comes before the reply.
            assert await tab_a.replies(1, skip_prefix="🔧", timeout=REPLY_TIMEOUT) == ["saved"]
            await tab_b.say("/new")
            assert (await tab_b.reply(timeout=REPLY_TIMEOUT)).startswith("Started a new conversation")
            await tab_b.say("which units do I like?")
            assert await tab_b.reply(timeout=REPLY_TIMEOUT) == "#1 which units do I like?"
    system = fake_openai.requests[-1]["messages"][0]
    assert system["role"] == "system" and NOTE in system["content"]
    # No notes and no session database under either home: everything is in PostgreSQL.
    for name in "ab":
        home = tmp_path / name / "home"
        assert not (home / "state.db").exists() and not (home / "memories").exists()

    with PostgresSessionStore(database) as store:
        sessions = store.list_sessions()
        closed = next(s for s in sessions if not s.session.active)
        texts = [m.text for m in store.active_messages(closed.session.id) if m.role == "user"]
    assert texts[:6] == [f"kiwi{i} question" for i in range(6)]
    found = []
    for config in (config_a, config_b):
        assert main(["sessions", "search", "kiwi3", "--chat", closed.session.chat_id, "--config", str(config)]) == 0
        found.append(capsys.readouterr().out)
    assert "**kiwi3** question" in found[0] and found[0] == found[1]
