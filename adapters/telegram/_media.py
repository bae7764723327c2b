"""Telegram files in: downloads through getFile and the file endpoint, and albums merged into one message.

Owns `file_policy`, `download` (the byte cap is checked against getFile's
`file_size` before any download, then the file endpoint is fetched through
the shared `FileFetcher`: only from the configured Bot API server's origin,
the body streamed under the cap) and `AlbumBuffer`: the parts of
a media group arrive as separate updates sharing `media_group_id`; they are
held for `ALBUM_WAIT_SECONDS` after the last part and handed on as one
`InboundMessage` carrying every attachment and the caption. Knows nothing of
sessions or agents.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable

from telegram import Bot
from telegram.error import TelegramError

from adapters.base import AdapterError, Attachment, AttachmentTooLarge, InboundMessage
from adapters.fetch import FetchPolicy, FileFetcher, Origin
from adapters.telegram._inbound import PLATFORM

TELEGRAM_ORIGIN = "https://api.telegram.org"

# Telegram sends an album's parts within a few hundred milliseconds of each other.
ALBUM_WAIT_SECONDS = 0.8


def file_policy(base_url: str | None) -> FetchPolicy:
    """Files come from api.telegram.org, or from the configured Bot API server's origin when there is one.

    Raises:
        ValueError: `base_url` is not an absolute http(s) URL.
    """
    if base_url is None:
        return FetchPolicy.build(PLATFORM, builtin=(TELEGRAM_ORIGIN,))
    return FetchPolicy.build(PLATFORM, configured=(str(Origin.of(base_url)),))


async def download(bot: Bot, attachment: Attachment, *, fetcher: FileFetcher, max_bytes: int) -> bytes:
    """The attachment's bytes via getFile + the file endpoint (the Bot's `base_file_url`)."""
    if not attachment.ref:
        raise AdapterError("the attachment has no Telegram file id", platform=PLATFORM)
    if attachment.size is not None and attachment.size > max_bytes:
        raise AttachmentTooLarge(f"file is {attachment.size} bytes, over the cap of {max_bytes}", platform=PLATFORM)
    try:
        file = await bot.get_file(attachment.ref)
        if file.file_size is not None and file.file_size > max_bytes:
            raise AttachmentTooLarge(f"file is {file.file_size} bytes, over the cap of {max_bytes}", platform=PLATFORM)
    except TelegramError as exc:
        raise AdapterError(f"Telegram file download failed: {type(exc).__name__}", platform=PLATFORM) from None
    if not file.file_path:
        raise AdapterError("Telegram gave no file path for the attachment", platform=PLATFORM)
    return (await fetcher.fetch(file.file_path, max_bytes=max_bytes)).data


def merge(parts: list[InboundMessage]) -> InboundMessage:
    """One message for an album: the first part's ids, the caption that was given, every attachment."""
    first = parts[0]
    text = next((p.text for p in parts if p.text.strip()), "")
    attachments: tuple[Attachment, ...] = tuple(a for p in parts for a in p.attachments)
    return dataclasses.replace(
        first, text=text, attachments=attachments,
        mentions_bot=any(p.mentions_bot for p in parts), replies_to_bot=any(p.replies_to_bot for p in parts),
    )


class AlbumBuffer:
    """Collects the parts of media groups and emits each group once, merged.

    Args:
        emit: where a merged message goes (the adapter's inbound queue).
        wait: seconds of quiet after the last part before the album is complete.
    """

    def __init__(self, emit: Callable[[InboundMessage], Awaitable[None]], *, wait: float = ALBUM_WAIT_SECONDS) -> None:
        self._emit = emit
        self._wait = wait
        self._parts: dict[str, list[InboundMessage]] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}

    def add(self, group_id: str, message: InboundMessage) -> None:
        self._parts.setdefault(group_id, []).append(message)
        timer = self._timers.pop(group_id, None)
        if timer is not None:
            timer.cancel()
        self._timers[group_id] = asyncio.create_task(self._flush_later(group_id), name=f"telegram-album:{group_id}")

    async def _flush_later(self, group_id: str) -> None:
        await asyncio.sleep(self._wait)  # a debounce timer: more parts may still arrive
        self._timers.pop(group_id, None)
        parts = self._parts.pop(group_id, [])
        if parts:
            await self._emit(merge(parts))

    async def flush(self) -> None:
        """Emit every album now (on stop), so no part is lost."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        pending, self._parts = self._parts, {}
        for parts in pending.values():
            await self._emit(merge(parts))


__all__ = ["ALBUM_WAIT_SECONDS", "TELEGRAM_ORIGIN", "AlbumBuffer", "download", "file_policy", "merge"]
