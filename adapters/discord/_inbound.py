"""Reading a `discord.Message` into `MessageFacts`: ids, author, references, mentions, attachments.

Owns `facts_from` and `attachments_of`. The only module of the inbound path
that touches discord.py's objects; the rules live in `_events.classify`.
Knows nothing of the network (the thread parent is passed in), sessions or
the gateway.
"""
from __future__ import annotations

from typing import Literal

import discord

from adapters.base import Attachment

from ._events import MessageFacts


def attachments_of(message: discord.Message) -> tuple[Attachment, ...]:
    """The message's attachments, typed by their MIME major type."""
    found: list[Attachment] = []
    for item in message.attachments:
        mime = item.content_type or ""
        major = mime.split("/", 1)[0]
        kind: Literal["image", "file", "audio", "video"] = (
            "image" if major == "image" else "audio" if major == "audio" else "video" if major == "video" else "file"
        )
        found.append(Attachment(kind=kind, url=item.url, name=item.filename, mime_type=mime or None, size=item.size))
    return tuple(found)


def in_guild(message: discord.Message) -> bool:
    """Whether the message was posted in a guild (a channel not yet cached still carries its guild id)."""
    channel = message.channel
    return message.guild is not None or (isinstance(channel, discord.PartialMessageable) and channel.guild_id is not None)


def reply_reference(message: discord.Message) -> tuple[int, discord.Message | None] | None:
    """(replied-to id, that message when discord.py has it) for a Discord reply; None: no reply (forwards are not)."""
    ref = message.reference
    if ref is None or ref.message_id is None or ref.type is not discord.MessageReferenceType.reply:
        return None
    target = ref.resolved if isinstance(ref.resolved, discord.Message) else ref.cached_message
    return ref.message_id, target


def facts_from(
    message: discord.Message, *, parent_id: str | None, referenced: discord.Message | None = None
) -> MessageFacts:
    """The plain facts of `message`.

    Args:
        message: What discord.py built from a MESSAGE_CREATE.
        parent_id: The parent channel id when the message's channel is a thread.
        referenced: The replied-to message when the caller fetched it (not in the payload nor cached).
    """
    reply = reply_reference(message)
    target = (reply[1] or referenced) if reply is not None else None
    reference_id = str(reply[0]) if reply is not None else None
    reference_author_id = str(target.author.id) if target is not None else None
    return MessageFacts(
        message_id=str(message.id),
        channel_id=str(message.channel.id),
        author_id=str(message.author.id),
        author_name=message.author.display_name,
        author_handle=message.author.name,
        content=message.content or "",
        timestamp=message.created_at.timestamp(),
        in_guild=in_guild(message),
        parent_id=parent_id,
        author_is_bot=message.author.bot,
        webhook=message.webhook_id is not None,
        type=message.type.value,
        mention_ids=frozenset(str(user.id) for user in message.mentions),
        role_mention_ids=frozenset(str(role_id) for role_id in message.raw_role_mentions),
        reference_id=reference_id,
        reference_author_id=reference_author_id,
        reference_text=target.content if target is not None else None,
        reference_author_name=target.author.display_name if target is not None else None,
        reference_author_is_bot=target.author.bot if target is not None else False,
        attachments=attachments_of(message),
        user_names={str(user.id): user.display_name for user in message.mentions},
        role_names={str(role.id): role.name for role in message.role_mentions},
        channel_names={str(channel.id): channel.name for channel in message.channel_mentions},
    )
