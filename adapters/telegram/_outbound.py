"""Sending, editing, typing and deleting on Telegram through one PTB `Bot`.

Owns `TelegramOutbound`: replies cut at 4,096 UTF-16 units (code fences kept
intact), sent as MarkdownV2 with one plain-text resend when Telegram answers
400 to the formatted text (so a reply is never lost to markup), edits through
the per-chat `EditThrottle` with "message is not modified" taken as success,
and best-effort typing. Knows nothing of the lifecycle or of inbound updates.
"""
from __future__ import annotations

import structlog
from telegram import Bot, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, TelegramError

from adapters.base import AdapterError, ChatTarget, SentMessage
from adapters.telegram._calls import PLATFORM, Caller, is_not_modified
from adapters.telegram._chunks import telegram_chunks, utf16_len
from adapters.telegram._markdown import to_markdown_v2
from adapters.telegram._throttle import EditThrottle

MAX_MESSAGE_CHARS = 4096

log = structlog.get_logger(__name__)


def chat_id_of(value: str) -> int | str:
    """Numeric chat ids as int; `@channelname` stays a string."""
    return int(value) if value.lstrip("-").isdigit() else value


class TelegramOutbound:
    """The outbound half of the adapter, bound to one started `Bot`."""

    def __init__(self, bot: Bot, *, call: Caller, throttle: EditThrottle) -> None:
        self._bot = bot
        self._call = call
        self._throttle = throttle

    async def send(self, target: ChatTarget, text: str, *, reply_to: str | None = None) -> list[SentMessage]:
        """Send `text` as MarkdownV2 (plain text if rejected), split at 4,096 characters.

        Args:
            target: the chat, and the forum topic as `thread_id`.
            text: the reply, in common Markdown.
            reply_to: a message id the first chunk replies to (sent anyway if it is gone).

        Returns:
            Every message sent, in order.

        Raises:
            ValueError: empty text.
            AdapterError: Telegram refused (with `retry_after` when rate limited past the cap).
        """
        if not text.strip():
            raise ValueError("send() needs non-empty text: Telegram rejects empty messages")
        sent: list[SentMessage] = []
        for index, chunk in enumerate(telegram_chunks(text, MAX_MESSAGE_CHARS)):
            message = await self._send_chunk(target, chunk, reply_to if index == 0 else None)
            sent.append(SentMessage(target=target, message_id=str(message.message_id)))
        return sent

    async def _send_chunk(self, target: ChatTarget, chunk: str, reply_to: str | None) -> Message:
        chat_id = chat_id_of(target.chat_id)
        thread_id = int(target.thread_id) if target.thread_id else None
        reply = ReplyParameters(int(reply_to), allow_sending_without_reply=True) if reply_to else None
        try:
            return await self._call(
                "sendMessage",
                lambda: self._bot.send_message(
                    chat_id, to_markdown_v2(chunk), parse_mode=ParseMode.MARKDOWN_V2,
                    message_thread_id=thread_id, reply_parameters=reply,
                ),
                passthrough=(BadRequest,),
            )
        except BadRequest as exc:
            # Any 400 on a formatted message gets one plain resend: a reply is never lost to markup.
            log.warning("telegram.markup_rejected", method="sendMessage", chat_id=target.chat_id,
                        detail=self._call.redact(exc.message))
        return await self._call(
            "sendMessage",
            lambda: self._bot.send_message(chat_id, chunk, message_thread_id=thread_id, reply_parameters=reply),
        )

    async def send_choices(self, target: ChatTarget, text: str, markup: InlineKeyboardMarkup) -> list[SentMessage]:
        """Send `text` as plain text (it may quote arbitrary tool arguments) with buttons under it."""
        chat_id = chat_id_of(target.chat_id)
        thread_id = int(target.thread_id) if target.thread_id else None
        message = await self._call("sendMessage", lambda: self._bot.send_message(
            chat_id, text[:MAX_MESSAGE_CHARS], message_thread_id=thread_id, reply_markup=markup))
        return [SentMessage(target=target, message_id=str(message.message_id))]

    async def edit(self, sent: SentMessage, text: str) -> None:
        """Replace a sent message's text; throttled per chat, superseded edits skipped, "not modified" ignored.

        Raises:
            ValueError: empty text.
            AdapterError: longer than one message (nothing is sent), or Telegram refused.
        """
        if not text.strip():
            raise ValueError("edit() needs non-empty text: Telegram rejects empty messages")
        if utf16_len(text) > MAX_MESSAGE_CHARS:
            raise AdapterError(
                f"edit() text is {utf16_len(text)} UTF-16 units; one Telegram message holds {MAX_MESSAGE_CHARS}: "
                "send the rest as a new message",
                platform=PLATFORM,
                status=400,
            )
        await self._throttle.submit(sent.target.chat_id, sent.message_id, lambda: self._edit_now(sent, text))

    async def _edit_now(self, sent: SentMessage, text: str) -> None:
        chat_id, message_id = chat_id_of(sent.target.chat_id), int(sent.message_id)
        try:
            await self._call(
                "editMessageText",
                lambda: self._bot.edit_message_text(
                    to_markdown_v2(text), chat_id=chat_id, message_id=message_id, parse_mode=ParseMode.MARKDOWN_V2
                ),
                passthrough=(BadRequest,),
            )
            return
        except BadRequest as exc:
            if is_not_modified(exc):
                return
            log.warning("telegram.markup_rejected", method="editMessageText", chat_id=sent.target.chat_id,
                        detail=self._call.redact(exc.message))
        try:
            await self._call(
                "editMessageText",
                lambda: self._bot.edit_message_text(text, chat_id=chat_id, message_id=message_id),
                passthrough=(BadRequest,),
            )
        except BadRequest as exc:
            if not is_not_modified(exc):
                raise self._call.translate(exc, "editMessageText") from None

    async def typing(self, target: ChatTarget) -> None:
        """Show "typing…" for about 5 s (repeat every 4 s while working). Best effort: failures are only logged."""
        try:
            await self._bot.send_chat_action(
                chat_id_of(target.chat_id), ChatAction.TYPING,
                message_thread_id=int(target.thread_id) if target.thread_id else None,
            )
        except TelegramError as exc:  # a missed typing indicator must not fail a turn, nor wait out a 429
            log.info("telegram.typing.failed", chat_id=target.chat_id, detail=self._call.redact(exc.message))

    async def react(self, target: ChatTarget, message_id: str, emoji: str) -> None:
        """setMessageReaction: the bot's one reaction on the message (replacing its earlier one)."""
        chat_id = chat_id_of(target.chat_id)
        await self._call("setMessageReaction",
                         lambda: self._bot.set_message_reaction(chat_id, int(message_id), reaction=emoji))

    async def delete(self, sent: SentMessage) -> None:
        """Delete a message the bot sent.

        Raises:
            AdapterError: Telegram refused (e.g. too old, or already deleted).
        """
        chat_id, message_id = chat_id_of(sent.target.chat_id), int(sent.message_id)
        await self._call("deleteMessage", lambda: self._bot.delete_message(chat_id, message_id))
