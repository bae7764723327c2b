"""Inbound: real discord.py receiving MESSAGE_CREATEs from the fake gateway, normalised by the adapter."""
from __future__ import annotations

from adapters.base import ChatTarget
from adapters.discord import delivery_id
from tests.adapters.discord.conftest import Harness
from tests.fakes.discord_api import (
    ALICE_ID,
    BOB_ID,
    BOT_ID,
    BOT_ROLE_ID,
    BOT_USER,
    DM_CHANNEL_ID,
    GENERAL_ID,
    MESSAGE_CONTENT_INTENT,
    MODS_ROLE_ID,
    OTHER_BOT_ID,
    RANDOM_ID,
    THREAD_A_ID,
    USERS,
    thread_channel,
)

THREAD_B_ID = "1400000000000000002"
THREAD_C_ID = "1400000000000000003"


async def test_identify_asks_for_the_message_content_intent(discord_bot: Harness) -> None:
    """The IDENTIFY the client sent carries the token and the privileged Message Content intent."""
    identify = discord_bot.fake.client_ops(2)[0].d
    assert identify["intents"] & MESSAGE_CONTENT_INTENT == MESSAGE_CONTENT_INTENT
    assert identify["token"] == "fake-discord-bot-token.Gx1Yz2"


async def test_dm_is_delivered_as_a_dm(discord_bot: Harness) -> None:
    """A DM becomes chat_type dm with chat_id = the DM channel, the author's display name and a discord: delivery id."""
    fake = discord_bot.fake
    payload = fake.message("hello there", channel_id=DM_CHANNEL_ID, author=USERS[BOB_ID], guild=False)
    await fake.send_message(payload)
    message = await discord_bot.next_message()
    assert (message.platform, message.chat_type, message.chat_id, message.thread_id) == ("discord", "dm", DM_CHANNEL_ID, None)
    assert (message.user_id, message.user_name, message.text) == (BOB_ID, "Bob", "hello there")
    assert (message.message_id, message.delivery_id) == (payload["id"], delivery_id(payload["id"]))
    assert (message.mentions_bot, message.replies_to_bot) == (False, False)


async def test_guild_mention_is_detected_and_stripped(discord_bot: Harness) -> None:
    """<@bot> and <@!bot> in a guild channel set mentions_bot and are removed; other mentions read as names."""
    fake = discord_bot.fake
    await fake.send_message(fake.message(f"<@{BOT_ID}> ask <@{BOB_ID}> in <#{RANDOM_ID}>",
                                         mentions=(BOT_USER, USERS[BOB_ID])))
    await fake.send_message(fake.message(f"hey <@!{BOT_ID}>  what now?", mentions=(BOT_USER,)))
    first, second = await discord_bot.next_message(), await discord_bot.next_message()
    assert (first.chat_type, first.chat_id, first.thread_id, first.mentions_bot) == ("group", GENERAL_ID, None, True)
    assert first.text == "ask @Bob in #random"
    assert (second.text, second.mentions_bot) == ("hey what now?", True)


async def test_role_mention_of_the_bots_managed_role_counts_as_a_mention(discord_bot: Harness) -> None:
    """<@&bot role> sets mentions_bot and is stripped; another role's mention does not and is rendered by name."""
    fake = discord_bot.fake
    await fake.send_message(fake.message(f"<@&{BOT_ROLE_ID}> status?", mention_roles=(BOT_ROLE_ID,)))
    await fake.send_message(fake.message(f"<@&{MODS_ROLE_ID}> status?", mention_roles=(MODS_ROLE_ID,)))
    ours, theirs = await discord_bot.next_message(), await discord_bot.next_message()
    assert (ours.text, ours.mentions_bot) == ("status?", True)
    assert (theirs.text, theirs.mentions_bot) == ("@mods status?", False)


async def test_guild_message_without_mention_is_delivered_unmentioned(discord_bot: Harness) -> None:
    """A plain channel message is delivered with mentions_bot False: the gateway decides what to do."""
    fake = discord_bot.fake
    await fake.send_message(fake.message(f"just chatting about <@{BOB_ID}>", mentions=(USERS[BOB_ID],)))
    message = await discord_bot.next_message()
    assert (message.chat_type, message.mentions_bot, message.replies_to_bot) == ("group", False, False)
    assert message.text == "just chatting about @Bob"


async def test_reply_to_a_bot_message_sets_replies_to_bot(discord_bot: Harness) -> None:
    """A Discord reply whose referenced message the bot wrote sets replies_to_bot and reply_to_message_id."""
    fake = discord_bot.fake
    bots_post = fake.message("I am the bot", author=BOT_USER)
    alices_post = fake.message("I am alice")
    await fake.send_message(fake.message("thanks!", author=USERS[BOB_ID], reply_to=bots_post))
    await fake.send_message(fake.message("me too", author=USERS[BOB_ID], reply_to=alices_post))
    to_bot, to_alice = await discord_bot.next_message(), await discord_bot.next_message()
    assert (to_bot.replies_to_bot, to_bot.reply_to_message_id, to_bot.mentions_bot) == (True, bots_post["id"], False)
    assert (to_alice.replies_to_bot, to_alice.reply_to_message_id) == (False, alices_post["id"])


