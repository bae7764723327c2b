"""A scheduled turn passes the spend limits like any message (the gateway built as `chorus run` builds it)."""
from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram, user
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus
from tests.gateway.schedules.support import Clock
from tests.gateway.test_group_chats import GROUP, eventually, mentioning

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


def _last_user_text(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


async def test_a_scheduled_turn_is_refused_by_a_chat_limit_and_runs_once_the_window_passed(
    home: Path, fake_openai: FakeOpenAI, tg: FakeTelegram
) -> None:
    """One message a minute in the group: Ada's at 12:00:30 fills it, so the job's 12:01 turn is refused (the
    chat is told, no model call); its 12:02 turn is answered."""
    fake_openai.responder = lambda request: Reply(
        content="job answered" if "[scheduled job" in _last_user_text(request) else "hi Ada")
    platforms = {"web": {"enabled": False}, "telegram": {
        "enabled": True, "token": TOKEN, "base_url": f"http://127.0.0.1:{tg.port}", "allow_all_users": True}}
    config = make_config(home, fake_openai.base_url, platforms=platforms,
                         limits={"per_chat": {"messages_per_minute": 1}},
                         schedules={"ticker": {"cron": "* * * * *", "chat": f"telegram:{GROUP}", "prompt": "status?"}})
    clock = Clock(NOON + 30)
    async with run_like_chorus(config, limits_clock=clock):
        await tg.push_update(message=mentioning(user(777, "Ada", "ada"), "hello there"))
        assert await eventually(lambda: "hi Ada" in tg.texts(GROUP).values())
        clock.now = NOON + 61
        assert await eventually(lambda: any(t.startswith("Limit reached") for t in tg.texts(GROUP).values()))
        assert len(fake_openai.requests) == 1
        clock.now = NOON + 121
        assert await eventually(lambda: "job answered" in tg.texts(GROUP).values())
    assert [_last_user_text(r).endswith("[scheduled job ticker] status?") for r in fake_openai.requests] == [False, True]
    assert [t for t in tg.texts(GROUP).values() if t.startswith("Limit reached")] == [
        "Limit reached: 1 message per minute for this chat. It resets at 12:01 UTC."]
