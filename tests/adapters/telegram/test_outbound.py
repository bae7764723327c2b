"""Sending, editing, typing and deleting through real PTB against the fake Bot API."""
from __future__ import annotations

import asyncio
import re
import time

import pytest

from adapters.base import AdapterError, ChatTarget, InboundMessage, SentMessage
from adapters.telegram import TelegramAdapter
from tests.adapters.telegram.conftest import make_adapter
from tests.fakes.telegram_api import FakeTelegram, utf16_len

# PTB warns inside its own RetryAfter constructor (pytest re-enables DeprecationWarnings per test).
pytestmark = pytest.mark.filterwarnings("ignore:.*`retry_after` will be of type:DeprecationWarning")

DM = ChatTarget(platform="telegram", chat_id="777")
GROUP = ChatTarget(platform="telegram", chat_id="-100500")


async def test_send_uses_markdown_v2(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """A reply goes out as MarkdownV2 that Telegram parses into the intended text and entities."""
    sent = await polling.send(DM, "Result: **done** in `2.5s`!")
    call = fake.calls_of("sendMessage")[0]
    assert call.params["parse_mode"] == "MarkdownV2"
    assert fake.texts(777)[int(sent[0].message_id)] == "Result: done in 2.5s!"
    assert sent == [SentMessage(target=DM, message_id=sent[0].message_id)]


async def test_send_to_a_topic_replying_to_a_message(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """The topic becomes message_thread_id and reply_to becomes reply_parameters."""
    topic = ChatTarget(platform="telegram", chat_id="-100777", thread_id="11")
    await polling.send(topic, "in the topic", reply_to="42")
    params = fake.calls_of("sendMessage")[0].params
    assert (params["chat_id"], params["message_thread_id"], params["reply_parameters"]) == (
        -100777, 11, {"message_id": 42, "allow_sending_without_reply": True})


async def test_long_reply_is_split_with_code_fences_intact(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """A 10k-character reply with a long code block arrives as several valid messages, each within 4,096."""
    code = "\n".join(f"value_{i} = compute({i}) * 2  # step {i}" for i in range(300))
    text = "Here is the script:\n\n```python\n" + code + "\n```\n\nThat's all."
    sent = await polling.send(GROUP, text)
    calls = fake.calls_of("sendMessage")
    visible = [fake.texts(-100500)[int(s.message_id)] for s in sent]
    assert len(sent) == len(calls) >= 3
    assert all(call.params["parse_mode"] == "MarkdownV2" for call in calls)  # none fell back to plain
    assert all(utf16_len(v) <= 4096 for v in visible)
    assert all(call.params["text"].count("```") == 2 for call in calls[1:-1])
    lines = [line for v in visible for line in v.split("\n") if line.startswith("value_")]
    assert lines == code.split("\n")


async def test_emoji_heavy_reply_fits_in_utf16_units(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """Astral characters count twice in Telegram's limit; chunks are cut accordingly."""
    sent = await polling.send(DM, "🎉 " * 3000)
    assert all(utf16_len(fake.texts(777)[int(s.message_id)]) <= 4096 for s in sent)
    assert sum(fake.texts(777)[int(s.message_id)].count("🎉") for s in sent) == 3000


async def test_rate_limit_is_waited_out(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """A 429 with retry_after 1 is honoured: the send is retried after about a second and succeeds."""
    fake.fail("sendMessage", status=429, description="Too Many Requests: retry after 1", retry_after=1)
    started = time.monotonic()
    sent = await polling.send(DM, "patience")
    calls = fake.calls_of("sendMessage")
    assert len(calls) == 2 and len(sent) == 1
    assert calls[1].at - calls[0].at >= 0.9
    assert time.monotonic() - started < 3


async def test_rate_limit_over_the_cap_surfaces(fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]) -> None:
    """A wait longer than max_retry_after is not slept: AdapterError carries retry_after and status 429."""
    adapter = make_adapter(fake, max_retry_after=0.5)
    await adapter.start(inbound)
    try:
        fake.fail("sendMessage", status=429, description="Too Many Requests: retry after 7", retry_after=7)
        with pytest.raises(AdapterError) as caught:
            await adapter.send(DM, "now")
    finally:
        await adapter.stop()
    assert (caught.value.retry_after, caught.value.status, len(fake.calls_of("sendMessage"))) == (7.0, 429, 1)


async def test_rejected_markup_is_resent_as_plain_text(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """When Telegram cannot parse the entities, the same chunk is resent without parse_mode."""
    fake.fail("sendMessage", status=400, description="Bad Request: can't parse entities: Character '!' is reserved")
    sent = await polling.send(DM, "Hello **world**!")
    calls = fake.calls_of("sendMessage")
    assert [call.params.get("parse_mode") for call in calls] == ["MarkdownV2", None]
    assert calls[1].params["text"] == "Hello **world**!"
    assert fake.texts(777)[int(sent[0].message_id)] == "Hello **world**!"


async def test_other_errors_are_translated(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """A 403 (bot blocked) becomes AdapterError with status 403 and the platform name."""
    fake.fail("sendMessage", status=403, description="Forbidden: bot was blocked by the user")
    with pytest.raises(AdapterError) as caught:
        await polling.send(DM, "hi")
    assert (caught.value.status, caught.value.platform) == (403, "telegram")
    assert "blocked by the user" in str(caught.value)


async def test_edit_replaces_the_text(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """edit() sends editMessageText in MarkdownV2; an identical edit ("not modified") is not an error."""
    [sent] = await polling.send(DM, "draft")
    await polling.edit(sent, "final **answer**")
    await polling.edit(sent, "final **answer**")
    assert fake.texts(777)[int(sent.message_id)] == "final answer"
    assert len(fake.calls_of("editMessageText")) == 2


async def test_edits_are_throttled_and_the_last_is_delivered(
    fake: FakeTelegram, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """Five quick edits in one chat become two API calls (first and last), spaced by the interval."""
    adapter = make_adapter(fake, edit_interval=0.3)
    await adapter.start(inbound)
    try:
        [sent] = await adapter.send(DM, "v0")
        await asyncio.gather(*(adapter.edit(sent, f"v{i}") for i in range(1, 6)))
    finally:
        await adapter.stop()
    calls = fake.calls_of("editMessageText")
    assert [call.params["text"] for call in calls] == ["v1", "v5"]
    assert calls[1].at - calls[0].at >= 0.25
    assert fake.texts(777)[int(sent.message_id)] == "v5"


async def test_typing_and_delete(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """typing() sends the typing chat action to the topic; delete() removes the message."""
    topic = ChatTarget(platform="telegram", chat_id="-100777", thread_id="11")
    await polling.typing(topic)
    [sent] = await polling.send(topic, "bye")
    await polling.delete(sent)
    action = fake.calls_of("sendChatAction")[0].params
    assert (action["action"], action["message_thread_id"]) == ("typing", 11)
    assert fake.texts(-100777) == {}


async def test_typing_failure_is_not_raised(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """A failed or rate-limited typing indicator is logged, not raised, and not waited for."""
    fake.fail("sendChatAction", status=429, description="Too Many Requests: retry after 30", retry_after=30)
    started = time.monotonic()
    await polling.typing(DM)
    assert time.monotonic() - started < 1


async def test_send_needs_a_started_adapter(fake: FakeTelegram) -> None:
    """Calling send() before start() fails with the fix in the message, without touching the network."""
    adapter = make_adapter(fake)
    with pytest.raises(RuntimeError, match=re.escape("call start() first")):
        await adapter.send(DM, "hi")
    assert fake.calls == []


async def test_empty_text_and_foreign_targets_are_refused(polling: TelegramAdapter) -> None:
    """Empty text and a Slack target are caller errors named as such."""
    with pytest.raises(ValueError, match="non-empty"):
        await polling.send(DM, "  ")
    with pytest.raises(ValueError, match="'slack' target"):
        await polling.send(ChatTarget(platform="slack", chat_id="C1"), "hi")


async def test_too_long_edit_is_refused_without_a_call(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """An edit longer than one message raises AdapterError(400) and leaves the message as it was."""
    [sent] = await polling.send(DM, "short")
    with pytest.raises(AdapterError, match="send the rest as a new message") as caught:
        await polling.edit(sent, "x" * 4097)
    assert (caught.value.status, fake.calls_of("editMessageText"), fake.texts(777)[int(sent.message_id)]) == (
        400, [], "short")
