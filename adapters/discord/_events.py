"""Deciding what one Discord message means: an `InboundMessage`, or a reason to ignore it.

Owns `MessageFacts` (the plain facts read off a `discord.Message`),
`classify` (a pure function: facts in, `Accepted | Ignored` out),
`clean_text` (mention markup → readable text) (decisions and
`RecentKeys` come from `adapters/decisions.py`). Knows nothing of discord.py objects,
the network, sessions or the gateway.

Rules (documented decisions):
- A message outside a guild is a DM (`chat_type="dm"`, chat_id = the DM
  channel id); a guild channel message is a group (chat_id = channel id).
- A thread message has `thread_id` = the thread's channel id and `chat_id` =
  the parent channel id, so threads are separate sessions of one chat.
- Mentioned: the bot's user id is in the payload's `mentions`, or the bot's
  managed role is in `mention_roles`. The bot's `<@id>`, `<@!id>` and
  `<@&role>` are removed from the text; other users, roles and channels are
  rendered by name (`@bob`, `@mods`, `#general`).
- A guild post without a mention is still delivered with
  `mentions_bot=False`: the gateway decides.
- `replies_to_bot`: the message references (Discord reply) a message
  authored by the bot, or one the bot sent during this run.
- Other bots' messages arrive with `sender_is_bot` (the gateway applies
  `allow_bots` and the loop guard). A reply carries the replied-to message as
  a `Quote` (the adapter fetches it when discord.py had not cached it).
- Ignored: the bot's own messages, webhooks' messages, system messages (joins, pins, thread-created…) and messages
  with neither text nor attachments (the sign of a missing Message Content
  intent).
"""
from __future__ import annotations

import re
from collections.abc import Container, Mapping
from dataclasses import dataclass, field

from adapters.base import Attachment, InboundMessage, Quote
from adapters.decisions import Accepted, Decision, Ignored
from adapters.normalize import normalize_inbound

from ._endpoints import PLATFORM

DEFAULT_TYPE = 0
REPLY_TYPE = 19
HANDLED_TYPES = frozenset({DEFAULT_TYPE, REPLY_TYPE})
_MARKUP = re.compile(r"<(@!?|@&|#)(\d+)>")


@dataclass(frozen=True, slots=True)
class MessageFacts:
    """What Chorus needs from one Discord message, as plain values.

    `channel_id` is where the message was posted (a thread's own id for a
    thread message); `parent_id` is set only when that channel is a thread.
    """

    message_id: str
    channel_id: str
    author_id: str
    author_name: str
    content: str
    timestamp: float
    in_guild: bool
    parent_id: str | None = None
    author_is_bot: bool = False
    webhook: bool = False
    type: int = DEFAULT_TYPE
    mention_ids: frozenset[str] = frozenset()
    role_mention_ids: frozenset[str] = frozenset()
    reference_id: str | None = None
    reference_author_id: str | None = None
    reference_text: str | None = None  # the replied-to message's content, when it was resolved or fetched
    reference_author_name: str | None = None
    reference_author_is_bot: bool = False
    attachments: tuple[Attachment, ...] = ()
    user_names: Mapping[str, str] = field(default_factory=dict)
    role_names: Mapping[str, str] = field(default_factory=dict)
    channel_names: Mapping[str, str] = field(default_factory=dict)
    author_handle: str | None = None  # the unique username (display names are free text)


def delivery_id(message_id: str) -> str:
    """The cross-process de-duplication id of one Discord message (snowflakes are globally unique)."""
    return f"{PLATFORM}:{message_id}"


def clean_text(content: str, facts: MessageFacts, *, bot_user_id: str, bot_role_id: str | None) -> str:
    """`content` with the bot's mentions removed and other mention markup rendered by name."""

    def render(match: re.Match[str]) -> str:
        sigil, ident = match.group(1), match.group(2)
        if sigil.startswith("@") and sigil != "@&":
            return "" if ident == bot_user_id else f"@{facts.user_names.get(ident, ident)}"
        if sigil == "@&":
            return "" if ident == bot_role_id else f"@{facts.role_names.get(ident, ident)}"
        return f"#{facts.channel_names.get(ident, ident)}"

    text = _MARKUP.sub(render, content)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def _quote(facts: MessageFacts) -> Quote | None:
    if facts.reference_text is None:
        return None
    return Quote(author_name=facts.reference_author_name or "unknown", text=facts.reference_text or "[attachment]",
                 author_id=facts.reference_author_id, message_id=facts.reference_id,
                 author_is_bot=facts.reference_author_is_bot)


def _skip_reason(facts: MessageFacts, bot_user_id: str) -> str | None:
    if facts.author_id == bot_user_id:
        return "own message"
    if facts.webhook:
        return "webhook message"
    if facts.type not in HANDLED_TYPES:
        return f"message type {facts.type} not handled"
    if not facts.content.strip() and not facts.attachments:
        return "empty message (no text and no attachments: is the Message Content intent enabled?)"
    return None


def classify(
    facts: MessageFacts,
    *,
    bot_user_id: str,
    bot_role_id: str | None = None,
    bot_messages: Container[str] = frozenset(),
) -> Decision:
    """Decide what one Discord message means.

    Args:
        facts: The message, read off discord.py's object.
        bot_user_id: The bot's user id.
        bot_role_id: The bot's managed role in this guild, if any.
        bot_messages: Ids of messages the bot sent (for replies whose target was not resolved).

    Returns:
        `Accepted(message)` or `Ignored(reason)`.
    """
    reason = _skip_reason(facts, bot_user_id)
    if reason is not None:
        return Ignored(reason)
    mentioned = bot_user_id in facts.mention_ids or (bot_role_id is not None and bot_role_id in facts.role_mention_ids)
    replies_to_bot = facts.reference_id is not None and (
        facts.reference_author_id == bot_user_id or facts.reference_id in bot_messages
    )
    in_thread = facts.parent_id is not None
    return Accepted(
        normalize_inbound(InboundMessage(
            platform=PLATFORM,
            chat_id=facts.parent_id if facts.parent_id is not None else facts.channel_id,
            chat_type="group" if facts.in_guild else "dm",
            user_id=facts.author_id,
            user_name=facts.author_name,
            user_handle=facts.author_handle,
            text=clean_text(facts.content, facts, bot_user_id=bot_user_id, bot_role_id=bot_role_id),
            message_id=facts.message_id,
            timestamp=facts.timestamp,
            thread_id=facts.channel_id if in_thread else None,
            mentions_bot=mentioned,
            replies_to_bot=replies_to_bot,
            reply_to_message_id=facts.reference_id,
            attachments=facts.attachments,
            delivery_id=delivery_id(facts.message_id),
            sender_is_bot=facts.author_is_bot,
            quote=_quote(facts),
        ))
    )
