"""The web adapter's inbound path on a real websocket: hostile frames never reach the queue as invalid text."""
from __future__ import annotations

import asyncio
import json

import aiohttp
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.base import InboundMessage
from adapters.web import WebAdapter
from tests.adapters.strategies import hostile_text, nested_json, strings_of, utf8_valid

WAIT = 5.0


async def _through_websocket(frames: list[str], *, errors: int = 0) -> tuple[list[InboundMessage], list[str]]:
    """Send raw text frames to a started adapter; returns what was queued and the `errors` error texts answered."""
    adapter = WebAdapter(host="127.0.0.1", port=0)
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(queue)
    try:
        async with aiohttp.ClientSession() as session, session.ws_connect(f"http://127.0.0.1:{adapter.port}/ws?chat=t1") as ws:
            assert json.loads((await ws.receive(WAIT)).data)["type"] == "hello"
            for raw in frames:
                await ws.send_str(raw)
            answered = [json.loads((await ws.receive(WAIT)).data) for _ in range(errors)]
            await ws.send_str(json.dumps({"type": "message", "text": "sentinel", "client_id": "end"}))
            messages: list[InboundMessage] = []
            while not messages or messages[-1].text != "sentinel":
                messages.append(await asyncio.wait_for(queue.get(), WAIT))
    finally:
        await adapter.stop()
    assert all(frame["type"] == "error" for frame in answered)
    return messages[:-1], [str(frame["text"]) for frame in answered]


@settings(max_examples=25, deadline=None)
@given(text=hostile_text, name=hostile_text, client_id=hostile_text)
def test_hostile_frames_reach_the_queue_as_valid_utf8(text: str, name: str, client_id: str) -> None:
    """Surrogates, NUL and controls in text, name and client id (JSON-escaped as a browser sends them) come out valid."""
    frame = json.dumps({"type": "message", "text": text, "name": name, "client_id": client_id})
    queued, _ = asyncio.run(_through_websocket([frame]))
    assert len(queued) == 1
    message = queued[0]
    assert all(utf8_valid(value) and "\x00" not in value for value in strings_of(message))
    assert "\n" not in message.user_name and "\n" not in message.delivery_id


async def test_cut_emoji_from_the_browser_arrives_as_replacement() -> None:
    """`JSON.stringify` of a cut emoji sends "\\ud83d": the message text holds U+FFFD instead."""
    queued, _ = await _through_websocket(['{"type": "message", "text": "cut \\ud83d here", "client_id": "a"}'])
    assert [m.text for m in queued] == ["cut \ufffd here"]


@settings(max_examples=5, deadline=None)
@given(depth=st.sampled_from([5_000, 100_000]))
def test_deeply_nested_frame_is_refused_and_the_socket_stays_usable(depth: int) -> None:
    """A frame nested past the JSON parser's limit is answered with an error; the next frame still arrives."""
    queued, answered = asyncio.run(_through_websocket([nested_json(depth)], errors=1))
    assert (queued, answered) == ([], ["frames must be JSON objects"])


async def test_huge_frame_text_is_cut_to_the_inbound_limit() -> None:
    """A 300,000-character text arrives cut at the adapter's limit, not refused and not crashing the socket."""
    big = "x\ud83d" * 150_000
    queued, _ = await _through_websocket([json.dumps({"type": "message", "text": big, "client_id": "big"})])
    assert len(queued[0].text) == 100_000 and utf8_valid(queued[0].text)
