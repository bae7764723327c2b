"""Buttons on every platform with them: sent under a message, a press comes back as the presser's command,
and the presser alone is answered (Telegram answerCallbackQuery, Discord ephemeral followup, Slack postEphemeral).

Real python-telegram-bot, discord.py and slack-bolt against loopback fakes.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from urllib.parse import urlencode

import aiohttp
import pytest

from adapters.base import ChatTarget, Choice, ChoiceSender, InboundMessage
from adapters.slack import SlackAdapter
from tests.adapters.discord.conftest import make_adapter as make_discord
from tests.adapters.slack.conftest import serving
from tests.adapters.telegram.conftest import make_adapter as make_telegram
from tests.fakes.discord_api import BOB_ID, GENERAL_ID, USERS, FakeDiscord
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack, signed_headers
from tests.fakes.telegram_api import FakeTelegram, group_chat, user

WAIT = 5.0
CHOICES = (Choice("Approve", "/approve abc234"), Choice("Deny", "/deny abc234"))


async def _next(queue: asyncio.Queue[InboundMessage]) -> InboundMessage:
    return await asyncio.wait_for(queue.get(), WAIT)


async def test_telegram_buttons_press_and_private_answer() -> None:
    async with FakeTelegram() as fake:
        adapter = make_telegram(fake)
        queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
        await adapter.start(queue)
        try:
            assert isinstance(adapter, ChoiceSender)
            sent = await adapter.send_choices(ChatTarget("telegram", "-1001234"), "run it?", CHOICES)
            call = (await fake.wait_for_calls("sendMessage"))[-1]
            keyboard = call.params["reply_markup"]["inline_keyboard"]
            assert [[b["callback_data"] for b in row] for row in keyboard] == [["/approve abc234", "/deny abc234"]]
            chat = group_chat()
            await fake.push_update(callback_query={
                "id": "cq1", "from": user(778, "Bob", "bob"), "chat_instance": "x", "data": "/approve abc234",
                "message": {"message_id": int(sent[0].message_id), "date": 1_700_000_000, "chat": chat, "text": "run it?"},
            })
            press = await _next(queue)
            assert (press.text, press.user_id, press.chat_id, press.interaction) == ("/approve abc234", "778", "-1001234", "cq1")
            assert await adapter.answer_privately(press, "Only the person who asked can answer this.")
            answered = (await fake.wait_for_calls("answerCallbackQuery"))[-1].params
            assert (answered["callback_query_id"], answered["show_alert"]) == ("cq1", True)
        finally:
            await adapter.stop()


async def test_discord_buttons_press_and_ephemeral_answer() -> None:
    async with FakeDiscord() as fake:
        adapter = make_discord(fake)
        queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
        await adapter.start(queue)
        try:
            sent = await adapter.send_choices(ChatTarget("discord", GENERAL_ID), "run it?", CHOICES)
            body = fake.calls_to("POST /channels/{channel_id}/messages")[-1].body
            assert body is not None
            buttons = [c for row in body["components"] for c in row["components"]]
            assert [b["custom_id"] for b in buttons] == ["/approve abc234", "/deny abc234"]
            await fake.dispatch("INTERACTION_CREATE", fake.button_press("/approve abc234", message_id=sent[0].message_id,
                                                                         author=USERS[BOB_ID]))
            press = await _next(queue)
            assert (press.text, press.user_id, press.interaction is not None) == ("/approve abc234", BOB_ID, True)
            await fake.wait_until(lambda: bool(fake.interaction_replies))
            assert fake.interaction_replies[-1]["type"] == 6  # acknowledged without a visible message
            assert await adapter.answer_privately(press, "Only the person who asked can answer this.")
            followup = fake.interaction_followups[-1]
            assert (followup["content"], followup["flags"] & 64) == ("Only the person who asked can answer this.", 64)
        finally:
            await adapter.stop()


@pytest.fixture
async def slack() -> AsyncIterator[tuple[SlackAdapter, FakeSlack, str, asyncio.Queue[InboundMessage]]]:
    async with FakeSlack() as fake:
        fake.users.update({"U2": "bob"})
        adapter = SlackAdapter(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, api_base_url=fake.api_base_url.rstrip("/"))
        async with serving(adapter) as (url, queue):
            yield adapter, fake, url, queue


async def test_slack_buttons_click_and_ephemeral_answer(
    slack: tuple[SlackAdapter, FakeSlack, str, asyncio.Queue[InboundMessage]],
) -> None:
    adapter, fake, url, queue = slack
    await adapter.send_choices(ChatTarget("slack", "C1"), "run it?", CHOICES)
    posted = [c for c in fake.calls if c.method == "chat.postMessage"][-1].params
    blocks = posted["blocks"] if isinstance(posted["blocks"], list) else json.loads(posted["blocks"])
    assert [e["value"] for e in blocks[1]["elements"]] == ["/approve abc234", "/deny abc234"]
    action_id = blocks[1]["elements"][0]["action_id"]
    payload = {"type": "block_actions", "trigger_id": "T9", "user": {"id": "U2", "name": "bob"},
               "channel": {"id": "C1"}, "container": {"type": "message", "channel_id": "C1"},
               "actions": [{"action_id": action_id, "value": "/approve abc234", "type": "button"}],
               "team": {"id": "T1"}, "api_app_id": "A1", "token": "x"}
    body = urlencode({"payload": json.dumps(payload)})
    headers = {**signed_headers(body), "Content-Type": "application/x-www-form-urlencoded"}
    async with aiohttp.ClientSession() as http, http.post(url, data=body.encode(), headers=headers) as response:
        assert response.status == 200
    press = await _next(queue)
    assert (press.text, press.user_id, press.user_name, press.interaction) == ("/approve abc234", "U2", "bob", "T9")
    assert await adapter.answer_privately(press, "Only the person who asked can answer this.")
    ephemeral = [c for c in fake.calls if c.method == "chat.postEphemeral"][-1].params
    assert (ephemeral["user"], ephemeral["channel"]) == ("U2", "C1")
