"""`classify` / `clean_text`: the pure inbound rules, on plain `MessageFacts`."""
from __future__ import annotations

import pytest

from adapters.discord import Accepted, Ignored, MessageFacts, classify, clean_text

BOT, ROLE = "900", "950"


def _facts(**changes: object) -> MessageFacts:
    base: dict[str, object] = {"message_id": "10", "channel_id": "20", "author_id": "30", "author_name": "Alice",
                               "content": "hello", "timestamp": 1_700_000_000.0, "in_guild": True}
    return MessageFacts(**{**base, **changes})  # type: ignore[arg-type]


def _accepted(facts: MessageFacts, **kwargs: object) -> Accepted:
    decision = classify(facts, bot_user_id=BOT, bot_role_id=ROLE, **kwargs)  # type: ignore[arg-type]
    assert isinstance(decision, Accepted), decision
    return decision


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"author_id": BOT}, "own message"),
        ({"webhook": True, "author_is_bot": True}, "webhook message"),
        ({"type": 18}, "message type 18 not handled"),
        ({"content": "  "}, "empty message (no text and no attachments: is the Message Content intent enabled?)"),
    ],
)
def test_ignored_messages_say_why(changes: dict[str, object], reason: str) -> None:
    """Own, webhook, system and empty messages are Ignored with a stated reason."""
    assert classify(_facts(**changes), bot_user_id=BOT, bot_role_id=ROLE) == Ignored(reason)


def test_another_bot_is_passed_on_marked() -> None:
    """Another bot's message is the gateway's to judge (`gateway.allow_bots`): it arrives with `sender_is_bot`."""
    assert _accepted(_facts(author_is_bot=True)).message.sender_is_bot is True
    assert _accepted(_facts()).message.sender_is_bot is False


def test_a_resolved_reply_becomes_a_quote_with_its_author() -> None:
    """The replied-to content and author reach the message as its quote; an unresolved one has none."""
    quoted = _accepted(_facts(reference_id="7", reference_author_id="31", reference_text="the plan",
                              reference_author_name="Bob")).message
    assert quoted.quote is not None
    assert (quoted.quote.author_name, quoted.quote.text, quoted.quote.message_id, quoted.quote.partial) == (
        "Bob", "the plan", "7", False)
    assert _accepted(_facts(reference_id="7")).message.quote is None


def test_thread_message_maps_to_parent_chat_and_thread_id() -> None:
    """A message in thread 20 of channel 5 has chat_id 5 and thread_id 20."""
    message = _accepted(_facts(parent_id="5")).message
    assert (message.chat_id, message.thread_id, message.chat_type) == ("5", "20", "group")


def test_dm_and_delivery_id() -> None:
    """Outside a guild the chat is a DM keyed by its channel; delivery_id is discord:<message id>."""
    message = _accepted(_facts(in_guild=False)).message
    assert (message.chat_type, message.chat_id, message.delivery_id) == ("dm", "20", "discord:10")


def test_mentions_by_user_or_managed_role_only() -> None:
    """The bot's id or its managed role in the payload's mention lists set mentions_bot; text markup alone does not."""
    assert _accepted(_facts(mention_ids=frozenset({BOT}))).message.mentions_bot is True
    assert _accepted(_facts(role_mention_ids=frozenset({ROLE}))).message.mentions_bot is True
    assert _accepted(_facts(content=f"<@{BOT}> hi")).message.mentions_bot is False


def test_reply_detection_by_author_or_sent_memory() -> None:
    """A reference to the bot's message (by resolved author, or an id the bot sent) sets replies_to_bot."""
    by_author = _accepted(_facts(reference_id="7", reference_author_id=BOT)).message
    by_memory = _accepted(_facts(reference_id="8"), bot_messages={"8"}).message
    other = _accepted(_facts(reference_id="9", reference_author_id="31")).message
    assert [m.replies_to_bot for m in (by_author, by_memory, other)] == [True, True, False]
    assert other.reply_to_message_id == "9"


def test_clean_text_renders_markup() -> None:
    """Bot mentions vanish; users, roles and channels read by name; unknown ids stay as ids."""
    facts = _facts(user_names={"31": "Bob"}, role_names={"60": "mods"}, channel_names={"70": "general"})
    text = f"<@!{BOT}> tell <@31> and <@&60> in <#70> about <@32> <@&{ROLE}>"
    assert clean_text(text, facts, bot_user_id=BOT, bot_role_id=ROLE) == "tell @Bob and @mods in #general about @32"
