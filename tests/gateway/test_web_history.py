"""The web chat's `history` from the running gateway: the question waiting while its turn runs, `/new` clearing it."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.harness import chat, make_config, started, web_port


def _lines(history: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(m["role"], m["text"], m["pending"]) for m in history["messages"]]


async def test_a_question_is_shown_waiting_while_its_turn_runs_then_stored(fake_openai: FakeOpenAI, home: Path) -> None:
    """Connected while the model holds the reply: the question comes marked pending; after the reply, stored."""
    gate = asyncio.Event()
    fake_openai.push(Reply(content="answered", gate=gate))
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        port = web_port(gateway)
        async with chat(port, "waiting") as tab:
            await tab.say("are you there?")
            await fake_openai.wait_for_request(1)
            async with chat(port, "waiting") as second:
                during = _lines(await second.next_frame("history"))
            gate.set()
            await tab.reply()
        async with chat(port, "waiting") as third:
            after = _lines(await third.next_frame("history"))
    assert during == [("user", "are you there?", True)]
    assert after == [("user", "are you there?", False), ("assistant", "answered", False)]


async def test_new_clears_the_transcript_of_every_open_page(fake_openai: FakeOpenAI, home: Path) -> None:
    """`/new` starts another session: each page of the chat gets an empty `history`, then the command's answer."""
    async with started(make_config(home, fake_openai.base_url)) as gateway:
        async with chat(web_port(gateway), "fresh") as tab:
            await tab.say("remember this")
            await tab.reply()
            await tab.say("/new")
            redrawn = await tab.next_frame("history")
            answer = await tab.reply()
    assert redrawn["messages"] == [] and answer
