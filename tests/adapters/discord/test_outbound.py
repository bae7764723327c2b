"""Outbound: send / edit / typing / delete through real discord.py REST calls to the fake."""
from __future__ import annotations

import pytest

from adapters.base import AdapterError, ChatTarget, SentMessage
from adapters.discord import DISCORD_MESSAGE_CHARS, DiscordAdapter
from tests.adapters.discord.conftest import Harness, make_adapter
from tests.fakes.discord_api import GENERAL_ID, THREAD_A_ID, TOKEN, Failure, FakeDiscord

CREATE = "POST /channels/{channel_id}/messages"
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"
DELETE = "DELETE /channels/{channel_id}/messages/{message_id}"
TYPING = "POST /channels/{channel_id}/typing"


def _long_reply_with_code() -> str:
    prose = " ".join(f"word{i}" for i in range(300))
    code = "\n".join(f"print('line {i:04d} of a long listing')" for i in range(120))
    return f"{prose}\n\n```python\n{code}\n```\n\nDone: {prose}"


async def test_long_reply_is_split_with_fences_intact(discord_bot: Harness) -> None:
    """A 7k-character reply becomes several posts of at most 2,000 chars, each with balanced ``` fences."""
    text = _long_reply_with_code()
    sent = await discord_bot.adapter.send(ChatTarget("discord", GENERAL_ID), text)
    bodies = [call.body or {} for call in discord_bot.fake.calls_to(CREATE)]
    contents = [str(body["content"]) for body in bodies]
    assert len(text) > 3 * DISCORD_MESSAGE_CHARS
    assert len(sent) == len(contents) >= 4
    assert all(len(content) <= DISCORD_MESSAGE_CHARS for content in contents)
    assert all(content.count("```") % 2 == 0 for content in contents)
    assert [s.message_id for s in sent] == list(discord_bot.fake.posted)
    listing = [line for content in contents for line in content.split("\n") if line.startswith("print(")]
    assert listing == [f"print('line {i:04d} of a long listing')" for i in range(120)]
    assert all(content.lstrip().startswith("```python") or "print(" not in content.split("```python")[0]
               for content in contents)  # every code line sits inside a fence reopened with its language


async def test_reply_reference_goes_on_the_first_chunk_only(discord_bot: Harness) -> None:
    """reply_to becomes message_reference on the first post; later chunks and @everyone pings are not replies."""
    text = "@everyone " + "x " * 1500
    await discord_bot.adapter.send(ChatTarget("discord", GENERAL_ID), text, reply_to="1900000000000000001")
    first, second = [call.body or {} for call in discord_bot.fake.calls_to(CREATE)]
    assert first["message_reference"]["message_id"] == 1900000000000000001  # discord.py sends the snowflake as a number
    assert first["message_reference"]["fail_if_not_exists"] is False
    assert "message_reference" not in second
    assert first["allowed_mentions"] == {"parse": ["users"], "replied_user": True}


async def test_thread_target_posts_into_the_thread(discord_bot: Harness) -> None:
    """A target with a thread_id posts to the thread's channel and the SentMessage keeps the target."""
    target = ChatTarget("discord", GENERAL_ID, THREAD_A_ID)
    [sent] = await discord_bot.adapter.send(target, "in the thread")
    [call] = discord_bot.fake.calls_to(CREATE)
    assert call.path == f"/channels/{THREAD_A_ID}/messages"
    assert sent.target == target


async def test_edit_typing_and_delete_reach_discord(discord_bot: Harness) -> None:
    """edit PATCHes the content (cut to 2,000 with an ellipsis), typing POSTs /typing, delete DELETEs (twice is fine)."""
    adapter, fake = discord_bot.adapter, discord_bot.fake
    target = ChatTarget("discord", GENERAL_ID)
    [sent] = await adapter.send(target, "draft")
    await adapter.edit(sent, "y" * 2_500)
    await adapter.typing(target)
    await adapter.delete(sent)
    await adapter.delete(sent)
    [edit] = fake.calls_to(EDIT)
    edited = str((edit.body or {})["content"])
    assert (len(edited), edited[-1]) == (DISCORD_MESSAGE_CHARS, "…")
    assert [call.path for call in fake.calls_to(TYPING)] == [f"/channels/{GENERAL_ID}/typing"]
    assert len(fake.calls_to(DELETE)) == 2
    assert fake.posted == {}


