"""Inline-keyboard buttons: sending a message with them, and a press (`callback_query`) turned into a message.

Owns `choices_markup` and `press_to_inbound`. A button carries its command as
`callback_data` (at most 64 bytes); a press arrives from the presser as that
command, addressed to the bot, with `interaction` = the callback query id, so the
gateway answers it privately with answerCallbackQuery. Pure: no I/O.
"""
from __future__ import annotations

from collections.abc import Sequence

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update

from adapters.base import Choice, InboundMessage
from adapters.decisions import Ignored
from adapters.normalize import normalize_inbound

from ._inbound import _CHAT_TYPES, PLATFORM

MAX_CALLBACK_DATA_BYTES = 64  # Telegram's limit on a button's callback_data


def choices_markup(choices: Sequence[Choice]) -> InlineKeyboardMarkup:
    """One row of buttons, each sending its command back when pressed."""
    for choice in choices:
        if len(choice.command.encode()) > MAX_CALLBACK_DATA_BYTES:
            raise ValueError(f"a button's command is over {MAX_CALLBACK_DATA_BYTES} bytes: {choice.command[:20]!r}…")
    return InlineKeyboardMarkup([[InlineKeyboardButton(c.label, callback_data=c.command) for c in choices]])


def press_to_inbound(update: Update) -> InboundMessage | Ignored:
    """A button press as the presser's own message (Ignored: no data, or the message it was under is gone)."""
    press = update.callback_query
    if press is None:
        return Ignored("not a button press")
    message = press.message
    data = press.data
    if not isinstance(data, str) or not data.startswith("/") or message is None:
        return Ignored("a press without a command or a message")
    chat_type = _CHAT_TYPES.get(message.chat.type)
    if chat_type is None:
        return Ignored(f"chat type {message.chat.type}")
    user = press.from_user
    thread = getattr(message, "message_thread_id", None) if getattr(message, "is_topic_message", False) else None
    return normalize_inbound(InboundMessage(
        platform=PLATFORM,
        chat_id=str(message.chat.id),
        chat_type=chat_type,
        user_id=str(user.id),
        user_name=user.full_name or user.username or str(user.id),
        user_handle=user.username,
        text=data,
        message_id=f"press:{press.id}",
        timestamp=message.date.timestamp() if message.date else 0.0,
        thread_id=str(thread) if thread else None,
        mentions_bot=True,
        delivery_id=f"{PLATFORM}:{update.update_id}",
        interaction=press.id,
        language=user.language_code,
    ))


__all__ = ["choices_markup", "press_to_inbound"]
