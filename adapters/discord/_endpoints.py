"""Where discord.py connects: the REST root and the gateway URL, which the library keeps process-wide.

Owns `Endpoints` (validated URLs, no I/O) and `pointed_at` (an async context
that applies them to discord.py and restores the originals afterwards).
discord.py reads `discord.http.Route.BASE` when it builds each request and
`DiscordWebSocket.DEFAULT_GATEWAY` when it opens a fresh (non-resume)
connection; neither can be set per client. So the patch is applied only when
a custom URL is configured, reference-counted (one running adapter plus a
probe share it), and refused when a second adapter in the same process wants
different URLs at the same time. Knows nothing of messages or the gateway.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import discord.gateway
import discord.http
import yarl

from adapters.base import AdapterError
from adapters.fetch import FetchPolicy, Origin

PLATFORM = "discord"
# Where Discord serves attachments (`url` and `proxy_url`); a configured `api_base_url` is added to these.
CDN_ORIGINS = ("https://cdn.discordapp.com", "https://media.discordapp.net")


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Custom discord.py endpoints; None keeps the library's own (discord.com)."""

    api_base_url: str | None = None
    gateway_url: str | None = None

    @classmethod
    def parse(cls, *, api_base_url: str | None, gateway_url: str | None) -> Endpoints:
        """Validate and normalise the configured URLs (no I/O).

        Args:
            api_base_url: The versioned REST root, like `https://discord.com/api/v10`.
            gateway_url: The gateway websocket, like `wss://gateway.discord.gg/`.

        Raises:
            ValueError: a URL with the wrong scheme or no host.
        """
        api = api_base_url.strip().rstrip("/") if api_base_url and api_base_url.strip() else None
        gateway = gateway_url.strip() if gateway_url and gateway_url.strip() else None
        if api is not None:
            _check(api, ("http", "https"), "api_base_url")
        if gateway is not None:
            _check(gateway, ("ws", "wss"), "gateway_url")
        return cls(api_base_url=api, gateway_url=gateway)

    @property
    def custom(self) -> bool:
        return self.api_base_url is not None or self.gateway_url is not None

    def file_policy(self) -> FetchPolicy:
        """Attachments come from Discord's CDN, or from the configured REST root's origin (a proxy or a fake)."""
        configured = [str(Origin.of(self.api_base_url))] if self.api_base_url is not None else []
        return FetchPolicy.build(PLATFORM, builtin=CDN_ORIGINS, configured=configured)


def _check(url: str, schemes: tuple[str, ...], key: str) -> None:
    parsed = yarl.URL(url)
    if parsed.scheme not in schemes or not parsed.host:
        raise ValueError(f"discord {key} must be an absolute {'/'.join(schemes)} URL, got {url!r}")


@dataclass(slots=True)
class _Patch:
    endpoints: Endpoints
    holders: int
    saved_base: str
    saved_gateway: yarl.URL


_active: _Patch | None = None


def _acquire(endpoints: Endpoints) -> None:
    global _active
    if _active is not None:
        if _active.endpoints != endpoints:
            raise AdapterError(
                "discord.py's endpoints are process-wide and another Discord adapter in this process already points"
                f" them at {_active.endpoints.api_base_url or 'discord.com'}; run one Discord adapter per process",
                platform=PLATFORM,
            )
        _active.holders += 1
        return
    _active = _Patch(endpoints, 1, discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
    if endpoints.api_base_url is not None:
        discord.http.Route.BASE = endpoints.api_base_url
    if endpoints.gateway_url is not None:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(endpoints.gateway_url)


def _release() -> None:
    global _active
    if _active is None:
        return
    _active.holders -= 1
    if _active.holders > 0:
        return
    discord.http.Route.BASE = _active.saved_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = _active.saved_gateway
    _active = None


class Lease:
    """One holder's share of the patch; `release()` is idempotent."""

    def __init__(self, endpoints: Endpoints) -> None:
        self._held = False
        if endpoints.custom:
            _acquire(endpoints)
            self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            _release()


@asynccontextmanager
async def pointed_at(endpoints: Endpoints) -> AsyncIterator[None]:
    """discord.py talks to `endpoints` inside the block (nothing changes when they are the defaults).

    Raises:
        AdapterError: another adapter in this process holds different endpoints.
    """
    lease = Lease(endpoints)
    try:
        yield
    finally:
        lease.release()
