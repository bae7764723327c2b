"""Webhook mode: setWebhook with a secret, our aiohttp route checking it, updates flowing to the queue."""
from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from adapters.base import AdapterError, InboundMessage
from adapters.receipts import Receipts
from adapters.telegram import SECRET_HEADER, TelegramAdapter, WebhookOptions
from tests.adapters.telegram.conftest import make_adapter, next_message
from tests.fakes.telegram_api import FakeTelegram, group_chat, message, private_chat

SECRET = "s3cret-Token_1"


@pytest.fixture
async def served(fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]) -> AsyncIterator[tuple[TelegramAdapter, str]]:
    """A webhook adapter serving its own route on a free port; yields it and the route's URL."""
    options = WebhookOptions(url="https://bot.example.org/tg", secret_token=SECRET, path="/tg", listen="127.0.0.1", port=0)
    adapter = make_adapter(fake, mode="webhook", webhook=options)
    await adapter.start(inbound)
    yield adapter, f"http://127.0.0.1:{adapter.webhook_port}/tg"
    await adapter.stop()


async def _post(url: str, body: bytes, secret: str | None = SECRET) -> int:
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers[SECRET_HEADER] = secret
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as response:
        return response.status


def _update(fake: FakeTelegram, text: str) -> bytes:
    return json.dumps({"update_id": fake.next_update_id(), "message": message(private_chat(), text)}).encode()


async def test_start_registers_the_webhook_with_its_secret(fake: FakeTelegram, served: tuple[TelegramAdapter, str]) -> None:
    """setWebhook gets the public URL, the secret and the allowed update types; no polling happens."""
    params = fake.calls_of("setWebhook")[0].params
    assert (params["url"], params["secret_token"], params["allowed_updates"]) == (
        "https://bot.example.org/tg", SECRET, ["message", "edited_message", "callback_query"])
    assert fake.calls_of("getUpdates") == []


async def test_valid_update_is_queued(
    fake: FakeTelegram, served: tuple[TelegramAdapter, str], inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A POST with the right secret answers 200 and the message reaches the queue."""
    body = json.dumps({"update_id": 9001, "message": message(group_chat(), "via webhook")}).encode()
    assert await _post(served[1], body) == 200
    got = await next_message(inbound)
    assert (got.text, got.chat_type, got.delivery_id) == ("via webhook", "group", "telegram:9001")


@pytest.mark.parametrize("secret", [None, "wrong-secret", SECRET + "x", ""])
async def test_bad_or_missing_secret_is_403_and_not_handled(
    fake: FakeTelegram, served: tuple[TelegramAdapter, str], inbound: asyncio.Queue[InboundMessage], secret: str | None
) -> None:
    """A missing or wrong secret gets 403 and the update never reaches the queue."""
    assert await _post(served[1], _update(fake, "forged"), secret=secret) == 403
    assert await _post(served[1], _update(fake, "genuine")) == 200
    assert (await next_message(inbound)).text == "genuine"
    assert inbound.empty()


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"message": {}}', b'{"update_id": "7"}',
                                  b'{"update_id": 7, "message": {"text": "no ids"}}'])
async def test_malformed_payload_is_400_and_the_route_stays_healthy(
    fake: FakeTelegram, served: tuple[TelegramAdapter, str], inbound: asyncio.Queue[InboundMessage], body: bytes
) -> None:
    """Malformed JSON or a non-update answers 400; a valid update right after still flows."""
    assert await _post(served[1], body) == 400
    assert await _post(served[1], _update(fake, "still alive")) == 200
    assert (await next_message(inbound)).text == "still alive"


async def test_routes_mount_into_the_host_application(fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]) -> None:
    """Without `listen`, routes() gives the host app a route that answers 503 until start, then works."""
    options = WebhookOptions(url="https://bot.example.org/telegram", secret_token=SECRET)
    adapter = make_adapter(fake, mode="webhook", webhook=options)
    app = web.Application()
    app.add_routes(adapter.routes())
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/telegram"  # type: ignore[union-attr]
    try:
        before = await _post(url, _update(fake, "too early"))
        await adapter.start(inbound)
        after = await _post(url, _update(fake, "on time"))
        await adapter.stop()
    finally:
        await runner.cleanup()
    assert (before, after, adapter.webhook_port) == (503, 200, None)
    assert (await next_message(inbound)).text == "on time"


def test_webhook_options_are_validated() -> None:
    """Webhook mode without options, or with an unusable secret, fails at construction with the reason."""
    with pytest.raises(ValueError, match="needs webhook options"):
        TelegramAdapter("1:x", mode="webhook")
    with pytest.raises(ValueError, match="secret_token must be 1-256 characters"):
        TelegramAdapter("1:x", mode="webhook", webhook=WebhookOptions(url="https://x.org/t", secret_token="has space"))


def test_polling_adapter_has_no_routes() -> None:
    """A polling adapter gives the host application nothing to mount."""
    assert TelegramAdapter("1:x").routes() == []


async def test_busy_webhook_port_fails_start_and_leaves_it_restartable(
    fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A taken listen port makes start() raise AdapterError naming it; after freeing it, start() works."""
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    options = WebhookOptions(url="https://bot.example.org/tg", secret_token=SECRET, listen="127.0.0.1", port=port)
    adapter = make_adapter(fake, mode="webhook", webhook=options)
    with pytest.raises(AdapterError, match=f"cannot serve the Telegram webhook on 127.0.0.1:{port}"):
        await adapter.start(inbound)
    running_after_failure = adapter.running
    blocker.close()
    await adapter.start(inbound)
    await adapter.stop()
    assert (running_after_failure, adapter.webhook_port) == (False, None)


async def test_with_receipts_a_webhook_is_answered_only_once_the_message_is_recorded(
    fake: FakeTelegram, served: tuple[TelegramAdapter, str], inbound: asyncio.Queue[InboundMessage]
) -> None:
    """`expect_receipts`: the 200 waits for `received` (a process dying before recording answers nothing)."""
    adapter, url = served
    adapter.expect_receipts()
    posting = asyncio.ensure_future(_post(url, _update(fake, "record me first")))
    got = await next_message(inbound)
    done, _ = await asyncio.wait({posting}, timeout=0.3)  # bounded: shows the answer is held back
    assert done == set()
    adapter.received(got)
    assert await posting == 200


async def test_a_receipt_that_never_comes_times_out() -> None:
    """Unsettled past the timeout: `wait` is False (the adapter answers 503, the platform delivers again)."""
    receipts = Receipts(timeout=0.05)
    assert await receipts.wait("telegram:1") is True  # inactive until expected
    receipts.expect()
    assert await receipts.wait("telegram:2") is False
