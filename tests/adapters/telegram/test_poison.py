"""Telegram's inbound path with hostile text: escaped lone surrogates, NUL, controls, deep and huge JSON."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from telegram import Update

from adapters.base import InboundMessage
from adapters.decisions import Ignored
from adapters.telegram import SECRET_HEADER, TelegramAdapter, WebhookOptions
from adapters.telegram._inbound import BotIdentity, to_inbound
from tests.adapters.strategies import hostile_text, nested_json, strings_of, utf8_valid
from tests.adapters.telegram.conftest import make_adapter, next_message
from tests.fakes.telegram_api import BOT_ID, BOT_USERNAME, FakeTelegram, group_chat, message, user

SECRET = "poison-secret"
BOT = BotIdentity(id=BOT_ID, username=BOT_USERNAME)


def _units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _update(text: str, first_name: str = "Ada", file_name: str | None = None) -> dict[str, Any]:
    """A group message starting with a command addressed to the bot, the rest hostile."""
    command = f"/ask@{BOT_USERNAME}"
    body = f"{command} {text}"
    extra: dict[str, Any] = {"entities": [{"type": "bot_command", "offset": 0, "length": _units(command)}]}
    if file_name is not None:
        extra["document"] = {"file_id": "f1", "file_unique_id": "u1", "file_name": file_name}
    payload = message(group_chat(), body, sender=user(555, first_name), **extra)
    return {"update_id": 42, "message": payload}


@given(text=hostile_text, name=hostile_text, file_name=hostile_text)
def test_hostile_updates_become_valid_messages(text: str, name: str, file_name: str) -> None:
    """Whatever the JSON carried, the message is valid UTF-8 without NUL and the command is still recognised."""
    raw = json.dumps(_update(text, name or "x", file_name))  # escapes surrogates as "\\udXXX", as a platform may
    decision = to_inbound(Update.de_json(json.loads(raw), None), BOT)
    assert not isinstance(decision, Ignored)
    assert all(utf8_valid(value) and "\x00" not in value for value in strings_of(decision))
    assert decision.text.startswith("/ask ") and decision.mentions_bot


@pytest.fixture
async def served(fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]) -> AsyncIterator[str]:
    options = WebhookOptions(url="https://bot.example.org/tg", secret_token=SECRET, path="/tg", listen="127.0.0.1", port=0)
    adapter: TelegramAdapter = make_adapter(fake, mode="webhook", webhook=options)
    await adapter.start(inbound)
    yield f"http://127.0.0.1:{adapter.webhook_port}/tg"
    await adapter.stop()


async def _post(url: str, body: bytes) -> int:
    headers = {"Content-Type": "application/json", SECRET_HEADER: SECRET}
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as response:
        return response.status


async def test_webhook_update_with_an_escaped_lone_surrogate_is_queued_cleaned(
    served: str, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """"\\ud83d" in the webhook body is valid JSON: the update is taken (200) and its text holds U+FFFD."""
    body = json.dumps({"update_id": 7001, "message": message(group_chat(), "cut \ud83d emoji")}).encode()
    assert b"\\ud83d" in body
    assert await _post(served, body) == 200
    assert (await next_message(inbound)).text == "cut \ufffd emoji"


@pytest.mark.parametrize("depth", [5_000, 200_000])
async def test_deeply_nested_webhook_body_is_400_and_the_route_stays_healthy(
    served: str, inbound: asyncio.Queue[InboundMessage], depth: int
) -> None:
    """A body nested past the parser's limit (top level or inside the update) is 400; the next update flows."""
    assert await _post(served, nested_json(depth).encode()) == 400
    deep_reply = '{"update_id": 7002, "message": ' + '{"message_id": 1, "date": 1, "chat": {"id": 1, "type": "private"}, "reply_to_message": ' * 3000
    assert await _post(served, (deep_reply + "{}" + "}" * 3001).encode()) == 400
    ok = json.dumps({"update_id": 7003, "message": message(group_chat(), "still alive")}).encode()
    assert await _post(served, ok) == 200
    assert (await next_message(inbound)).text == "still alive"


async def test_huge_update_text_is_taken_and_an_oversized_body_refused(
    served: str, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A 100,000-character hostile text (far past Telegram's 4,096) is taken; a body past 1 MB is a clean 413."""
    body = json.dumps({"update_id": 7004, "message": message(group_chat(), "\x00\ud83d" * 50_000)}).encode()
    assert await _post(served, body) == 200
    assert (await next_message(inbound)).text == "\ufffd" * 50_000
    huge = json.dumps({"update_id": 7005, "message": message(group_chat(), "x" * 2_000_000)}).encode()
    assert await _post(served, huge) == 413
    ok = json.dumps({"update_id": 7006, "message": message(group_chat(), "after the big one")}).encode()
    assert await _post(served, ok) == 200
    assert (await next_message(inbound)).text == "after the big one"
