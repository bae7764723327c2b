"""Slash commands over the Events API: Slack posts them as signed form bodies, not JSON."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlencode

import aiohttp
import pytest

from adapters.base import BotCommand, InboundMessage
from adapters.slack import SlackAdapter
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack, signed_headers

from .conftest import WAIT, serving

FORM = "application/x-www-form-urlencoded"


@pytest.fixture
async def slash() -> AsyncIterator[tuple[str, asyncio.Queue[InboundMessage], aiohttp.ClientSession]]:
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET,
                               api_base_url=fake.api_base_url.rstrip("/"), commands=(BotCommand("status", "show status"),))
        async with serving(adapter) as (url, queue), aiohttp.ClientSession() as http:
            yield url, queue, http


async def _post_form(http: aiohttp.ClientSession, url: str, body: str, *, signed: bool = True) -> int:
    headers = {**signed_headers(body), "Content-Type": FORM} if signed else {"Content-Type": FORM}
    async with http.post(url, data=body.encode(), headers=headers) as response:
        return response.status


async def test_a_slash_command_form_body_reaches_the_gateway(
    slash: tuple[str, asyncio.Queue[InboundMessage], aiohttp.ClientSession],
) -> None:
    """`command=/status&…` signed as Slack signs it: acked 200 and handed on as the typed `/status`."""
    url, queue, http = slash
    body = urlencode({"command": "/status", "text": "now", "channel_id": "C1", "user_id": "U1",
                      "user_name": "alice", "trigger_id": "T1"})
    assert await _post_form(http, url, body) == 200
    message = await asyncio.wait_for(queue.get(), WAIT)
    assert (message.text, message.user_id, message.chat_id, message.mentions_bot) == ("/status now", "U1", "C1", True)


async def test_an_unsigned_or_shapeless_form_is_refused(
    slash: tuple[str, asyncio.Queue[InboundMessage], aiohttp.ClientSession],
) -> None:
    """Unsigned: 401; signed but neither a command nor an interaction: 400 saying so; nothing is handed on."""
    url, queue, http = slash
    command = urlencode({"command": "/status", "channel_id": "C1", "user_id": "U1"})
    assert await _post_form(http, url, command, signed=False) == 401
    assert await _post_form(http, url, urlencode({"hello": "world"})) == 400
    assert queue.empty()
