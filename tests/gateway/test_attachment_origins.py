"""Attachments on a host that is not the platform's: real slack-bolt / discord.py / python-telegram-bot paths.

A foreign loopback server records every request; it must get none (and never
the bot token), the model must get no request, and the user gets one short line.
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from adapters.discord import DiscordAdapter
from adapters.slack import SlackAdapter
from gateway.i18n import say
from tests.fakes import discord_api, slack_api, telegram_api
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.images import png
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.recorder import Recorder
from tests.fakes.slack_api import FakeSlack, event_callback, signed_headers
from tests.fakes.telegram_api import FakeTelegram
from tests.gateway.daemon import start_daemon, stop_daemon
from tests.gateway.harness import make_config, started


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def config_for(tmp_path: Path, fake: FakeOpenAI, platform: str) -> Any:
    platforms = {"web": {"enabled": False}, platform: {"allow_all_users": True}}
    return make_config(tmp_path, fake.base_url, platforms=platforms)


async def test_a_slack_file_on_a_foreign_host_gets_nothing_not_even_the_token(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """url_private pointing off `file_hosts`: no request there, no model call, one short line to the user."""
    async with FakeSlack() as slack_fake, Recorder() as foreign:
        adapter = SlackAdapter(
            bot_token=slack_api.BOT_TOKEN, app_token=slack_api.APP_TOKEN, mode="socket",
            api_base_url=slack_fake.api_base_url, file_hosts=(slack_fake.origin,),
        )
        async with started(config_for(tmp_path, fake, "slack"), adapters={"slack": adapter}):
            shared = slack_fake.file("leaf.png", png(2, 2, (1, 2, 3)), "image/png")
            shared["url_private"] = f"{foreign.origin}/metrics"
            event = {"type": "message", "subtype": "file_share", "channel": "D1", "channel_type": "im", "user": "U2",
                     "text": "what is this?", "ts": "701.1", "files": [shared]}
            await slack_fake.socket_event(event_callback(event, event_id="EvForeign1"))
            await slack_fake.wait_until(lambda: bool(slack_fake.calls_to("chat.postMessage")))
    (posted,) = slack_fake.calls_to("chat.postMessage")
    assert posted.params["text"] == say("en", "media.fetch_refused")
    assert foreign.requests == []
    assert fake.requests == []


async def test_a_slack_file_on_a_file_host_redirecting_away_is_refused(tmp_path: Path, fake: FakeOpenAI) -> None:
    """The configured file host answers with a redirect to a foreign one: the foreign one is never contacted."""
    async with Recorder() as foreign, Recorder() as file_host, FakeSlack() as slack_fake:
        async def away(_request: web.Request) -> web.StreamResponse:
            raise web.HTTPFound(f"{foreign.origin}/latest/meta-data/")

        file_host.handler = away
        adapter = SlackAdapter(
            bot_token=slack_api.BOT_TOKEN, app_token=slack_api.APP_TOKEN, mode="socket",
            api_base_url=slack_fake.api_base_url, file_hosts=(file_host.origin,),
        )
        async with started(config_for(tmp_path, fake, "slack"), adapters={"slack": adapter}):
            shared = {"id": "F9", "name": "a.txt", "mimetype": "text/plain", "size": 10,
                      "url_private": f"{file_host.origin}/files-pri/T1-F9/a.txt"}
            event = {"type": "message", "subtype": "file_share", "channel": "D1", "channel_type": "im", "user": "U2",
                     "text": "", "ts": "702.1", "files": [shared]}
            await slack_fake.socket_event(event_callback(event, event_id="EvForeign2"))
            await slack_fake.wait_until(lambda: bool(slack_fake.calls_to("chat.postMessage")))
    (posted,) = slack_fake.calls_to("chat.postMessage")
    assert posted.params["text"] == say("en", "media.fetch_refused")
    assert file_host.requests == [("/files-pri/T1-F9/a.txt", f"Bearer {slack_api.BOT_TOKEN}")]
    assert foreign.requests == [] and fake.requests == []


async def test_a_discord_attachment_on_a_foreign_host_is_not_fetched(tmp_path: Path, fake: FakeOpenAI) -> None:
    """An attachment url off the CDN and off `api_base_url`: nothing fetched, no model call."""
    async with FakeDiscord() as discord_fake, Recorder() as foreign:
        adapter = DiscordAdapter(
            token=discord_api.TOKEN, api_base_url=discord_fake.api_base_url, gateway_url=discord_fake.gateway_url,
            ready_timeout=5.0, guild_ready_timeout=0.05,
        )
        async with started(config_for(tmp_path, fake, "discord"), adapters={"discord": adapter}):
            attachment = discord_fake.attachment("grey.png", png(2, 2, (9, 9, 9)), "image/png")
            attachment["url"] = attachment["proxy_url"] = f"{foreign.origin}/attachments/grey.png"
            await discord_fake.send_message(discord_fake.message(
                f"<@{discord_api.BOT_ID}> what colour?", mentions=(discord_api.BOT_USER,), attachments=(attachment,),
            ))
            await discord_fake.wait_until(lambda: any(
                c.route == "POST /channels/{channel_id}/messages" for c in discord_fake.calls))
    posted = [c.body for c in discord_fake.calls if c.route == "POST /channels/{channel_id}/messages"]
    assert posted[0] is not None and posted[0]["content"] == say("en", "media.fetch_refused")
    assert foreign.requests == [] and fake.requests == []


async def test_a_telegram_file_path_naming_a_local_file_is_not_read(tmp_path: Path, fake: FakeOpenAI) -> None:
    """getFile answering with an absolute path that exists here: python-telegram-bot would read the local file;
    the fetcher takes only the Bot API server's origin, so nothing of it reaches the model."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET local file")
    async with FakeTelegram() as tg:
        tg.add_file("d1", secret.read_bytes(), path=str(secret))
        document = {"file_id": "d1", "file_unique_id": "ud", "file_name": "notes.txt", "mime_type": "text/plain",
                    "file_size": 21}
        platforms = {"web": {"enabled": False},
                     "telegram": {"enabled": True, "token": telegram_api.TOKEN, "base_url": f"http://127.0.0.1:{tg.port}",
                                  "allow_all_users": True}}
        async with started(make_config(tmp_path, fake.base_url, platforms=platforms)):
            chat = telegram_api.private_chat()
            await tg.push_update(message=telegram_api.message(chat, "", document=document, caption="read it"))
            await tg.wait_for_text(chat["id"], say("en", "media.fetch_refused"))
    assert fake.requests == []


