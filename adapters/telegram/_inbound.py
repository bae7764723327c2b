"""One Telegram `Update` turned into an `InboundMessage`, or a reason to ignore it.

Owns the platform's addressing rules: `@botname` mentions and text mentions of
the bot, replies to the bot (but not the forum-topic creation message every
topic message replies to), `/cmd@botname` (rewritten to `/cmd`, counted as a
mention; `/cmd@otherbot` is ignored as not ours), forum topics as threads, and
`delivery_id = "telegram:<update_id>"`, the replied-to message (or the part
of it the user quoted) as a `Quote`, other bots (`sender_is_bot`; our own
messages are ignored) and `edited_message` updates (`edited=True`, same
`message_id`). Pure: no I/O, knows nothing of sessions.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from telegram import Message, MessageEntity, Update, User

from adapters.base import Attachment, ChatType, InboundMessage, Quote
from adapters.decisions import Ignored
from adapters.normalize import fix_surrogates, normalize_inbound

PLATFORM = "telegram"
_CHAT_TYPES: dict[str, ChatType] = {"private": "dm", "group": "group", "supergroup": "group"}


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is, from getMe: enough to recognise mentions and replies."""

    id: int
    username: str


def _mentions_bot(entities: dict[MessageEntity, str], bot: BotIdentity) -> bool:
    handle = f"@{bot.username}".lower()
    for entity, value in entities.items():
        if entity.type == MessageEntity.MENTION and value.lower() == handle:
            return True
        if entity.type == MessageEntity.TEXT_MENTION and entity.user is not None and entity.user.id == bot.id:
            return True
    return False


def _entity_texts(text: str, entities: Sequence[MessageEntity]) -> dict[MessageEntity, str]:
    """PTB's `parse_entities` over `text` (free of lone surrogates, on which PTB's own UTF-16 encode raises)."""
    units = text.encode("utf-16-le")
    return {
        entity: units[entity.offset * 2:(entity.offset + entity.length) * 2].decode("utf-16-le", "replace")
        for entity in entities
    }


def _leading_command(entities: dict[MessageEntity, str]) -> str | None:
    for entity, value in entities.items():
        if entity.type == MessageEntity.BOT_COMMAND and entity.offset == 0:
            return value
    return None


def _seconds(value: int | dt.timedelta) -> float:
    return value.total_seconds() if isinstance(value, dt.timedelta) else float(value)


def _photo(message: Message, max_bytes: int | None) -> Attachment:
    """The largest size of the photo within the byte cap (the smallest when none fits: it is then refused)."""
    sizes = sorted(message.photo, key=lambda p: (p.file_size or 0, p.width * p.height))
    fitting = [p for p in sizes if max_bytes is None or p.file_size is None or p.file_size <= max_bytes]
    chosen = fitting[-1] if fitting else sizes[0]
    return Attachment(kind="image", mime_type="image/jpeg", size=chosen.file_size, ref=chosen.file_id,
                      name=f"photo_{chosen.width}x{chosen.height}.jpg")


def _attachments(message: Message, max_bytes: int | None = None) -> tuple[Attachment, ...]:
    found: list[Attachment] = []
    if message.photo:
        found.append(_photo(message, max_bytes))
    if message.document is not None:
        doc = message.document
        is_image = (doc.mime_type or "").startswith("image/")
        found.append(Attachment(kind="image" if is_image else "file", name=doc.file_name, mime_type=doc.mime_type, size=doc.file_size,
                                ref=doc.file_id))
    if message.audio is not None:
        audio = message.audio
        found.append(Attachment(kind="audio", name=audio.file_name, mime_type=audio.mime_type, size=audio.file_size,
                                ref=audio.file_id, duration=_seconds(audio.duration)))
    if message.voice is not None:
        voice = message.voice
        found.append(Attachment(kind="audio", name="voice.ogg", mime_type=voice.mime_type or "audio/ogg",
                                size=voice.file_size, ref=voice.file_id, duration=_seconds(voice.duration), voice=True))
    if message.video is not None:
        video = message.video
        found.append(Attachment(kind="video", name=video.file_name, mime_type=video.mime_type, size=video.file_size,
                                ref=video.file_id, duration=_seconds(video.duration)))
    return tuple(found)