async def test_reply_to_a_message_the_bot_sent_without_resolved_reference(discord_bot: Harness) -> None:
    """A reply to a message sent through the adapter counts even when Discord omits referenced_message."""
    fake = discord_bot.fake
    [sent] = await discord_bot.adapter.send(ChatTarget("discord", GENERAL_ID), "a bot answer")
    payload = fake.message("follow-up", reply_to={"id": sent.message_id, "channel_id": GENERAL_ID})
    del payload["referenced_message"]
    await fake.send_message(payload)
    message = await discord_bot.next_message()
    assert (message.replies_to_bot, message.reply_to_message_id) == (True, sent.message_id)


async def test_threads_are_isolated_under_one_parent(discord_bot: Harness) -> None:
    """Messages in two threads of one channel share chat_id (the parent) and differ in thread_id."""
    fake = discord_bot.fake
    await fake.create_thread(THREAD_B_ID, "thread-b")
    await fake.send_message(fake.message("in a", channel_id=THREAD_A_ID))
    await fake.send_message(fake.message("in b", channel_id=THREAD_B_ID, author=USERS[BOB_ID]))
    in_a, in_b = await discord_bot.next_message(), await discord_bot.next_message()
    assert (in_a.chat_id, in_a.thread_id, in_a.text) == (GENERAL_ID, THREAD_A_ID, "in a")
    assert (in_b.chat_id, in_b.thread_id, in_b.text) == (GENERAL_ID, THREAD_B_ID, "in b")
    assert in_a.chat_type == in_b.chat_type == "group"


async def test_thread_unknown_to_the_cache_is_looked_up_once(discord_bot: Harness) -> None:
    """A thread never announced over the gateway is resolved with GET /channels/{id}, once, to its parent."""
    fake = discord_bot.fake
    fake.channels[THREAD_C_ID] = thread_channel(THREAD_C_ID, "thread-c", parent_id=RANDOM_ID)
    await fake.send_message(fake.message("first", channel_id=THREAD_C_ID))
    await fake.send_message(fake.message("second", channel_id=THREAD_C_ID))
    first, second = await discord_bot.next_message(), await discord_bot.next_message()
    assert [(m.chat_id, m.thread_id) for m in (first, second)] == [(RANDOM_ID, THREAD_C_ID)] * 2
    assert [call.path for call in fake.calls_to("GET /channels/{channel_id}")] == [f"/channels/{THREAD_C_ID}"]


async def test_own_webhook_and_system_messages_are_ignored_other_bots_marked(discord_bot: Harness) -> None:
    """The bot's own posts, webhooks' and system messages never reach the queue; another bot's arrives marked."""
    fake = discord_bot.fake
    await fake.send_message(fake.message("echo of myself", author=BOT_USER))
    await fake.send_message({**fake.message("from a hook"), "webhook_id": "1700000000000000001"})
    await fake.send_message(fake.message("", message_type=7))  # member join
    await fake.send_message(fake.message("beep", author=USERS[OTHER_BOT_ID]))
    await fake.send_message(fake.message("sentinel", author=USERS[ALICE_ID]))
    bot, message = await discord_bot.next_message(), await discord_bot.next_message()
    assert (bot.text, bot.sender_is_bot) == ("beep", True)
    assert (message.text, message.sender_is_bot) == ("sentinel", False)
    assert discord_bot.queue.empty()


async def test_attachments_are_carried(discord_bot: Harness) -> None:
    """An image attachment with no text is delivered with its kind, url, name, MIME type and size."""
    fake = discord_bot.fake
    attachment = {"id": "1800000000000000001", "filename": "cat.png", "size": 1234, "content_type": "image/png",
                  "url": "https://cdn.example/cat.png", "proxy_url": "https://cdn.example/p/cat.png"}
    await fake.send_message(fake.message("", attachments=(attachment,)))
    message = await discord_bot.next_message()
    [got] = message.attachments
    assert (message.text, got.kind, got.url, got.name, got.mime_type, got.size) == (
        "", "image", "https://cdn.example/cat.png", "cat.png", "image/png", 1234)


async def test_a_reply_to_an_uncached_message_fetches_it_for_the_quote(discord_bot: Harness) -> None:
    """Discord omits referenced_message (too old): the adapter fetches it once and quotes it with its author."""
    fake = discord_bot.fake
    old = fake.message("the launch moved to May", author=USERS[BOB_ID])
    fake.history[old["id"]] = old
    payload = fake.message("since when?", reply_to=old)
    del payload["referenced_message"]
    await fake.send_message(payload)
    got = await discord_bot.next_message()
    assert got.quote is not None
    assert (got.quote.text, got.quote.author_name, got.quote.message_id) == (
        "the launch moved to May", "Bob", old["id"])
    assert len(fake.calls_to("GET /channels/{channel_id}/messages/{message_id}")) == 1


async def test_an_edit_arrives_marked_with_the_earlier_text(discord_bot: Harness) -> None:
    """MESSAGE_UPDATE of a cached message arrives as `edited` with its earlier text and a delivery id of its own."""
    fake = discord_bot.fake
    payload = fake.message("meet at 5")
    await fake.send_message(payload)
    first = await discord_bot.next_message()
    await fake.edit_message(payload, "meet at 6")
    edit = await discord_bot.next_message()
    assert (edit.edited, edit.text, edit.previous_text, edit.message_id) == (True, "meet at 6", "meet at 5", first.message_id)
    assert edit.delivery_id != first.delivery_id

