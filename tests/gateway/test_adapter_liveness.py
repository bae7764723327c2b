"""An adapter that stops receiving is noticed (issue 30, item 6).

The gateway built as `chorus run` builds it, with the real Telegram adapter (PTB) polling the fake Bot API
with a short long-poll timeout: getUpdates hangs (never answers), then answers 502, then recovers. `/readyz`
goes red naming telegram, the hang and the outage are logged once, `chorus_adapter_up` follows, and once
getUpdates answers again `/readyz` is green and messages are answered.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import aiohttp
import structlog

from adapters.telegram import TelegramAdapter
from gateway.admin.events import EventLog
from gateway.admin.gateway_backend import GatewayBackend
from gateway.ops.metrics import Metrics
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_api import TOKEN, FakeTelegram, message, private_chat
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus, serving_readyz, until

WAIT = 60.0


async def _status(http: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, Any]]:
    async with http.get(url) as response:
        return response.status, await response.json()


async def test_a_hung_then_failing_poll_turns_readyz_red_naming_telegram_then_green(
    fake_openai: FakeOpenAI, home: Path,
) -> None:
    async with FakeTelegram() as tg:
        adapter = TelegramAdapter(TOKEN, base_url=f"http://127.0.0.1:{tg.port}", poll_timeout=1, hang_grace=1)
        platforms = {"web": {"enabled": False}, "telegram": {"allow_all_users": True}}
        config = make_config(home, fake_openai.base_url, platforms=platforms)
        with structlog.testing.capture_logs() as logs:
            async with run_like_chorus(config, adapters={"telegram": adapter}) as (gateway, _ops), \
                    serving_readyz(gateway) as url, aiohttp.ClientSession() as http:
                start_status, _ = await _status(http, url)
                polls = len(tg.calls_of("getUpdates"))
                tg.hang("getUpdates")
                tg.bad_gateway("getUpdates", times=2)
                hung_at = time.monotonic()
                await tg.wait_for_calls("getUpdates", polls + 1, timeout=WAIT)
                red = await until(lambda: _when(http, url, 503), timeout=WAIT)
                time_to_red = time.monotonic() - hung_at
                metrics = Metrics()
                GatewayBackend(gateway, events=EventLog(), config=config).refresh_metrics(metrics)
                down_metric = metrics.adapter_up.labels(platform="telegram")._value.get()
                green = await until(lambda: _when(http, url, 200), timeout=WAIT)
                await tg.push_update(message=message(private_chat(777), "still there?"))
                await tg.wait_for_text(777, "echo: still there?", timeout=WAIT)
                GatewayBackend(gateway, events=EventLog(), config=config).refresh_metrics(metrics)
                up_metric = metrics.adapter_up.labels(platform="telegram")._value.get()
    assert start_status == 200
    assert red["adapters_started"] is False and "telegram is not receiving" in red["detail"], red
    assert green["adapters_started"] is True and green["detail"] == ""
    assert (down_metric, up_metric) == (0.0, 1.0)
    events = [line["event"] for line in logs]
    assert events.count("telegram.poll_hung") == 1
    assert events.count("adapter.down") == 1 and events.count("adapter.back") == 1
    assert events.index("adapter.down") < events.index("adapter.back")
    print(f"time to /readyz red for a hung getUpdates (poll timeout 1 s + grace 1 s): {time_to_red:.1f} s")


async def _when(http: aiohttp.ClientSession, url: str, wanted: int) -> dict[str, Any] | None:
    status, body = await _status(http, url)
    return body if status == wanted else None
