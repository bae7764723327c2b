"""Connection trouble: RESUME after a dropped socket, re-IDENTIFY when the session is gone, malformed payloads."""
from __future__ import annotations

import asyncio

from adapters.base import InboundMessage
from tests.adapters.discord.conftest import Harness, make_adapter
from tests.fakes.discord_api import DM_CHANNEL_ID, GENERAL_ID, FakeDiscord

IDENTIFY, RESUME = 2, 6


async def _dm(harness: Harness, text: str) -> str:
    await harness.fake.send_message(harness.fake.message(text, channel_id=DM_CHANNEL_ID, guild=False))
    return (await harness.next_message()).text


async def test_dropped_connection_is_resumed_and_missed_messages_arrive(discord_bot: Harness) -> None:
    """After a resumable close (4000) the client RESUMEs at resume_gateway_url; a message sent meanwhile is replayed."""
    fake = discord_bot.fake
    assert await _dm(discord_bot, "before") == "before"
    seq_before = await fake.send_message(fake.message("last before the drop", channel_id=DM_CHANNEL_ID, guild=False))
    assert (await discord_bot.next_message()).text == "last before the drop"
    await fake.drop(code=4000)
    missed = await fake.send_message(fake.message("sent during the outage", channel_id=DM_CHANNEL_ID, guild=False))
    assert (await discord_bot.next_message()).text == "sent during the outage"
    [resume] = fake.client_ops(RESUME)
    assert (resume.d["session_id"], resume.d["seq"]) == ("session-1", seq_before)
    assert missed == seq_before + 1
    assert [c.path for c in fake.connections] == ["/gw", "/resume"]
    assert len(fake.client_ops(IDENTIFY)) == 1
    assert await _dm(discord_bot, "after") == "after"


async def test_invalid_session_leads_to_a_fresh_identify(discord_bot: Harness) -> None:
    """A close after which the session is gone: RESUME gets INVALID_SESSION, the client IDENTIFYs on a new connection."""
    fake = discord_bot.fake
    await fake.drop(code=4009, invalidate=True)
    await fake.wait_until(lambda: len(fake.client_ops(IDENTIFY)) == 2)
    assert await _dm(discord_bot, "new session") == "new session"
    ops = [(op.connection, op.op) for op in fake.ops if op.op in (IDENTIFY, RESUME)]
    assert ops == [(0, IDENTIFY), (1, RESUME), (2, IDENTIFY)]
    assert fake.connections[2].session is not None and fake.connections[2].session.session_id == "session-2"


async def test_malformed_message_create_is_dropped_without_reconnecting(discord_bot: Harness) -> None:
    """A MESSAGE_CREATE missing channel_id and author is dropped; the connection stays and later messages flow."""
    fake = discord_bot.fake
    await fake.dispatch("MESSAGE_CREATE", {"id": "1", "content": "half a message"})
    await fake.dispatch("MESSAGE_CREATE", {**fake.message("no author"), "author": None})
    assert await _dm(discord_bot, "still here") == "still here"
    assert len(fake.connections) == 1
    assert discord_bot.queue.empty()


async def test_garbage_frame_does_not_stop_the_adapter(discord_bot: Harness) -> None:
    """A text frame that is not JSON ends that connection only: the adapter reconnects and later messages flow."""
    fake = discord_bot.fake
    await fake.send_raw("{this is not json")
    await fake.wait_until(lambda: len(fake.client_ops(IDENTIFY)) == 2)
    assert await _dm(discord_bot, "after garbage") == "after garbage"
    assert (await discord_bot.adapter.probe()).ok is True


async def test_messages_in_order_across_a_resume(discord_bot: Harness) -> None:
    """Several messages pushed during an outage arrive once each, in order, after the RESUME."""
    fake = discord_bot.fake
    await fake.drop(code=1001)
    for i in range(3):
        await fake.send_message(fake.message(f"m{i}", channel_id=GENERAL_ID))
    got = [(await discord_bot.next_message()).text for _ in range(3)]
    assert got == ["m0", "m1", "m2"]
    assert await _dm(discord_bot, "sentinel") == "sentinel"
    assert len(fake.client_ops(RESUME)) == 1


async def test_half_open_connection_is_detected_and_resumed() -> None:
    """When the gateway goes silent (no heartbeat ACKs, no frames) the client gives up on it and RESUMEs; nothing is lost."""
    async with FakeDiscord(heartbeat_interval_ms=200) as fake:
        adapter = make_adapter(fake, heartbeat_timeout=1.0)
        queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
        await adapter.start(queue)
        try:
            fake.go_silent()
            await fake.send_message(fake.message("said into the void", channel_id=DM_CHANNEL_ID, guild=False))
            assert (await asyncio.wait_for(queue.get(), 5.0)).text == "said into the void"
            assert [(op.connection, op.op) for op in fake.ops if op.op in (IDENTIFY, RESUME)] == [(0, IDENTIFY), (1, RESUME)]
            assert fake.connections[0].ws.closed
        finally:
            await adapter.stop()
