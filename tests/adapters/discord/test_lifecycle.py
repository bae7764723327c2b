"""Lifecycle: start/stop (repeatable), probe, bad tokens, and discord.py's process-wide endpoints restored."""
from __future__ import annotations

import asyncio
import logging

import discord.gateway
import discord.http
import pytest

from adapters.base import AdapterError, InboundMessage
from tests.adapters.discord.conftest import Harness, make_adapter
from tests.fakes.discord_api import BOT_ID, DM_CHANNEL_ID, TOKEN, FakeDiscord

ORIGINAL_BASE = "https://discord.com/api/v10"
ORIGINAL_GATEWAY = "wss://gateway.discord.gg/"


def _endpoints() -> tuple[str, str]:
    return discord.http.Route.BASE, str(discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)


async def test_probe_reports_the_bot_identity(fake_discord: FakeDiscord) -> None:
    """probe() GETs /users/@me with the Bot token and names the bot; endpoints are restored afterwards."""
    result = await make_adapter(fake_discord).probe()
    [call] = fake_discord.calls_to("GET /users/@me")
    assert (result.platform, result.ok, result.detail) == ("discord", True, f"connected as @chorus ({BOT_ID})")
    assert call.authorization == f"Bot {TOKEN}"
    assert _endpoints() == (ORIGINAL_BASE, ORIGINAL_GATEWAY)


async def test_probe_while_running_shares_the_endpoints(discord_bot: Harness) -> None:
    """A probe during a run leaves discord.py pointed at the fake until stop()."""
    assert (await discord_bot.adapter.probe()).ok is True
    assert _endpoints() == (discord_bot.fake.api_base_url, discord_bot.fake.gateway_url)
    await discord_bot.adapter.stop()
    assert _endpoints() == (ORIGINAL_BASE, ORIGINAL_GATEWAY)


async def test_bad_token_fails_start_and_probe_clearly(
    fake_discord: FakeDiscord, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong token: start() raises '401: check platforms.discord.token', probe says the same, no token is shown."""
    caplog.set_level(logging.DEBUG)
    adapter = make_adapter(fake_discord, token="wrong-secret-token")
    with pytest.raises(AdapterError) as caught:
        await adapter.start(asyncio.Queue())
    result = await adapter.probe()
    printed = capsys.readouterr()
    assert (str(caught.value), caught.value.status) == ("discord login failed: 401: check platforms.discord.token", 401)
    assert (result.ok, result.detail) == (False, "discord GET /users/@me failed: 401: check platforms.discord.token")
    assert "wrong-secret-token" not in printed.out + printed.err + caplog.text
    assert "/users/@me" in caplog.text  # discord.py's own debug log was captured, and it holds no token
    assert fake_discord.connections == []
    assert _endpoints() == (ORIGINAL_BASE, ORIGINAL_GATEWAY)
    await adapter.stop()  # a failed start leaves nothing to stop


async def test_gateway_rejecting_the_token_fails_start(fake_discord: FakeDiscord) -> None:
    """If the gateway closes with 4004 after IDENTIFY, start() raises an AdapterError naming the token key."""
    fake_discord.reject_identify = True
    with pytest.raises(AdapterError) as caught:
        await make_adapter(fake_discord).start(asyncio.Queue())
    expected = "discord gateway connection failed: gateway closed 4004: authentication failed: check platforms.discord.token"
    assert (str(caught.value), caught.value.status) == (expected, 4004)
    assert len(fake_discord.connections) == 1
    assert _endpoints() == (ORIGINAL_BASE, ORIGINAL_GATEWAY)


async def test_unreachable_discord_fails_start_clearly() -> None:
    """With nothing listening, start() raises 'cannot reach Discord' and restores the endpoints."""
    async with FakeDiscord() as fake:
        adapter = make_adapter(fake)
    with pytest.raises(AdapterError, match="discord login failed: cannot reach Discord"):
        await adapter.start(asyncio.Queue())
    assert _endpoints() == (ORIGINAL_BASE, ORIGINAL_GATEWAY)


async def test_stop_then_start_again_delivers(fake_discord: FakeDiscord) -> None:
    """stop() closes the gateway; a second start() IDENTIFYs anew and messages flow again; stop() twice is fine."""
    adapter = make_adapter(fake_discord)
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(queue)
    with pytest.raises(RuntimeError, match="already started"):
        await adapter.start(queue)
    await adapter.stop()
    await adapter.stop()
    assert _endpoints() == (ORIGINAL_BASE, ORIGINAL_GATEWAY)
    await adapter.start(queue)
    try:
        await fake_discord.send_message(fake_discord.message("again", channel_id=DM_CHANNEL_ID, guild=False))
        assert (await asyncio.wait_for(queue.get(), 5.0)).text == "again"
        assert len(fake_discord.client_ops(2)) == 2
        assert adapter.identity is not None and adapter.identity.user_id == BOT_ID
    finally:
        await adapter.stop()
    assert adapter.identity is None


async def test_two_adapters_with_different_endpoints_are_refused(fake_discord: FakeDiscord) -> None:
    """discord.py's endpoints are process-wide: a second adapter pointing elsewhere fails start() clearly."""
    first = make_adapter(fake_discord)
    await first.start(asyncio.Queue())
    try:
        async with FakeDiscord() as other:
            with pytest.raises(AdapterError, match="process-wide"):
                await make_adapter(other).start(asyncio.Queue())
        assert _endpoints() == (fake_discord.api_base_url, fake_discord.gateway_url)
    finally:
        await first.stop()
    assert _endpoints() == (ORIGINAL_BASE, ORIGINAL_GATEWAY)