async def test_chorus_run_takes_a_signed_slack_event_naming_a_foreign_host_without_leaking(tmp_path: Path) -> None:
    """Through `chorus run` (Events API on the admin port, slack-bolt, the configured file_hosts): the foreign
    host gets no request, the model no call, the user one line, the log one line naming the host, no token."""
    async with FakeOpenAI() as model, FakeSlack() as slack_fake, Recorder() as foreign:
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({
            "home": str(tmp_path / "home"),
            "model": {"name": "fake-model", "base_url": model.base_url, "api_key": "sk-test", "context_length": 128000},
            "platforms": {"web": {"enabled": False}, "slack": {
                "enabled": True, "mode": "events", "bot_token": slack_api.BOT_TOKEN,
                "signing_secret": slack_api.SIGNING_SECRET, "api_base_url": slack_fake.api_base_url,
                "allow_all_users": True, "file_hosts": [slack_fake.origin]}},
            "admin": {"host": "127.0.0.1", "port": 0}, "logging": {"format": "json"},
            "memory": {"nudge_interval": 0, "flush_min_turns": 0}, "gateway": {"shutdown_grace_seconds": 2},
        }), encoding="utf-8")
        process, lines = await start_daemon(config)
        try:
            (started_line,) = [line for line in lines if line.get("event") == "admin.started"]
            events_url = str(started_line["url"]).replace("/healthz", "/slack/events")
            shared = {"id": "F1", "name": "notes.txt", "mimetype": "text/plain", "size": 8,
                      "url_private": f"{foreign.origin}/metrics"}
            event = {"type": "message", "subtype": "file_share", "channel": "D1", "channel_type": "im", "user": "U2",
                     "text": "look", "ts": "900.1", "files": [shared]}
            body = json.dumps(event_callback(event, event_id="EvDaemon1"))
            async with aiohttp.ClientSession() as http, http.post(
                events_url, data=body, headers={**signed_headers(body), "Content-Type": "application/json"}
            ) as response:
                assert response.status == 200
            await slack_fake.wait_until(lambda: bool(slack_fake.calls_to("chat.postMessage")), timeout=30)
        finally:
            await stop_daemon(process)
    (posted,) = slack_fake.calls_to("chat.postMessage")
    assert posted.params["text"] == say("en", "media.fetch_refused")
    assert foreign.requests == [] and model.requests == []
    (refused,) = [line for line in lines if line.get("event") == "attachment.refused"]
    assert (refused["platform"], refused["host"]) == ("slack", "127.0.0.1")
    assert slack_api.BOT_TOKEN not in json.dumps(lines)
