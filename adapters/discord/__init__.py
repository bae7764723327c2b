"""Discord adapter: the gateway websocket and REST API through discord.py's `Client`.

Exports `DiscordAdapter` (a `PlatformAdapter`), `DiscordIdentity`, the
message limit, and the pure inbound rules (`MessageFacts`, `classify`).
Imports only discord.py, aiohttp/yarl and `adapters.base`/`adapters.text`;
never `gateway/` or `agent/`.
"""
from __future__ import annotations

from adapters.decisions import Accepted, Ignored

from ._events import MessageFacts, classify, clean_text, delivery_id
from ._inbound import facts_from
from .adapter import DISCORD_MESSAGE_CHARS, DiscordAdapter, DiscordIdentity

__all__ = [
    "DISCORD_MESSAGE_CHARS",
    "Accepted",
    "DiscordAdapter",
    "DiscordIdentity",
    "Ignored",
    "MessageFacts",
    "classify",
    "clean_text",
    "delivery_id",
    "facts_from",
]
