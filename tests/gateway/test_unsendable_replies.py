"""One reply that can't be sent never blocks the others (issue 30, item 5).

Built as `chorus run` builds it (live engine, admin app served), with the real Telegram adapter against the fake
Bot API and the real openai client against the fake model: an empty answer and a reasoning-only answer get one
short notice and never enter the outbox; a reply whose first send fails is resent; replies the platform refuses
for good (an empty text recorded by an older version, a chat that is gone) are set aside, listed by
`GET /api/deadletters`, and the resend loop goes on with the next.
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.base import ChatTarget, Reaction
from gateway.coord.base import OutboundItem
from gateway.i18n import say
from tests.fakes.openai_server import FakeOpenAI, Reply, echo_responder
from tests.fakes.telegram_api import TOKEN, FakeTelegram, message, private_chat
from tests.gateway.admin.helpers import admin_gateway
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config
from tests.gateway.run_harness import run_like_chorus

WAIT = 15.0
USER_ID = 777


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


def _config(home: Path, fake: FakeOpenAI, tg: FakeTelegram, **gateway: Any) -> Any:
    platforms = {
        "web": {"enabled": False},
        "telegram": {"enabled": True, "token": TOKEN, "base_url": f"http://127.0.0.1:{tg.port}", "allow_all_users": True},
    }
    return make_config(home, fake.base_url, platforms=platforms, gateway={"shutdown_grace_seconds": 1, **gateway})


def _shown(tg: FakeTelegram, chat_id: int) -> list[str]:
    """The texts the chat shows (as Telegram renders them), in order."""
    return list(tg.texts(chat_id).values())


async def test_empty_and_reasoning_only_answers_get_a_notice_and_later_failed_sends_are_resent(
    fake_openai: FakeOpenAI, home: Path, tg: FakeTelegram,
) -> None:
    """"" and "<think>…</think>" each get the notice (no "Sorry"), the outbox stays empty, and a later reply whose
    first send was dropped is resent by the loop."""
    fake_openai.push(Reply(content=""), Reply(content="<think>\nthe user wants a plan\n</think>\n"),
                     Reply(content="third answer"))
    chat = private_chat(USER_ID)
    async with admin_gateway(_config(home, fake_openai, tg)) as admin:
        await tg.push_update(message=message(chat, "first"))
        await tg.wait_for_text(USER_ID, say("en", "turn.empty"), timeout=WAIT)
        await tg.push_update(message=message(chat, "second"))
        await tg.wait_for_calls("sendMessage", 2, timeout=WAIT)
        pending_after_empty = await admin.gateway.parts.outbox.pending()
        tg.drop("sendMessage")  # the next send (the third reply) fails on the wire: it stays in the outbox
        await tg.push_update(message=message(chat, "third"))
        await tg.wait_for_text(USER_ID, "third answer", timeout=WAIT)  # sent by the resend loop
        _status, dead = await admin.get("/api/deadletters")
    assert pending_after_empty == []
    assert _shown(tg, USER_ID) == [say("en", "turn.empty"), say("en", "turn.empty"), "third answer"]
    assert len(tg.calls_of("sendMessage")) == 4  # the third reply's first send was dropped, the loop resent it
    assert say("en", "turn.failed") not in _shown(tg, USER_ID)
    assert dead["deadletters"] == []


async def test_replies_refused_for_good_are_set_aside_and_the_next_is_resent(
    fake_openai: FakeOpenAI, home: Path, tg: FakeTelegram,
) -> None:
    """An empty reply left in the outbox file by an older version and one to a chat that is gone are set aside
    (listed by GET /api/deadletters, stage delivery); the pending reply recorded after them is sent."""
    items = [
        OutboundItem(platform="telegram", chat_id=str(USER_ID), thread_id=None, text="", session_key="k1"),
        OutboundItem(platform="telegram", chat_id="404404", thread_id=None, text="to a chat that is gone",
                     session_key="k2"),
        OutboundItem(platform="telegram", chat_id=str(USER_ID), thread_id=None, text="the reply that waited",
                     session_key="k1"),
    ]
    home.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"put": f"old{n}", "item": json.loads(item.to_json())}) for n, item in enumerate(items)]
    (home / "outbox.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # The second item's send, and the plain-text retry the adapter makes after a 400.
    tg.fail("sendMessage", status=400, description="Bad Request: chat not found", times=2)
    async with admin_gateway(_config(home, fake_openai, tg)) as admin:
        await tg.wait_for_text(USER_ID, "the reply that waited", timeout=WAIT)
        pending = await admin.gateway.parts.outbox.pending()
        status, dead = await admin.get("/api/deadletters")
    assert [p.item.text for p in pending] in ([], ["the reply that waited"])  # its ack may still be on its way
    assert status == 200 and dead["count"] == 2
    shown = sorted((d["stage"], d["chat_id"], d["error"], d["text_preview"]) for d in dead["deadletters"])
    assert shown == [("delivery", "404404", "AdapterError 400", "to a chat that is gone"),
                     ("delivery", str(USER_ID), "empty text", "")]
    assert _shown(tg, USER_ID) == ["the reply that waited"]


class ReactingPlatform(FakePlatform):
    """The fake chat platform with reactions (`adapters.base.Reacting`)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.reactions: list[tuple[str, str, str]] = []

    async def react(self, target: ChatTarget, message_id: str, reaction: Reaction) -> None:
        self.reactions.append((target.chat_id, message_id, reaction))


def _scripted(request: dict[str, Any]) -> Reply:
    """"" to a question ending in "hello?", only reasoning to "hi", an echo otherwise."""
    asked = str([m for m in request["messages"] if m["role"] == "user"][-1]["content"])
    if asked.endswith("hello?"):
        return Reply(content="")
    if asked == "hi":
        return Reply(content="<think>only thoughts</think>")
    return echo_responder(request)


@pytest.mark.parametrize("mode", ["silent", "react"])
async def test_group_errors_keeps_an_empty_answer_out_of_a_group(fake_openai: FakeOpenAI, home: Path, mode: str) -> None:
    """gateway.group_errors silent|react: an empty answer in a group sends no message (react: ⚠️ on the
    question) and the group's next answer comes; in a DM the notice is sent whatever the setting."""
    fake_openai.responder = _scripted
    chat = ReactingPlatform("telegram")
    platforms = {"web": {"enabled": False}, "telegram": {"allow_all_users": True}}
    config = make_config(home, fake_openai.base_url, platforms=platforms, gateway={"group_errors": mode})
    async with run_like_chorus(config, adapters={"telegram": chat}) as (gateway, _ops):
        await chat.inject("@bot hello?", chat_id="g1", chat_type="group", mentions_bot=True)
        await chat.inject("@bot again", chat_id="g1", chat_type="group", mentions_bot=True)
        await chat.wait_text("again", timeout=WAIT)  # the same lane: the empty turn before it has finished
        await chat.inject("hi", chat_id="d1")
        await chat.wait_text(say("en", "turn.empty"), timeout=WAIT)
        pending = await gateway.parts.outbox.pending()
    assert [o.chat_id for o in chat.outgoing if o.text == say("en", "turn.empty")] == ["d1"]
    answers = [(o.chat_id, o.text) for o in chat.outgoing if not o.text.startswith("queued")]
    assert answers == [("g1", "echo: alice (id u1): @bot again"), ("d1", say("en", "turn.empty"))]
    assert chat.reactions == ([("g1", "in1", "failed")] if mode == "react" else [])
    assert pending == []
