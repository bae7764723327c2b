"""Fixtures: a fake Discord, and the real adapter (real discord.py) connected to it on loopback."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from adapters.base import InboundMessage
from adapters.discord import DiscordAdapter
from tests.fakes.discord_api import TOKEN, FakeDiscord

WAIT = 5.0


@dataclass
class Harness:
    """The adapter under test, its inbound queue and the fake it talks to."""

    adapter: DiscordAdapter
    queue: asyncio.Queue[InboundMessage]
    fake: FakeDiscord

    async def next_message(self) -> InboundMessage:
        return await asyncio.wait_for(self.queue.get(), WAIT)


def make_adapter(fake: FakeDiscord, *, token: str = TOKEN, heartbeat_timeout: float = 60.0) -> DiscordAdapter:
    """An adapter pointed at `fake`, with the waits that matter for tests made short."""
    return DiscordAdapter(
        token=token,
        api_base_url=fake.api_base_url,
        gateway_url=fake.gateway_url,
        ready_timeout=5.0,
        guild_ready_timeout=0.05,
        heartbeat_timeout=heartbeat_timeout,
        reidentify_delay=0.05,
        crash_backoff=0.05,
    )


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake


@pytest.fixture
async def discord_bot(fake_discord: FakeDiscord) -> AsyncIterator[Harness]:
    adapter = make_adapter(fake_discord)
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(queue)
    yield Harness(adapter, queue, fake_discord)
    await adapter.stop()
