"""`build_discord`: config section → adapter, with a missing token or bad URL named by key."""
from __future__ import annotations

import asyncio

import pytest

from adapters.base import InboundMessage
from chorus_errors import ConfigError
from gateway.config import DiscordSettings
from gateway.platforms.discord import build_discord
from tests.fakes.discord_api import DM_CHANNEL_ID, TOKEN, FakeDiscord


async def test_section_builds_an_adapter_that_probes_and_connects(fake_discord: FakeDiscord) -> None:
    """token + api_base_url + gateway_url from config reach the fake: probe is ok and start() gets READY."""
    settings = DiscordSettings.model_validate({"enabled": True, "token": TOKEN, "allowed_users": ["1"],
                                               "api_base_url": fake_discord.api_base_url + "/",
                                               "gateway_url": fake_discord.gateway_url})
    adapter = build_discord(settings)
    assert (adapter.name, adapter.limits.max_message_chars, adapter.limits.markup) == ("discord", 2000, "markdown")
    assert (await adapter.probe()).ok is True
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(queue)
    try:
        await fake_discord.send_message(fake_discord.message("via config", channel_id=DM_CHANNEL_ID, guild=False))
        assert (await asyncio.wait_for(queue.get(), 5.0)).text == "via config"
    finally:
        await adapter.stop()


@pytest.mark.parametrize("section", [{}, {"token": "   "}])
def test_missing_token_names_the_key(section: dict[str, str]) -> None:
    """No token (or a blank one) raises ConfigError naming platforms.discord.token."""
    with pytest.raises(ConfigError) as caught:
        build_discord(DiscordSettings.model_validate(section))
    assert caught.value.key == "platforms.discord.token"
    assert "platforms.discord.token" in str(caught.value)


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"api_base_url": "ftp://example.org/api"}, "platforms.discord.api_base_url"),
        ({"gateway_url": "https://gateway.example.org"}, "platforms.discord.gateway_url"),
    ],
)
def test_bad_url_names_the_key(section: dict[str, str], key: str) -> None:
    """A URL with the wrong scheme raises ConfigError naming the key, without showing the token."""
    with pytest.raises(ConfigError) as caught:
        build_discord(DiscordSettings.model_validate({"token": "secret-value", **section}))
    assert caught.value.key == key
    assert key in str(caught.value) and "secret-value" not in str(caught.value)
