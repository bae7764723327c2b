"""Must-show of issue 36, item 4: through `chorus run`, the bot's own words in each chat's language.

A real `chorus run` polls the fake Bot API (python-telegram-bot over loopback) and asks the fake model.
A Telegram user whose app speaks `zh-hans` gets the queued line, the limit hit and `/help` in Chinese, and a
stranger with that language is refused in Chinese; a chat set to `language: de` is answered in German
whatever its sender's app says; an unknown language (`tlh`) gets English. The limits clock is injected
(`CHORUS_TEST_CLOCK_FILE`), so the one-message-a-minute window cannot pass during the test.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import structlog

from gateway.config import TEST_CLOCK_ENV
from gateway.i18n import say, say_n
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram, message, private_chat, user
from tests.gateway.replicas import replica, replica_config

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()
WAIT = 30.0
CHINESE, GERMAN, KLINGON, STRANGER = 771, 772, 773, 774


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture
def clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "clock"
    path.write_text(str(NOON), encoding="utf-8")
    monkeypatch.setenv(TEST_CLOCK_ENV, str(path))


def _config(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> Path:
    telegram: dict[str, Any] = {"enabled": True, "token": TOKEN, "base_url": f"http://127.0.0.1:{tg.port}",
                                "allowed_users": [str(CHINESE), str(GERMAN), str(KLINGON)]}
    return replica_config(
        tmp_path, "a",
        model={"name": "fake-model", "base_url": fake.base_url, "api_key": "sk-test-not-real"},
        platforms={"web": {"enabled": False}, "telegram": telegram},
        limits={"per_user": {"messages_per_minute": 1}},
        chats={f"telegram:{GERMAN}": {"language": "de"}},
    )


async def _send(tg: FakeTelegram, sender: int, text: str, language: str) -> None:
    await tg.push_update(message=message(private_chat(sender), text, sender=user(sender, language_code=language)))


async def test_each_chat_hears_the_bot_in_its_language(tmp_path: Path, clock: None) -> None:
    held = asyncio.Event()
    async with FakeOpenAI() as fake, FakeTelegram() as tg:
        fake.push(Reply(content="first answer", gate=held))
        async with replica(_config(tmp_path, fake, tg)):
            # zh-hans: the queued line while the first reply is held, then the limit hit, then /help.
            await _send(tg, CHINESE, "one", "zh-hans")
            await fake.wait_for_request(timeout=WAIT)
            await _send(tg, CHINESE, "two", "zh-hans")
            queued = await tg.wait_for_text(CHINESE, "已排队", timeout=WAIT)
            held.set()
            await tg.wait_for_text(CHINESE, "first answer", timeout=WAIT)
            limit = await tg.wait_for_text(CHINESE, "已达到限额", timeout=WAIT)
            await _send(tg, CHINESE, "/help", "zh-hans")
            help_zh = await tg.wait_for_text(CHINESE, "命令：", timeout=WAIT)
            await _send(tg, STRANGER, "hello", "zh-hans")
            refused = await tg.wait_for_text(STRANGER, str(STRANGER), timeout=WAIT)

            # chats."telegram:772".language: de, whatever the sender's app says.
            await _send(tg, GERMAN, "/help", "zh-hans")
            help_de = await tg.wait_for_text(GERMAN, "Befehle:", timeout=WAIT)
            for text in ("eins", "zwei"):
                await _send(tg, GERMAN, text, "zh-hans")
            limit_de = await tg.wait_for_text(GERMAN, "Limit erreicht", timeout=WAIT)

            # A language with no catalogue: English.
            await _send(tg, KLINGON, "/help", "tlh")
            help_en = await tg.wait_for_text(KLINGON, "Commands:", timeout=WAIT)
            for text in ("a", "b"):
                await _send(tg, KLINGON, text, "tlh")
            limit_en = await tg.wait_for_text(KLINGON, "Limit reached", timeout=WAIT)
        menus = {call.params.get("language_code"): call.params["commands"] for call in tg.calls_of("setMyCommands")}

    assert queued == say_n("zh", "queue.queued", 1) == "已排队：我会在当前回复之后回答这条消息（前面还有 1 条）"
    assert limit.startswith("已达到限额：每人每分钟 1 条消息。将在 UTC ")
    assert help_zh.splitlines()[0] == "命令："
    assert help_zh.splitlines()[1] == "/new 或 /reset — 开始新的对话（保留笔记）"
    assert len(help_zh.splitlines()) == len(help_en.splitlines()) == len(help_de.splitlines())
    assert refused == say("zh", "access.refused", user_id=str(STRANGER))
    assert help_de.splitlines()[1] == "/new oder /reset — ein neues Gespräch beginnen (Notizen bleiben erhalten)"
    assert limit_de.startswith("Limit erreicht: 1 Nachricht pro Minute pro Person.")
    assert help_en.splitlines()[1] == "/new or /reset — start a new conversation (notes are kept)"
    assert limit_en.startswith("Limit reached: 1 message per minute per person.")
    # The command menu: the default (English) and one per catalogue language, picked by Telegram per user.
    assert menus[None][0] == {"command": "new", "description": "Start a new conversation (notes are kept)"}
    assert menus["zh"][0] == {"command": "new", "description": "开始新的对话（保留笔记）"}
    assert [entry["command"] for entry in menus["de"]] == [entry["command"] for entry in menus[None]]
