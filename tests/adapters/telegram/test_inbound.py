"""Updates polled from the fake Bot API become the right InboundMessages."""
from __future__ import annotations

import asyncio

from adapters.base import InboundMessage
from adapters.telegram import TelegramAdapter
from tests.adapters.telegram.conftest import next_message
from tests.fakes.telegram_api import (
    BOT_ID,
    BOT_USERNAME,
    FakeTelegram,
    bot_user,
    entity,
    group_chat,
    message,
    private_chat,
    user,
)


async def test_private_message_is_a_dm(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A private chat message arrives as chat_type "dm" with sender, text and delivery id."""
    payload = message(private_chat(777), "hello there", sender=user(777, "Ada"))
    update_id = await fake.push_update(message=payload)
    got = await next_message(inbound)
    assert (got.platform, got.chat_id, got.chat_type, got.user_id, got.user_name, got.text) == (
        "telegram", "777", "dm", "777", "Ada", "hello there")
    assert got.message_id == str(payload["message_id"])
    assert got.delivery_id == f"telegram:{update_id}"
    assert (got.thread_id, got.mentions_bot, got.replies_to_bot) == (None, False, False)


async def test_polling_requests_only_the_updates_it_handles(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """getUpdates asks for exactly the update types the adapter handles: messages, their edits, button presses."""
    calls = await fake.wait_for_calls("getUpdates")
    assert calls[0].params["allowed_updates"] == ["message", "edited_message", "callback_query"]


async def test_group_message_without_mention(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A plain group message is delivered as "group" with mentions_bot False."""
    await fake.push_update(message=message(group_chat(-100500), "just chatting"))
    got = await next_message(inbound)
    assert (got.chat_id, got.chat_type, got.mentions_bot, got.replies_to_bot) == ("-100500", "group", False, False)


async def test_group_message_with_mention(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """An @botname mention entity (after an emoji, so UTF-16 offsets matter) sets mentions_bot."""
    text = f"🙂 hey @{BOT_USERNAME.upper()} what's up"
    entities = [entity(text, f"@{BOT_USERNAME.upper()}", "mention")]
    await fake.push_update(message=message(group_chat(kind="group"), text, entities=entities))
    got = await next_message(inbound)
    assert (got.chat_type, got.mentions_bot, got.text) == ("group", True, text)


async def test_mention_of_someone_else_is_not_a_mention(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """@otheruser does not address the bot."""
    text = "ping @someone_else"
    await fake.push_update(message=message(group_chat(), text, entities=[entity(text, "@someone_else", "mention")]))
    assert (await next_message(inbound)).mentions_bot is False


async def test_text_mention_of_the_bot(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A text_mention entity pointing at the bot's user id sets mentions_bot."""
    text = "Chorus, summarise please"
    entities = [entity(text, "Chorus", "text_mention", user=bot_user())]
    await fake.push_update(message=message(group_chat(), text, entities=entities))
    assert (await next_message(inbound)).mentions_bot is True


async def test_command_addressed_to_the_bot_is_rewritten(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """/cmd@botname becomes /cmd and counts as a mention."""
    text = f"/reset@{BOT_USERNAME} now"
    entities = [entity(text, f"/reset@{BOT_USERNAME}", "bot_command")]
    await fake.push_update(message=message(group_chat(), text, entities=entities))
    got = await next_message(inbound)
    assert (got.text, got.mentions_bot) == ("/reset now", True)


async def test_command_for_another_bot_is_ignored(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """/cmd@otherbot is not queued; the next message still is."""
    text = "/reset@other_bot"
    await fake.push_update(message=message(group_chat(), text, entities=[entity(text, text, "bot_command")]))
    await fake.push_update(message=message(group_chat(), "after"))
    got = await next_message(inbound)
    assert got.text == "after"
    assert inbound.empty()


async def test_reply_to_the_bot(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A reply to one of the bot's messages sets replies_to_bot and reply_to_message_id."""
    original = message(group_chat(), "I am the bot", sender=bot_user())
    await fake.push_update(message=message(group_chat(), "thanks!", reply_to_message=original))
    got = await next_message(inbound)
    assert (got.replies_to_bot, got.reply_to_message_id, got.mentions_bot) == (
        True, str(original["message_id"]), False)


async def test_reply_to_a_person_is_not_a_reply_to_the_bot(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A reply to another user keeps reply_to_message_id but not replies_to_bot."""
    original = message(group_chat(), "hi", sender=user(888, "Bob"))
    await fake.push_update(message=message(group_chat(), "hi Bob", reply_to_message=original))
    got = await next_message(inbound)
    assert (got.replies_to_bot, got.reply_to_message_id) == (False, str(original["message_id"]))


def _topic_message(chat: dict[str, object], thread_id: int, text: str, creator: dict[str, object]) -> dict[str, object]:
    root = message(chat, "", sender=creator, forum_topic_created={"name": f"topic {thread_id}", "icon_color": 0})
    root["message_id"] = thread_id
    del root["text"]
    return message(chat, text, message_thread_id=thread_id, is_topic_message=True, reply_to_message=root)


async def test_forum_topics_are_separate_threads(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """Messages in two forum topics carry two distinct thread_ids of one chat."""
    forum = group_chat(-100777, is_forum=True)
    await fake.push_update(message=_topic_message(forum, 11, "in topic A", user()))
    await fake.push_update(message=_topic_message(forum, 22, "in topic B", user()))
    first, second = await next_message(inbound), await next_message(inbound)
    assert [(m.chat_id, m.thread_id, m.text) for m in (first, second)] == [
        ("-100777", "11", "in topic A"), ("-100777", "22", "in topic B")]
    assert first.target != second.target


async def test_topic_created_by_the_bot_is_not_a_reply_to_it(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """The implicit reply to the topic-creation message (even one the bot made) is not a reply."""
    forum = group_chat(-100778, is_forum=True)
    await fake.push_update(message=_topic_message(forum, 33, "hello topic", bot_user()))
    got = await next_message(inbound)
    assert (got.thread_id, got.replies_to_bot, got.reply_to_message_id) == ("33", False, None)


async def test_an_edit_is_queued_as_an_edit_and_service_messages_are_not(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """An edited_message update arrives with `edited` and the original message id; a text-less service message is skipped."""
    original = message(group_chat(), "edited", edit_date=1_700_000_100)
    update_id = await fake.push_update(edited_message=original)
    service = message(group_chat(), "", new_chat_members=[user(999, "Cy")])
    del service["text"]
    await fake.push_update(message=service)
    await fake.push_update(message=message(group_chat(), "real"))
    edit = await next_message(inbound)
    assert (edit.text, edit.edited, edit.message_id, edit.delivery_id) == (
        "edited", True, str(original["message_id"]), f"telegram:{update_id}")
    real = await next_message(inbound)
    assert (real.text, real.edited) == ("real", False)
    assert inbound.empty()


async def test_a_partial_quote_of_an_old_message_becomes_the_quote(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A reply with a selected part carries that part, its author and `partial`; the whole text is not used."""
    old = message(group_chat(), "The deploy is on Friday and the freeze starts Thursday.", sender=user(5, "Bob"))
    quote = {"text": "the freeze starts Thursday", "position": 29, "is_manual": True}
    await fake.push_update(message=message(group_chat(), "really?", reply_to_message=old, quote=quote))
    got = await next_message(inbound)
    assert got.quote is not None
    assert (got.quote.author_name, got.quote.author_id, got.quote.text, got.quote.partial) == (
        "Bob", "5", "the freeze starts Thursday", True)
    assert got.text == "really?"


async def test_a_reply_without_a_selection_quotes_the_whole_message(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A plain reply quotes the replied-to text whole; a reply to the bot is marked as the bot's."""
    old = message(group_chat(), "I said this earlier", sender=bot_user())
    await fake.push_update(message=message(group_chat(), "and?", reply_to_message=old))
    got = await next_message(inbound)
    assert got.quote is not None
    assert (got.quote.text, got.quote.partial, got.quote.author_is_bot, got.replies_to_bot) == (
        "I said this earlier", False, True, True)


async def test_another_bot_is_marked_and_our_own_messages_are_dropped(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """`is_bot` senders arrive with `sender_is_bot`; a message from our own bot id never arrives."""
    other = {"id": 999, "is_bot": True, "first_name": "Other", "username": "other_bot"}
    await fake.push_update(message=message(group_chat(), "echo", sender=bot_user()))
    await fake.push_update(message=message(group_chat(), "hi from a bot", sender=other))
    got = await next_message(inbound)
    assert (got.text, got.sender_is_bot, got.user_id) == ("hi from a bot", True, "999")
    assert inbound.empty()


async def test_photo_caption_with_mention(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """A captioned photo gives the caption as text, caption mentions count, and an image attachment."""
    caption = f"@{BOT_USERNAME} what is this?"
    photo = [{"file_id": "a", "file_unique_id": "ua", "width": 90, "height": 90, "file_size": 1000},
             {"file_id": "b", "file_unique_id": "ub", "width": 800, "height": 800, "file_size": 90000}]
    payload = message(group_chat(), "", photo=photo, caption=caption,
                      caption_entities=[entity(caption, f"@{BOT_USERNAME}", "mention")])
    del payload["text"]
    await fake.push_update(message=payload)
    got = await next_message(inbound)
    assert (got.text, got.mentions_bot, [(a.kind, a.size) for a in got.attachments]) == (
        caption, True, [("image", 90000)])


async def test_bot_identity_comes_from_get_me(fake: FakeTelegram, polling: TelegramAdapter) -> None:
    """start() calls getMe once before polling."""
    calls = await fake.wait_for_calls("getUpdates")
    assert [call.method for call in fake.calls[:2]] == ["getMe", "deleteWebhook"]
    assert calls and BOT_ID == bot_user()["id"]


async def test_the_username_is_the_handle_and_the_full_name_only_a_name(
    fake: FakeTelegram, polling: TelegramAdapter, inbound: asyncio.Queue[InboundMessage]
) -> None:
    """Allowlists may match `user_handle` (the unique @username); `user_name` is what the person chose to show."""
    await fake.push_update(message=message(private_chat(901), "hi", sender=user(901, "alice", None)))
    await fake.push_update(message=message(private_chat(902), "hi", sender=user(902, "Alice B", "alice")))
    spoof, real = await next_message(inbound), await next_message(inbound)
    assert (spoof.user_name, spoof.user_handle) == ("alice", None)
    assert (real.user_name, real.user_handle) == ("Alice B", "alice")
