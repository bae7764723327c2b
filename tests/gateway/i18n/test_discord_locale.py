"""Discord: a slash command is answered in the language of the user's client (the interaction's `locale`),
and the menu carries every catalogue language as `description_localizations`."""
from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.discord import DiscordAdapter
from gateway.build import command_menu
from tests.fakes import discord_api
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.harness import make_config, started

POSTED = "POST /channels/{channel_id}/messages"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


async def test_a_slash_command_is_answered_in_the_clients_locale(tmp_path: Path, fake: FakeOpenAI) -> None:
    config = make_config(tmp_path, fake.base_url, platforms={"web": {"enabled": False}, "discord": {"allow_all_users": True}})
    async with FakeDiscord() as discord_fake:
        adapter = DiscordAdapter(
            token=discord_api.TOKEN, api_base_url=discord_fake.api_base_url, gateway_url=discord_fake.gateway_url,
            ready_timeout=5.0, guild_ready_timeout=0.05, commands=command_menu(),
        )
        async with started(config, adapters={"discord": adapter}):
            await discord_fake.wait_until(lambda: bool(discord_fake.commands))
            for locale in ("pt-BR", "en-US"):
                await discord_fake.dispatch("INTERACTION_CREATE", discord_fake.slash_command("help", locale=locale))
                count = 1 if locale == "pt-BR" else 2
                await discord_fake.wait_until(lambda n=count: len([c for c in discord_fake.calls if c.route == POSTED]) >= n)
    posted = [str((c.body or {})["content"]) for c in discord_fake.calls if c.route == POSTED]
    assert posted[0].startswith("Comandos:\n/new ou /reset — começar uma nova conversa")
    assert posted[1].startswith("Commands:\n/new or /reset — start a new conversation")
    new = discord_fake.commands[0]
    assert new["description"] == "Start a new conversation (notes are kept)"
    assert new["description_localizations"]["zh-CN"] == "开始新的对话（保留笔记）"
    assert new["description_localizations"]["pt-BR"] == "Começar uma nova conversa (as notas são mantidas)"
