"""Keyed sends: a platform that drops a repeat of a message sent under the same key.

Owns `KeyedSend` (the capability the gateway looks for) and `chunk_nonce`. A
reply that the platform accepted from a sender killed before its outbox ack is
sent again by whichever replica takes it over. Where the platform takes an
idempotency key (Discord's `nonce` with `enforce_nonce`, checked for a few
minutes), the repeat returns the first message instead of posting a second.
Telegram and Slack take none; their adapters don't have this capability.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from adapters.base import ChatTarget, SentMessage

NONCE_CHARS = 25  # Discord's limit for a message nonce


@runtime_checkable
class KeyedSend(Protocol):
    """An adapter whose platform posts at most one message per key (within its own time window)."""

    async def send_once(self, target: ChatTarget, text: str, *, key: str, reply_to: str | None = None) -> list[SentMessage]:
        """`send`, with each part keyed by `key` and its index: sent again, the platform returns the first post."""
        ...


def chunk_nonce(key: str, index: int) -> str:
    """The key of one part of a reply, at most `NONCE_CHARS` characters (the index keeps parts apart)."""
    suffix = f".{index}"
    return key[: NONCE_CHARS - len(suffix)] + suffix


__all__ = ["NONCE_CHARS", "KeyedSend", "chunk_nonce"]
