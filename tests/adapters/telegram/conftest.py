"""Fixtures: a fake Bot API server on loopback and adapters pointed at it (real PTB, real sockets)."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapters.base import InboundMessage
from adapters.telegram import TelegramAdapter
from tests.fakes.telegram_api import TOKEN, FakeTelegram

WAIT = 5.0  # seconds any single expected event may take before a test fails


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


def make_adapter(fake: FakeTelegram, *, token: str = TOKEN, **options: Any) -> TelegramAdapter:
    """An adapter on the fake server, with test-sized timeouts and no edit throttling unless asked."""
    settings: dict[str, Any] = {"poll_timeout": 1, "request_timeout": 5, "edit_interval": 0.0, **options}
    return TelegramAdapter(token, base_url=f"http://127.0.0.1:{fake.port}", **settings)


@pytest.fixture
async def inbound() -> asyncio.Queue[InboundMessage]:
    return asyncio.Queue()


@pytest.fixture
async def polling(fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]) -> AsyncIterator[TelegramAdapter]:
    """A started long-polling adapter; stopped at teardown."""
    adapter = make_adapter(fake)
    await adapter.start(inbound)
    yield adapter
    if adapter.running:
        await adapter.stop()


async def next_message(queue: asyncio.Queue[InboundMessage]) -> InboundMessage:
    return await asyncio.wait_for(queue.get(), WAIT)
