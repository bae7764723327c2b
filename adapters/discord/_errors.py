"""Translating discord.py and transport failures into `AdapterError`, with the fix in the message.

Owns `translate` and the gateway close codes Chorus explains. Status,
`retry_after` and close codes travel as data; the token never appears in a
message (discord.py's own errors do not carry it either).
"""
from __future__ import annotations

import asyncio

import aiohttp
import discord

from adapters.base import AdapterError

from ._endpoints import PLATFORM

TOKEN_KEY = "platforms.discord.token"
INTENTS_HINT = (
    "the bot may not use the Message Content intent: enable it in the Discord developer portal"
    " (Bot → Privileged Gateway Intents → Message Content)"
)
# Gateway close codes that end the connection for good (discord.py does not reconnect after them).
CLOSE_HINTS: dict[int, str] = {
    4004: f"authentication failed: check {TOKEN_KEY}",
    4010: "invalid shard",
    4011: "sharding required: the bot is in too many guilds for one connection",
    4012: "invalid gateway API version",
    4013: "invalid intents",
    4014: INTENTS_HINT,
}


def _http_detail(exc: discord.HTTPException) -> str:
    text = exc.text or exc.response.reason or "error"
    code = f" (code {exc.code})" if exc.code else ""
    return f"{exc.status} {text}{code}"


def _header_retry_after(exc: discord.HTTPException) -> float:
    """Retry-After of a 429 discord.py did not wait out (it does so only with a `Via` header, as Discord sends)."""
    try:
        return max(0.0, float(exc.response.headers.get("Retry-After", "1")))
    except (TypeError, ValueError, AttributeError):
        return 1.0


def translate(exc: BaseException, *, action: str, token_key: str = TOKEN_KEY) -> AdapterError:
    """Map what discord.py or the transport raised to an `AdapterError` naming the fix.

    Args:
        exc: The exception.
        action: What was being done (`send`, `login`, `GET /users/@me`…), for the message.
        token_key: The config key a bad token should point the operator to.
    """
    if isinstance(exc, AdapterError):
        return exc
    if isinstance(exc, discord.LoginFailure):
        return AdapterError(f"discord {action} failed: 401: check {token_key}", platform=PLATFORM, status=401)
    if isinstance(exc, discord.RateLimited):
        return AdapterError(
            f"discord {action} failed: rate limited for {exc.retry_after:.1f}s",
            platform=PLATFORM, retry_after=exc.retry_after, status=429,
        )
    if isinstance(exc, discord.HTTPException):
        if exc.status == 401:
            return AdapterError(f"discord {action} failed: 401: check {token_key}", platform=PLATFORM, status=401)
        retry_after = _header_retry_after(exc) if exc.status == 429 else None
        return AdapterError(f"discord {action} failed: {_http_detail(exc)}", platform=PLATFORM,
                            status=exc.status, retry_after=retry_after)
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return AdapterError(f"discord {action} failed: gateway closed 4014: {INTENTS_HINT}", platform=PLATFORM, status=4014)
    if isinstance(exc, discord.ConnectionClosed):
        hint = CLOSE_HINTS.get(exc.code or 0, exc.reason or "connection closed")
        return AdapterError(f"discord {action} failed: gateway closed {exc.code}: {hint}", platform=PLATFORM, status=exc.code)
    if isinstance(exc, (aiohttp.ClientError, asyncio.TimeoutError, OSError, discord.GatewayNotFound)):
        return AdapterError(f"discord {action} failed: cannot reach Discord ({type(exc).__name__})", platform=PLATFORM)
    return AdapterError(f"discord {action} failed: {type(exc).__name__}", platform=PLATFORM)
