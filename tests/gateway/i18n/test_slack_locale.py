"""Slack: the sender's locale comes from users.info (`include_locale`, looked up with their name and cached),
so a Spanish-speaking member gets the gateway's words in Spanish; a slash command from them afterwards too."""
from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.slack import SlackAdapter
from gateway.build import command_menu
from tests.fakes import slack_api
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_api import FakeSlack, event_callback
from tests.gateway.harness import make_config, started


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


async def test_a_slack_members_locale_picks_the_language(tmp_path: Path, fake: FakeOpenAI) -> None:
    config = make_config(tmp_path, fake.base_url, platforms={"web": {"enabled": False}, "slack": {"allow_all_users": True}})
    async with FakeSlack() as slack_fake:
        slack_fake.users["U2"] = "Ana"
        slack_fake.locales["U2"] = "es-ES"
        adapter = SlackAdapter(bot_token=slack_api.BOT_TOKEN, app_token=slack_api.APP_TOKEN, mode="socket",
                               api_base_url=slack_fake.api_base_url, commands=command_menu())
        async with started(config, adapters={"slack": adapter}):
            event = {"type": "message", "channel": "D1", "channel_type": "im", "user": "U2", "text": "/help",
                     "ts": "800.1"}
            await slack_fake.socket_event(event_callback(event, event_id="EvLang1"))
            await slack_fake.wait_until(lambda: len(slack_fake.calls_to("chat.postMessage")) >= 1)
            await slack_fake.slash_command({"command": "/stop", "text": "", "channel_id": "D1", "channel_name": "directmessage",
                                            "user_id": "U2", "user_name": "ana", "trigger_id": "t1"})
            await slack_fake.wait_until(lambda: len(slack_fake.calls_to("chat.postMessage")) >= 2)
    posted = [str(call.params["text"]) for call in slack_fake.calls_to("chat.postMessage")]
    assert posted[0].startswith("Comandos:\n/new o /reset — empezar una conversación nueva")
    assert posted[1] == "no hay nada que detener."
    assert len(slack_fake.calls_to("users.info")) == 1  # cached with the name
