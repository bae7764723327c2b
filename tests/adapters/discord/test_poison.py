"""Discord's inbound path with hostile text: lone surrogates, NUL and controls in content, names and file names."""
from __future__ import annotations

from hypothesis import given

from adapters.base import Attachment
from adapters.discord import Accepted, MessageFacts, classify
from tests.adapters.discord.conftest import Harness
from tests.adapters.strategies import hostile_text, strings_of, utf8_valid
from tests.fakes.discord_api import BOB_ID, DM_CHANNEL_ID, USERS

BOT = "900"


@given(content=hostile_text, name=hostile_text, file_name=hostile_text)
def test_hostile_messages_become_valid_utf8(content: str, name: str, file_name: str) -> None:
    """Whatever the gateway JSON carried, every string of the message is valid UTF-8 without NUL."""
    facts = MessageFacts(
        message_id="10", channel_id="20", author_id="30", author_name=name, content=content + " x",
        timestamp=1.0, in_guild=False, attachments=(Attachment(kind="file", name=file_name, url="https://cdn/f"),),
    )
    decision = classify(facts, bot_user_id=BOT)
    assert isinstance(decision, Accepted)
    assert all(utf8_valid(value) and "\x00" not in value for value in strings_of(decision.message))


async def test_gateway_message_with_a_lone_surrogate_is_delivered_cleaned(discord_bot: Harness) -> None:
    """A MESSAGE_CREATE whose JSON carries "\\ud83d" (real discord.py decoding it) arrives with U+FFFD."""
    fake = discord_bot.fake
    author = {**USERS[BOB_ID], "global_name": "Bob\ud83d\n"}
    await fake.send_message(fake.message("cut \ud83d emoji\x00", channel_id=DM_CHANNEL_ID, author=author, guild=False))
    message = await discord_bot.next_message()
    assert (message.text, message.user_name) == ("cut \ufffd emoji", "Bob\ufffd ")
