"""The web chat: the page sends the browser's `navigator.language`, and the gateway's own texts follow it."""
from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.harness import chat, make_config, started, web_port


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


async def test_the_browsers_language_picks_the_gateways_words(tmp_path: Path, fake: FakeOpenAI) -> None:
    config = make_config(tmp_path, fake.base_url, chats={"web:pinned": {"language": "ru"}})
    async with started(config) as gateway:
        async with chat(web_port(gateway), "tab-ja") as tab:
            await tab.say("/help", language="ja-JP")
            japanese = await tab.reply()
            await tab.say("/stop", language="ja-JP")
            stopped = await tab.reply()
        async with chat(web_port(gateway), "tab-odd") as tab:
            await tab.say("/help", language="<script>alert(1)</script>")  # not a language tag: ignored
            odd = await tab.reply()
        async with chat(web_port(gateway), "pinned") as tab:
            await tab.say("/stop", language="ja-JP")  # the chat's setting wins over the browser's
            pinned = await tab.reply()
    assert japanese.startswith("コマンド：\n/new または /reset — 新しい会話を始める")
    assert stopped == "止める返信はありません。"
    assert odd.startswith("Commands:\n")
    assert pinned == "нечего останавливать."

