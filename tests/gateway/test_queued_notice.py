"""A burst behind a running reply gives one "queued" notice, edited to the newest count, not one notice per message."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.harness import chat, make_config, started, web_port

BURST = 1_000


async def test_a_burst_of_a_thousand_gets_one_edited_queued_notice(fake_openai: FakeOpenAI, home: Path) -> None:
    """While the first turn is held, 999 more messages: one queued message whose last edit says 999 ahead."""
    gate = asyncio.Event()
    arrived = asyncio.Event()

    def held(_request: dict[str, Any]) -> Reply:
        arrived.set()
        return Reply(content="first answer", gate=gate)

    fake_openai.push(held)
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        async with chat(web_port(gateway)) as tab:
            await tab.say("message 0")
            await asyncio.wait_for(arrived.wait(), 10)
            for i in range(1, BURST):
                await tab.say(f"message {i}")
            notice = await tab.next_frame("message")
            while True:
                edit = await tab.next_frame("edit", timeout=30)
                if edit["id"] == notice["id"] and edit["text"].endswith(f"({BURST - 1} ahead)"):
                    break
            gate.set()
            assert await tab.reply() == "first answer"
            await tab.say("after the burst")  # still queued behind the burst: counted into the same notice
    queued = [f for f in tab.frames if f["type"] == "message" and f["text"].startswith("queued")]
    assert [f["id"] for f in queued] == [notice["id"]]
    assert notice["text"] == "queued: I'll answer this after the current reply (1 ahead)"
    edits = [f for f in tab.frames if f["type"] == "edit" and f["id"] == notice["id"]]
    assert len(edits) < 30  # at the chat's edit rate, not one per message
