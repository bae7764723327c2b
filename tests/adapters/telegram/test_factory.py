"""gateway/platforms/telegram.py: config section to adapter, with errors naming the key."""
from __future__ import annotations

import asyncio
import socket

import pytest

from adapters.base import InboundMessage, ProbeResult
from chorus_errors import ConfigError
from gateway.config import TelegramSettings
from gateway.platforms.telegram import build_telegram
from tests.fakes.telegram_api import TOKEN, FakeTelegram


def _settings(**values: object) -> TelegramSettings:
    return TelegramSettings.model_validate({"enabled": True, **values})


async def test_polling_settings_build_a_working_adapter(fake: FakeTelegram) -> None:
    """token and base_url reach the adapter: its probe talks to the configured server."""
    adapter = build_telegram(_settings(token=TOKEN, base_url=f"http://127.0.0.1:{fake.port}/"))
    assert (adapter.name, adapter.limits.max_message_chars, adapter.limits.markup, adapter.routes()) == (
        "telegram", 4096, "markdown_v2", [])
    assert await adapter.probe() == ProbeResult("telegram", True, f"@chorus_bot (id 123456) via http://127.0.0.1:{fake.port}")


async def test_webhook_settings_serve_on_the_configured_listener(fake: FakeTelegram) -> None:
    """Webhook mode registers webhook.url with the secret and serves webhook.path on listen:port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    adapter = build_telegram(_settings(
        token=TOKEN, base_url=f"http://127.0.0.1:{fake.port}", mode="webhook",
        webhook={"listen": "127.0.0.1", "port": free, "path": "/hook", "url": "https://x.org/hook",
                 "secret_token": "abc_DEF-123"}))
    await adapter.start(asyncio.Queue[InboundMessage]())
    try:
        params = fake.calls_of("setWebhook")[0].params
        port = adapter.webhook_port
    finally:
        await adapter.stop()
    assert (params["url"], params["secret_token"], port) == ("https://x.org/hook", "abc_DEF-123", free)


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({}, "platforms.telegram.token"),
        ({"token": "  "}, "platforms.telegram.token"),
        ({"token": TOKEN, "mode": "webhook"}, "platforms.telegram.webhook.url"),
        ({"token": TOKEN, "mode": "webhook", "webhook": {"url": "https://x.org/t"}}, "platforms.telegram.webhook.secret_token"),
        ({"token": TOKEN, "mode": "webhook", "webhook": {"url": "https://x.org/t", "secret_token": "no spaces!"}},
         "platforms.telegram.webhook"),
    ],
)
def test_missing_or_bad_settings_name_the_key(values: dict[str, object], key: str) -> None:
    """Each unusable setting raises ConfigError naming its key, and never echoes the token."""
    with pytest.raises(ConfigError) as caught:
        build_telegram(_settings(**values))
    assert caught.value.key == key
    assert TOKEN not in str(caught.value)
