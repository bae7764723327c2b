"""Start/stop symmetry, recovery of long polling, and probe()."""
from __future__ import annotations

import asyncio
import socket
import time

import pytest

from adapters.base import AdapterError, InboundMessage, ProbeResult
from adapters.telegram import TelegramAdapter
from tests.adapters.telegram.conftest import make_adapter, next_message
from tests.fakes.telegram_api import TOKEN, FakeTelegram, message, private_chat


async def test_polling_survives_dropped_connections_and_502(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """After getUpdates is cut off and then answered 502, updates flow again (PTB's retry loop, 1 s + 1.5 s backoff)."""
    await fake.wait_for_calls("getUpdates")
    fake.drop("getUpdates")
    fake.bad_gateway("getUpdates")
    started = time.monotonic()
    polls_before = len(fake.calls_of("getUpdates"))
    await fake.wait_for_calls("getUpdates", polls_before + 3, timeout=10)  # 2 failures, then a healthy poll
    await fake.push_update(message=message(private_chat(), "back online"))
    assert (await next_message(inbound)).text == "back online"
    assert polling.running
    assert time.monotonic() - started < 8


async def test_start_stop_start_again(fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]) -> None:
    """An adapter restarts cleanly and keeps delivering; the final poll on stop confirms the offset."""
    adapter = make_adapter(fake)
    await adapter.start(inbound)
    await fake.push_update(message=message(private_chat(), "one"))
    assert (await next_message(inbound)).text == "one"
    await adapter.stop()
    confirmed = fake.calls_of("getUpdates")[-1].params
    await adapter.start(inbound)
    await fake.push_update(message=message(private_chat(), "two"))
    assert (await next_message(inbound)).text == "two"
    await adapter.stop()
    assert (confirmed["offset"], confirmed["timeout"], adapter.running) == (2, 0, False)


async def test_misuse_raises_precise_errors(fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]) -> None:
    """stop() before start() and a second start() each say what to do."""
    adapter = make_adapter(fake)
    with pytest.raises(RuntimeError, match=r"not started: call start\(\) first"):
        await adapter.stop()
    await adapter.start(inbound)
    try:
        with pytest.raises(RuntimeError, match=r"already started: call stop\(\)"):
            await adapter.start(inbound)
    finally:
        await adapter.stop()


async def test_start_with_a_rejected_token_fails_cleanly(fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]) -> None:
    """A 401 on getMe makes start() raise AdapterError(401) naming the setting, never the token."""
    adapter = make_adapter(fake, token="999:WRONG-secret-value", token_setting="platforms.telegram.token")
    with pytest.raises(AdapterError) as caught:
        await adapter.start(inbound)
    assert (caught.value.status, adapter.running) == (401, False)
    assert "platforms.telegram.token" in str(caught.value) and "WRONG-secret-value" not in str(caught.value)


async def test_constructor_does_no_io(fake: FakeTelegram) -> None:
    """Building an adapter contacts nobody."""
    make_adapter(fake)
    assert fake.calls == []


async def test_probe_ok(fake: FakeTelegram) -> None:
    """probe() on a valid token names the bot and the server."""
    result = await make_adapter(fake).probe()
    assert result == ProbeResult("telegram", True, f"@chorus_bot (id 123456) via http://127.0.0.1:{fake.port}")


async def test_probe_bad_token(fake: FakeTelegram) -> None:
    """A token the server answers 401 to gives the fix, not the token."""
    adapter = make_adapter(fake, token="999:WRONG-secret-value", token_setting="platforms.telegram.token")
    result = await adapter.probe()
    assert result == ProbeResult("telegram", False, "Telegram getMe failed: 401 Unauthorized: check platforms.telegram.token")
    assert fake.calls_of("getMe")[0].method == "getMe"


async def test_probe_without_token_or_server() -> None:
    """No token, and an unreachable server, are both reported without raising."""
    assert await TelegramAdapter("", token_setting="platforms.telegram.token").probe() == ProbeResult(
        "telegram", False, "no bot token: set platforms.telegram.token")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the probe: nothing listens there
    result = await TelegramAdapter(TOKEN, base_url=f"http://127.0.0.1:{port}", request_timeout=2).probe()
    assert (result.ok, result.detail.startswith(f"cannot reach http://127.0.0.1:{port}: "), TOKEN in result.detail) == (
        False, True, False)


async def test_stop_queues_every_update_already_fetched(fake: FakeTelegram) -> None:
    """Updates PTB fetched (and confirms on stop) all reach a bounded queue, consumed only after stop() began."""
    inbound: asyncio.Queue[InboundMessage] = asyncio.Queue(maxsize=1)
    adapter = make_adapter(fake)
    await adapter.start(inbound)
    for text in ("a", "b", "c"):
        await fake.push_update(message=message(private_chat(), text))
    await fake.wait_for_calls("getUpdates", 2)  # the first poll returned the three updates
    stopping = asyncio.create_task(adapter.stop())
    received = [(await next_message(inbound)).text for _ in range(3)]
    await stopping
    confirmed = fake.calls_of("getUpdates")[-1].params["offset"]
    assert (received, confirmed, adapter.running) == (["a", "b", "c"], 4, False)
