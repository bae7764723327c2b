"""The web adapter on a real socket: chat ids, frames in both directions, several tabs, bad input."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from adapters.base import AdapterError, ChatTarget, InboundMessage
from adapters.web import WebAdapter


@pytest.fixture
async def adapter() -> AsyncIterator[tuple[WebAdapter, asyncio.Queue[InboundMessage]]]:
    web = WebAdapter(port=0, banner="hello banner")
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await web.start(queue)
    yield web, queue
    await web.stop()


async def test_message_frame_becomes_an_inbound_dm(adapter: tuple[WebAdapter, asyncio.Queue[InboundMessage]]) -> None:
    """A client's message frame is a DM in the client's chat, with a delivery id from its client id."""
    web, queue = adapter
    async with aiohttp.ClientSession() as session, session.ws_connect(f"http://127.0.0.1:{web.port}/ws?chat=tab1") as ws:
        hello = await ws.receive_json()
        banner = await ws.receive_json()
        await ws.send_json({"type": "message", "text": "hi there", "client_id": "c-1"})
        message = await asyncio.wait_for(queue.get(), 5)
    assert (hello, banner) == ({"type": "hello", "chat_id": "tab1", "upload_limit": 10_000_000, "transcript": False}, {"type": "banner", "text": "hello banner"})
    assert (message.platform, message.chat_id, message.chat_type, message.text) == ("web", "tab1", "dm", "hi there")
    assert message.dedup_key == "web:tab1:c-1"


async def test_send_edit_delete_reach_every_tab_of_the_chat(adapter: tuple[WebAdapter, asyncio.Queue[InboundMessage]]) -> None:
    """Two tabs of one chat both see sends, edits and deletes; another chat sees nothing."""
    web, _ = adapter
    target = ChatTarget("web", "shared")
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"http://127.0.0.1:{web.port}/ws?chat=shared") as one, \
                session.ws_connect(f"http://127.0.0.1:{web.port}/ws?chat=shared") as two, \
                session.ws_connect(f"http://127.0.0.1:{web.port}/ws?chat=other") as other:
            for ws in (one, two, other):
                await ws.receive_json()  # hello
                await ws.receive_json()  # banner
            [sent] = await web.send(target, "draft")
            await web.edit(sent, "final")
            await web.delete(sent)
            frames = [[await ws.receive_json() for _ in range(3)] for ws in (one, two)]
            await web.send(ChatTarget("web", "other"), "only you")
            other_frame = await other.receive_json()
    expected = [
        {"type": "message", "id": sent.message_id, "text": "draft", "reply_to": None},
        {"type": "edit", "id": sent.message_id, "text": "final"},
        {"type": "delete", "id": sent.message_id},
    ]
    assert frames == [expected, expected]
    assert other_frame["text"] == "only you"


async def test_send_without_a_client_raises_so_the_reply_stays_pending(
    adapter: tuple[WebAdapter, asyncio.Queue[InboundMessage]]
) -> None:
    """No tab open for the chat: send raises AdapterError (the outbox keeps the reply)."""
    web, _ = adapter
    with pytest.raises(AdapterError):
        await web.send(ChatTarget("web", "nobody"), "hello?")


async def test_bad_frames_get_an_error_and_bad_chat_ids_a_fresh_id(
    adapter: tuple[WebAdapter, asyncio.Queue[InboundMessage]]
) -> None:
    """Non-JSON or wrong frames are answered with an error; an unsafe chat id is replaced."""
    web, queue = adapter
    async with aiohttp.ClientSession() as session, \
            session.ws_connect(f"http://127.0.0.1:{web.port}/ws?chat=../etc/passwd") as ws:
        hello = await ws.receive_json()
        await ws.receive_json()  # banner
        await ws.send_str("not json")
        first = await ws.receive_json()
        await ws.send_json({"type": "message"})
        second = await ws.receive_json()
    assert hello["chat_id"] != "../etc/passwd" and hello["chat_id"].isalnum()
    assert (first["type"], second["type"]) == ("error", "error")
    assert queue.empty()


async def test_start_twice_is_refused() -> None:
    """Starting a started adapter fails with the fix in the message."""
    web = WebAdapter(port=0)
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await web.start(queue)
    try:
        with pytest.raises(RuntimeError, match="stop"):
            await web.start(queue)
    finally:
        await web.stop()
