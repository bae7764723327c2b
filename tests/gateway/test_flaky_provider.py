"""Flaky providers through `chorus run`'s construction: retries, fallbacks, refusals, and /retry."""
from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from gateway.i18n import say
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus

FAST_RETRY = {"max_attempts": 4, "initial_backoff_seconds": 0.01, "max_backoff_seconds": 0.05}


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port bound but never listening, kept while the block runs: connections are refused (an unreachable
    model host), and nothing else on the machine can start listening on it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def _config(home: Path, base_url: str, **model: Any) -> Any:
    return make_config(
        home, base_url, platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}},
        model={"retry": FAST_RETRY, **model},
    )


async def test_429_500_and_a_timeout_are_retried_until_the_answer(fake_openai: FakeOpenAI, home: Path) -> None:
    """429 (retry-after-ms), 500 and a timed-out request are retried; the user only sees the answer."""
    fake_openai.push(
        Reply(status=429, headers={"retry-after-ms": "20"}), Reply(status=500, error_type="server_error"),
        Reply(content="late", delay_seconds=1.0),
    )
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai.base_url, timeout_seconds=0.3),
                               adapters={"telegram": chat}):
        await chat.inject("hello")
        await chat.wait_text("echo: hello")
    assert chat.texts() == ["echo: hello"]
    assert len(fake_openai.requests) == 4


async def test_main_model_down_the_fallback_answers_with_its_own_window(fake_openai: FakeOpenAI, home: Path) -> None:
    """An unreachable main model falls back to the next one; its window is the one compression and /status use."""
    with closed_port() as port:
        await _main_model_down(fake_openai, home, f"http://127.0.0.1:{port}/v1")


async def _main_model_down(fake_openai: FakeOpenAI, home: Path, down: str) -> None:
    config = _config(home, down, fallbacks=[
        {"name": "backup-model", "base_url": fake_openai.base_url, "api_key": "sk-backup", "context_length": 16000},
    ])
    chat = FakePlatform("telegram")
    async with run_like_chorus(config, adapters={"telegram": chat}) as (_gateway, ops):
        await chat.inject("hello")
        await chat.wait_text("echo: hello")
        await chat.inject("/status")
        status = await chat.wait_text("tokens used")
        assert ops.windows.active.name == "backup-model"
    assert [r["model"] for r in fake_openai.requests] == ["backup-model"]
    assert "of 16,000" in status.text
    assert "answering with fallback backup-model" in status.text


async def test_rejected_key_is_not_retried_and_names_the_key(fake_openai: FakeOpenAI, home: Path) -> None:
    """401: one request, one short line for the user, a log line naming model.api_key."""
    fake_openai.push(Reply(status=401, error_type="invalid_api_key"))
    chat = FakePlatform("telegram")
    with capture_logs() as logs:
        async with run_like_chorus(_config(home, fake_openai.base_url), adapters={"telegram": chat}):
            await chat.inject("hello")
            await chat.wait_text(say("en", "turn.auth"))
    assert len(fake_openai.requests) == 1
    assert chat.texts() == [say("en", "turn.auth")]
    assert any("model.api_key" in str(entry.get("fix", "")) for entry in logs if entry["event"] == "model.auth_failed")


async def test_rejected_key_falls_back_and_the_dashboard_names_the_key(fake_openai: FakeOpenAI, home: Path) -> None:
    """401 from the main model with a fallback configured: the fallback answers; the dashboard says which key to fix."""
    fake_openai.push(Reply(status=401, error_type="invalid_api_key"))
    chat = FakePlatform("telegram")
    async with FakeOpenAI() as backup:
        config = _config(home, fake_openai.base_url, fallbacks=[
            {"name": "backup-model", "base_url": backup.base_url, "api_key": "sk-backup"},
        ])
        async with run_like_chorus(config, adapters={"telegram": chat}) as (_gateway, ops):
            await chat.inject("hello")
            await chat.wait_text("echo: hello")
            errors = [event.text for event in ops.events.recent(kind="error")]
        assert [r["model"] for r in backup.requests] == ["backup-model"]
    assert chat.texts() == ["echo: hello"]
    assert len(fake_openai.requests) == 1
    assert any(text.startswith(f"model.api_key rejected by 127.0.0.1:{fake_openai.port} (401): check the key")
               for text in errors), errors


