"""A user's job runs only while its owner may still talk to the bot: taken off the allowlist, their jobs stop."""
from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gateway.schedules.book import JobRequest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus
from tests.gateway.schedules.support import Clock
from tests.gateway.test_group_chats import GROUP, eventually

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


async def test_only_the_job_of_an_owner_still_allowed_runs(home: Path, fake_openai: FakeOpenAI, tg: FakeTelegram) -> None:
    fake_openai.responder = lambda request: Reply(content=f"ran: {request['messages'][-1]['content']}")
    platforms = {"web": {"enabled": False}, "telegram": {
        "enabled": True, "token": TOKEN, "base_url": f"http://127.0.0.1:{tg.port}", "allowed_users": ["777"]}}
    config = make_config(home, fake_openai.base_url, platforms=platforms, scheduling={"min_interval_minutes": 0})
    clock = Clock(NOON + 30)
    async with run_like_chorus(config, limits_clock=clock) as (gateway, _ops):
        book = gateway.parts.schedules
        assert book is not None
        for owner, prompt in (("777", "still allowed"), ("888", "removed from the allowlist")):
            book.add(JobRequest(chat=f"telegram:{GROUP}", cron="* * * * *", at=None, prompt=prompt, origin="user",
                                owner_id=owner))
        clock.now = NOON + 61
        assert await eventually(lambda: any("still allowed" in t for t in tg.texts(GROUP).values()))
        clock.now = NOON + 121  # a second occurrence: by now the refused owner's first one was decided too
        assert await eventually(lambda: sum("still allowed" in t for t in tg.texts(GROUP).values()) == 2)
    asked = [str(r["messages"][-1]["content"]) for r in fake_openai.requests]
    assert len(asked) == 2 and all("still allowed" in text for text in asked)
    assert not any("removed from the allowlist" in t for t in tg.texts(GROUP).values())
