"""Telegram for Chorus: python-telegram-bot's Bot and Updater behind the `PlatformAdapter` Protocol.

Exports `TelegramAdapter` (long polling or webhook, MarkdownV2 with a plain
fallback, per-chat edit throttling, 429 handling), `WebhookOptions`,
`to_markdown_v2` and `ALLOWED_UPDATES`. Imports only PTB, aiohttp and
`adapters.base` / `adapters.text`; never the gateway or the agent.
"""
from __future__ import annotations

from adapters.telegram._adapter import ALLOWED_UPDATES, TelegramAdapter, api_urls
from adapters.telegram._markdown import to_markdown_v2
from adapters.telegram._outbound import MAX_MESSAGE_CHARS
from adapters.telegram._webhook import SECRET_HEADER, WebhookOptions

__all__ = [
    "ALLOWED_UPDATES",
    "MAX_MESSAGE_CHARS",
    "SECRET_HEADER",
    "TelegramAdapter",
    "WebhookOptions",
    "api_urls",
    "to_markdown_v2",
]
