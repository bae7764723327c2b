"""Fixtures: a fake Slack, and the real adapter (events or socket mode) wired to it on loopback."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from adapters.base import InboundMessage
from adapters.slack import SlackAdapter
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, FakeSlack, event_callback, signed_headers

WAIT = 5.0


@dataclass
class Harness:
    """The adapter under test, its inbound queue, and a way to POST signed events to it."""

    adapter: SlackAdapter
    queue: asyncio.Queue[InboundMessage]
    fake: FakeSlack
    url: str
    http: aiohttp.ClientSession

    async def post_raw(self, body: str, headers: dict[str, str]) -> tuple[int, str]:
        async with self.http.post(self.url, data=body.encode(), headers=headers) as response:
            return response.status, await response.text()

    async def post(self, payload: dict[str, Any], *, extra: dict[str, str] | None = None) -> tuple[int, str]:
        body = json.dumps(payload)
        return await self.post_raw(body, {**signed_headers(body), **(extra or {})})

    async def post_event(self, event: dict[str, Any], *, event_id: str, extra: dict[str, str] | None = None) -> int:
        status, _ = await self.post(event_callback(event, event_id=event_id), extra=extra)
        return status

    async def next_message(self) -> InboundMessage:
        return await asyncio.wait_for(self.queue.get(), WAIT)


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        fake.users.update({"U1": "alice", "U2": "bob"})
        yield fake


@asynccontextmanager
async def serving(adapter: SlackAdapter) -> AsyncIterator[tuple[str, asyncio.Queue[InboundMessage]]]:
    """The adapter's Events API route on a loopback port of its own, started; yields the URL and its queue."""
    app = web.Application()
    app.router.add_routes(adapter.routes())
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(queue)
    try:
        yield f"http://127.0.0.1:{port}/slack/events", queue
    finally:
        await adapter.stop()
        await runner.cleanup()


@pytest.fixture
async def events(fake_slack: FakeSlack) -> AsyncIterator[Harness]:
    adapter = SlackAdapter(
        bot_token=BOT_TOKEN,
        signing_secret=SIGNING_SECRET,
        api_base_url=fake_slack.api_base_url.rstrip("/"),  # the adapter must add the slash slack_sdk needs
        min_edit_interval=0.3,
        max_retry_after=2.0,
    )
    async with serving(adapter) as (url, queue), aiohttp.ClientSession() as http:
        yield Harness(adapter, queue, fake_slack, url, http)


@pytest.fixture
async def socket_adapter(fake_slack: FakeSlack) -> AsyncIterator[tuple[SlackAdapter, asyncio.Queue[InboundMessage]]]:
    adapter = SlackAdapter(
        bot_token=BOT_TOKEN, app_token=APP_TOKEN, mode="socket", api_base_url=fake_slack.api_base_url
    )
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(queue)
    yield adapter, queue
    await adapter.stop()
