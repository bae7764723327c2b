"""Discord and Slack image attachments into the model's turn: real discord.py / slack-bolt against their fakes."""
from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.discord import DiscordAdapter
from adapters.slack import SlackAdapter
from gateway.build import command_menu
from gateway.commands.table import COMMANDS
from tests.fakes import discord_api, slack_api
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.images import png
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack_api import FakeSlack, event_callback
from tests.gateway.harness import make_config, started


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def config_for(tmp_path: Path, fake: FakeOpenAI, platform: str) -> Any:
    platforms = {"web": {"enabled": False}, platform: {"allow_all_users": True}}
    return make_config(tmp_path, fake.base_url, platforms=platforms)


def user_content(request: dict[str, Any]) -> Any:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def decoded(part: dict[str, Any]) -> bytes:
    head, _, payload = part["image_url"]["url"].partition(",")
    assert head == "data:image/png;base64"
    return base64.b64decode(payload)


async def test_a_discord_image_attachment_reaches_the_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    """A mention with an attached PNG: the CDN bytes reach the model as an image part, the text beside it."""
    picture = png(5, 5, (9, 9, 9))
    fake.push(Reply(content="A grey square."))
    async with FakeDiscord() as discord_fake:
        adapter = DiscordAdapter(
            token=discord_api.TOKEN, api_base_url=discord_fake.api_base_url, gateway_url=discord_fake.gateway_url,
            ready_timeout=5.0, guild_ready_timeout=0.05,
        )
        async with started(config_for(tmp_path, fake, "discord"), adapters={"discord": adapter}):
            attachment = discord_fake.attachment("grey.png", picture, "image/png")
            await discord_fake.send_message(discord_fake.message(
                f"<@{discord_api.BOT_ID}> what colour?", mentions=(discord_api.BOT_USER,),
                attachments=(attachment,),
            ))
            request = await fake.wait_for_request()
            await discord_fake.wait_until(lambda: any(
                c.route == "POST /channels/{channel_id}/messages" for c in discord_fake.calls))
    content = user_content(request)
    assert content[0]["type"] == "text" and content[0]["text"].endswith("what colour?")
    assert decoded(content[1]) == picture


async def test_a_slack_file_is_fetched_with_the_bot_token(tmp_path: Path, fake: FakeOpenAI) -> None:
    """A DM with a shared image: url_private is downloaded with the bot token and sent as an image part."""
    picture = png(3, 7, (0, 128, 0))
    fake.push(Reply(content="Green."))
    async with FakeSlack() as slack_fake:
        adapter = SlackAdapter(
            bot_token=slack_api.BOT_TOKEN, app_token=slack_api.APP_TOKEN, mode="socket",
            api_base_url=slack_fake.api_base_url, file_hosts=(slack_fake.origin,),
        )
        async with started(config_for(tmp_path, fake, "slack"), adapters={"slack": adapter}):
            event = {"type": "message", "subtype": "file_share", "channel": "D1", "channel_type": "im", "user": "U2",
                     "text": "", "ts": "700.1", "files": [slack_fake.file("leaf.png", picture, "image/png")]}
            await slack_fake.socket_event(event_callback(event, event_id="EvImg1"))
            request = await fake.wait_for_request()
            await slack_fake.wait_until(lambda: bool(slack_fake.calls_to("chat.postMessage")))
    content = user_content(request)
    assert len(content) == 1
    assert decoded(content[0]) == picture


async def test_discord_slash_commands_are_registered_and_run(tmp_path: Path, fake: FakeOpenAI) -> None:
    """After READY the command menu is PUT; picking /usage from it is acknowledged and answered in the channel."""
    async with FakeDiscord() as discord_fake:
        adapter = DiscordAdapter(
            token=discord_api.TOKEN, api_base_url=discord_fake.api_base_url, gateway_url=discord_fake.gateway_url,
            ready_timeout=5.0, guild_ready_timeout=0.05, commands=command_menu(),
        )
        async with started(config_for(tmp_path, fake, "discord"), adapters={"discord": adapter}):
            await discord_fake.wait_until(lambda: bool(discord_fake.commands))
            await discord_fake.dispatch("INTERACTION_CREATE", discord_fake.slash_command("usage"))
            await discord_fake.wait_until(lambda: any(
                c.route == "POST /channels/{channel_id}/messages" for c in discord_fake.calls))
    posted = [c.body for c in discord_fake.calls if c.route == "POST /channels/{channel_id}/messages"]
    assert [c["name"] for c in discord_fake.commands] == [spec.name for spec in COMMANDS]
    assert discord_fake.interaction_replies[0]["data"]["flags"] == 64  # ephemeral acknowledgement
    assert posted[0] is not None and posted[0]["content"].startswith("this conversation: 0 tokens")


async def test_slack_slash_commands_are_acknowledged_and_run(tmp_path: Path, fake: FakeOpenAI) -> None:
    """A `/status` picked in Slack (a slash_commands envelope) is acked and answered in the channel."""
    async with FakeSlack() as slack_fake:
        adapter = SlackAdapter(
            bot_token=slack_api.BOT_TOKEN, app_token=slack_api.APP_TOKEN, mode="socket",
            api_base_url=slack_fake.api_base_url, commands=command_menu(),
        )
        async with started(config_for(tmp_path, fake, "slack"), adapters={"slack": adapter}):
            envelope = await slack_fake.slash_command({
                "command": "/status", "text": "", "user_id": "U2", "user_name": "bob", "channel_id": "D1",
                "channel_name": "directmessage", "trigger_id": "trig-1", "team_id": slack_api.TEAM_ID,
            })
            # The ack and the reply travel on different connections: wait for both.
            await slack_fake.wait_until(lambda: bool(slack_fake.calls_to("chat.postMessage")) and envelope in slack_fake.acks)
    assert envelope in slack_fake.acks
    (posted,) = slack_fake.calls_to("chat.postMessage")
    assert posted.params["channel"] == "D1"
    assert "compression threshold" in str(posted.params["text"])