async def test_429_is_waited_out_and_retried(discord_bot: Harness) -> None:
    """A 429 with retry_after 0.3 s and X-RateLimit headers is honoured: the retry comes ≥0.3 s later and succeeds."""
    fake = discord_bot.fake
    fake.fail_next(CREATE, Failure())
    sent = await discord_bot.adapter.send(ChatTarget("discord", GENERAL_ID), "patience")
    first, retry = fake.calls_to(CREATE)
    assert retry.at - first.at >= 0.3
    assert [s.message_id for s in sent] == list(fake.posted)
    assert fake.posted[sent[0].message_id]["content"] == "patience"


async def test_429_without_via_header_surfaces_retry_after(discord_bot: Harness) -> None:
    """A 429 discord.py will not wait out (no Via header: not from Discord) becomes AdapterError with Retry-After."""
    discord_bot.fake.fail_next(CREATE, Failure(headers={"Retry-After": "7"}))
    with pytest.raises(AdapterError) as caught:
        await discord_bot.adapter.send(ChatTarget("discord", GENERAL_ID), "hello")
    assert (caught.value.status, caught.value.retry_after) == (429, 7.0)
    assert len(discord_bot.fake.calls_to(CREATE)) == 1


async def test_refusals_become_adapter_errors_with_status(discord_bot: Harness) -> None:
    """A 403 becomes AdapterError(status=403) with Discord's reason; an edit of a missing message is a 404."""
    fake = discord_bot.fake
    fake.fail_next(CREATE, Failure(status=403, body={"message": "Missing Permissions", "code": 50013}, headers={}))
    with pytest.raises(AdapterError) as refused:
        await discord_bot.adapter.send(ChatTarget("discord", GENERAL_ID), "hello")
    with pytest.raises(AdapterError) as missing:
        await discord_bot.adapter.edit(SentMessage(ChatTarget("discord", GENERAL_ID), "1900000000000000009"), "x")
    assert (refused.value.status, str(refused.value)) == (403, "discord send failed: 403 Missing Permissions (code 50013)")
    assert missing.value.status == 404


async def test_misuse_is_refused_clearly(fake_discord: FakeDiscord) -> None:
    """Sending before start or an empty text raise AdapterError, a blank token or bad URL ValueError; no request is made."""
    adapter = make_adapter(fake_discord)
    with pytest.raises(AdapterError, match="not started"):
        await adapter.send(ChatTarget("discord", GENERAL_ID), "hi")
    with pytest.raises(AdapterError, match="empty"):
        await adapter.send(ChatTarget("discord", GENERAL_ID), "  ")
    with pytest.raises(ValueError, match="token"):
        DiscordAdapter(token=" ")
    with pytest.raises(ValueError, match="gateway_url"):
        DiscordAdapter(token=TOKEN, gateway_url="http://127.0.0.1:1/gw")
    assert fake_discord.calls == []


async def test_non_numeric_channel_is_refused(discord_bot: Harness) -> None:
    """A chat id that is not a snowflake is refused before any request is made."""
    with pytest.raises(AdapterError, match="not a Discord channel id"):
        await discord_bot.adapter.send(ChatTarget("discord", "general"), "hi")
    assert discord_bot.fake.calls_to(CREATE) == []


async def test_a_reply_sent_again_under_its_key_is_posted_once(discord_bot: Harness) -> None:
    """`send_once` keys each chunk with a nonce Discord enforces: the repeat a replica taking over sends (its
    sender died after Discord accepted, before the ack) returns the first posts instead of making new ones."""
    target = ChatTarget("discord", GENERAL_ID)
    text = "x " * 1500  # two chunks
    first = await discord_bot.adapter.send_once(target, text, key="0f3c9a1e5b7d4c2a8e6f1b3d5a7c9e0f")
    again = await discord_bot.adapter.send_once(target, text, key="0f3c9a1e5b7d4c2a8e6f1b3d5a7c9e0f")
    bodies = [call.body or {} for call in discord_bot.fake.calls_to(CREATE)]
    assert len(first) == 2 and again == first and len(discord_bot.fake.posted) == 2
    assert [(b["nonce"], b["enforce_nonce"]) for b in bodies[:2]] == [("0f3c9a1e5b7d4c2a8e6f1b3.0", True),
                                                                      ("0f3c9a1e5b7d4c2a8e6f1b3.1", True)]
    other = await discord_bot.adapter.send_once(target, "another reply", key="1a2b")
    assert other[0] not in first and len(discord_bot.fake.posted) == 3