def _is_topic_root(message: Message, reply: Message) -> bool:
    """Every message in a forum topic "replies" to the topic's creation message: not a real reply."""
    if reply.forum_topic_created is not None:
        return True
    return bool(message.is_topic_message) and reply.message_id == message.message_thread_id


def _describe(message: Message) -> str:
    """A replied-to message's text, or a word for what it was (a photo with no caption)."""
    text = message.text or message.caption
    if text:
        return fix_surrogates(text)
    kinds = ("photo", "document", "audio", "voice", "video", "sticker", "animation", "poll", "location", "contact")
    kind = next((name for name in kinds if getattr(message, name, None)), "message")
    return f"[{kind}]"


def _quote(message: Message, reply: Message) -> Quote | None:
    """What `message` replied to: the part the user selected (Telegram `quote`), else the whole message.

    Telegram puts the whole replied-to message in the update however far back it was, so nothing is fetched.
    """
    sender = _sender(reply)
    name = sender[1] if sender is not None else "unknown"
    selected = message.quote
    text = fix_surrogates(selected.text) if selected is not None and selected.text else _describe(reply)
    author_is_bot = reply.from_user is not None and reply.from_user.is_bot
    return Quote(author_name=name, text=text, author_id=sender[0] if sender else None,
                 message_id=str(reply.message_id), partial=selected is not None, author_is_bot=author_is_bot)


def _sender(message: Message) -> tuple[str, str] | None:
    user: User | None = message.from_user
    if user is not None:
        return str(user.id), user.full_name or user.username or str(user.id)
    if message.sender_chat is not None:  # anonymous admins and channels posting in a group
        chat = message.sender_chat
        return str(chat.id), chat.title or chat.username or str(chat.id)
    return None


def to_inbound(update: Update, bot: BotIdentity, *, max_photo_bytes: int | None = None) -> InboundMessage | Ignored:
    """Normalise one update.

    Args:
        update: a parsed Bot API update.
        bot: the bot's own id and username.
        max_photo_bytes: the attachment cap, to pick the largest photo size that fits.

    Returns:
        The `InboundMessage` to queue, or `Ignored` with the reason.
    """
    message = update.message or update.edited_message
    if message is None:
        return Ignored("not a message or an edit")
    chat_type = _CHAT_TYPES.get(message.chat.type)
    if chat_type is None:
        return Ignored(f"chat type {message.chat.type}")
    sender = _sender(message)
    if sender is None:
        return Ignored("no sender")
    if message.from_user is not None and message.from_user.id == bot.id:
        return Ignored("own message")
    # U+FFFD for a lone surrogate keeps the text's length in UTF-16 units, so entity offsets still hold.
    text = fix_surrogates(message.text or message.caption or "")
    entities = _entity_texts(text, message.entities if message.text else message.caption_entities)
    mentions = _mentions_bot(entities, bot)
    command = _leading_command(entities)
    if command is not None and "@" in command:
        name, _, addressee = command.partition("@")
        if addressee.lower() != bot.username.lower():
            return Ignored(f"command for @{addressee}")
        text, mentions = name + text[len(command):], True
    attachments = _attachments(message, max_photo_bytes)
    if not text and not attachments:
        return Ignored("no text or attachment")
    reply = message.reply_to_message
    real_reply = reply is not None and not _is_topic_root(message, reply)
    replies_to_bot = bool(real_reply and reply is not None and reply.from_user is not None and reply.from_user.id == bot.id)
    return normalize_inbound(InboundMessage(
        platform=PLATFORM,
        chat_id=str(message.chat.id),
        chat_type=chat_type,
        user_id=sender[0],
        user_name=sender[1],
        user_handle=message.from_user.username if message.from_user is not None else None,
        text=text,
        message_id=str(message.message_id),
        timestamp=message.date.timestamp(),
        thread_id=str(message.message_thread_id) if message.is_topic_message and message.message_thread_id else None,
        mentions_bot=mentions,
        replies_to_bot=replies_to_bot,
        reply_to_message_id=str(reply.message_id) if real_reply and reply is not None else None,
        attachments=attachments,
        delivery_id=f"{PLATFORM}:{update.update_id}",
        sender_is_bot=message.from_user is not None and message.from_user.is_bot,
        quote=_quote(message, reply) if real_reply and reply is not None else None,
        edited=update.edited_message is not None and update.message is None,
        language=message.from_user.language_code if message.from_user is not None else None,
    ))