async def test_hanging_main_model_gives_way_at_the_turn_deadline(fake_openai: FakeOpenAI, home: Path) -> None:
    """A main model that never answers: after model.retry.total_timeout_seconds the fallback answers."""
    never = asyncio.Event()
    fake_openai.push(*(Reply(gate=never) for _ in range(4)))
    chat = FakePlatform("telegram")
    try:
        async with FakeOpenAI() as backup:
            config = _config(home, fake_openai.base_url, timeout_seconds=3600,
                             retry={**FAST_RETRY, "total_timeout_seconds": 0.3},
                             fallbacks=[{"name": "backup-model", "base_url": backup.base_url}])
            async with run_like_chorus(config, adapters={"telegram": chat}):
                await chat.inject("hello")
                await chat.wait_text("echo: hello")
    finally:
        never.set()
    assert len(fake_openai.requests) == 1


async def test_refused_request_is_not_retried(fake_openai: FakeOpenAI, home: Path) -> None:
    """A 400 that is not an overflow: one request, one short line."""
    fake_openai.push(Reply(status=400, error_code="invalid_value"))
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai.base_url), adapters={"telegram": chat}):
        await chat.inject("hello")
        await chat.wait_text(say("en", "turn.refused"))
    assert len(fake_openai.requests) == 1


async def test_failed_turn_keeps_the_message_and_retry_reruns_it(fake_openai: FakeOpenAI, home: Path) -> None:
    """Retries used up: the message stays in the session; /retry answers it without storing it twice."""
    fake_openai.push(*[Reply(status=503, error_type="server_error") for _ in range(4)])
    chat = FakePlatform("telegram")
    async with run_like_chorus(_config(home, fake_openai.base_url), adapters={"telegram": chat}) as (gateway, _ops):
        await chat.inject("what is the deploy time?")
        await chat.wait_text(say("en", "turn.unavailable"))
        await chat.inject("/retry")
        await chat.wait_text("echo: what is the deploy time?")
        store = gateway.parts.store
        session = store.active_session("agent:default:telegram:dm:c1")
        assert session is not None
        stored = [m.text for m in store.active_messages(session.id)]
    assert stored == ["what is the deploy time?", "echo: what is the deploy time?"]
    assert len(fake_openai.requests) == 5


async def test_retry_after_group_lines_asks_the_failed_question_again(fake_openai: FakeOpenAI, home: Path) -> None:
    """Lines recorded after the failure stay; /retry answers the failed question, never someone's later line."""
    fake_openai.push(*[Reply(status=503, error_type="server_error") for _ in range(4)])
    chat = FakePlatform("telegram")
    config = make_config(home, fake_openai.base_url, model={"retry": FAST_RETRY},
                         platforms={"web": {"enabled": False}, "telegram": {"allow_all_users": True}})
    async with run_like_chorus(config, adapters={"telegram": chat}):
        group = {"chat_id": "-100g", "chat_type": "group"}
        await chat.inject("/retry", **group)
        await chat.wait_text(say("en", "turn.nothing_to_retry"))
        await chat.inject("when is the deploy?", mentions_bot=True, **group)
        await chat.wait_text(say("en", "turn.unavailable"))
        await chat.inject("lunch anyone?", user_id="b", user_name="bob", **group)
        await chat.inject("/retry", **group)
        await chat.wait_text("echo: alice (id u1): when is the deploy?")
    assert fake_openai.requests[-1]["messages"][-2]["content"] == "(not addressed to you) bob (id b): lunch anyone?"
