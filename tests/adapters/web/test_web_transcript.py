"""What a page receives on connect: the transcript its source gives, then the drafts still streaming, once."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from adapters.base import ChatTarget, InboundMessage
from adapters.web import STREAM_CURSOR, TranscriptLine, WebAdapter

CHAT = "t1"
TARGET = ChatTarget("web", CHAT)
WAIT = 10.0


class Stored:
    """A transcript source holding lines per chat, as the session store would."""

    def __init__(self) -> None:
        self.lines: list[TranscriptLine] = []

    async def __call__(self, chat_id: str) -> Sequence[TranscriptLine]:
        return list(self.lines) if chat_id == CHAT else []


@asynccontextmanager
async def _adapter() -> AsyncIterator[tuple[WebAdapter, Stored]]:
    adapter = WebAdapter(host="127.0.0.1", port=0)
    stored = Stored()
    adapter.transcript = stored
    await adapter.start(asyncio.Queue[InboundMessage]())
    try:
        yield adapter, stored
    finally:
        await adapter.stop()


@asynccontextmanager
async def _page(adapter: WebAdapter) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    async with aiohttp.ClientSession() as http, http.ws_connect(f"http://127.0.0.1:{adapter.port}/ws?chat={CHAT}") as ws:
        yield ws


async def _frames_until(ws: aiohttp.ClientWebSocketResponse, kind: str) -> list[dict[str, Any]]:
    """Frames up to and including the first of `kind` (hello and banner included)."""
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1]["type"] != kind:
        frames.append(await ws.receive_json(timeout=WAIT))
    return frames


async def test_a_page_gets_the_stored_lines_then_the_draft_still_streaming() -> None:
    """A question waiting for its reply: `history`, then the draft under its id; a finished message is not repeated."""
    async with _adapter() as (adapter, stored):
        async with _page(adapter) as first:
            await _frames_until(first, "history")
            [done] = await adapter.send(TARGET, "an earlier notice")
            [draft] = await adapter.send(TARGET, "half of it" + STREAM_CURSOR)
            stored.lines = [TranscriptLine("user", "tell me", pending=True)]
            async with _page(adapter) as second:
                history = (await _frames_until(second, "history"))[-1]
                replayed = await second.receive_json(timeout=WAIT)
                await adapter.edit(draft, "half of it and the rest")
                finished = await second.receive_json(timeout=WAIT)
    assert history["messages"] == [{"role": "user", "text": "tell me", "images": [], "files": [], "pending": True}]
    assert replayed == {"type": "message", "id": draft.message_id, "text": "half of it" + STREAM_CURSOR}
    assert finished == {"type": "edit", "id": draft.message_id, "text": "half of it and the rest"}
    assert done.message_id != draft.message_id


async def test_a_reply_the_page_already_shows_from_the_store_is_not_sent_again() -> None:
    """Stored before the page connected, then its draft finished (or the outbox resent it): counted as delivered,
    not shown twice; the same text sent once more after that is a new message."""
    async with _adapter() as (adapter, stored):
        async with _page(adapter) as first:
            await _frames_until(first, "history")
            [draft] = await adapter.send(TARGET, "the full" + STREAM_CURSOR)
        stored.lines = [TranscriptLine("user", "q"), TranscriptLine("assistant", "the full answer")]
        async with _page(adapter) as page:
            history = await _frames_until(page, "history")
            await adapter.edit(draft, "the full answer")  # the draft's last edit: the page has the stored reply
            [later] = await adapter.send(TARGET, "the full answer")
            frame = await page.receive_json(timeout=WAIT)
        async with _page(adapter) as resent_to:
            await _frames_until(resent_to, "history")
            resent = await adapter.send(TARGET, "the full answer")  # the outbox's resend: counted, not shown
            await adapter.typing(TARGET)
            after_resend = await resent_to.receive_json(timeout=WAIT)
    assert history[-1]["messages"][-1]["text"] == "the full answer"  # and no draft replayed after it
    assert frame == {"type": "message", "id": later.message_id, "text": "the full answer", "reply_to": None}
    assert len(resent) == 1 and after_resend == {"type": "typing"}


async def test_a_changed_transcript_is_sent_again_to_every_page_of_the_chat() -> None:
    """After `/undo` the gateway says so: each connected page gets the new `history`."""
    async with _adapter() as (adapter, stored):
        stored.lines = [TranscriptLine("user", "one"), TranscriptLine("assistant", "two")]
        async with _page(adapter) as first, _page(adapter) as second:
            before = [(await _frames_until(ws, "history"))[-1]["messages"] for ws in (first, second)]
            stored.lines = []
            await adapter.transcript_changed(CHAT)
            after = [(await _frames_until(ws, "history"))[-1]["messages"] for ws in (first, second)]
    assert [len(messages) for messages in before] == [2, 2] and after == [[], []]


async def test_a_transcript_that_cannot_be_read_leaves_the_page_as_it_is() -> None:
    """The store failing: `history` with no messages (the page keeps its bubbles and sends what it holds)."""
    async def failing(_chat_id: str) -> Sequence[TranscriptLine]:
        raise ConnectionError("store down")

    async with _adapter() as (adapter, _stored):
        adapter.transcript = failing
        async with _page(adapter) as page:
            frames = await _frames_until(page, "history")
    assert frames[0]["transcript"] is True and frames[-1] == {"type": "history", "messages": None}
