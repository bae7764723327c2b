"""Building the Discord adapter from `platforms.discord`.

Owns `build_discord`: maps `DiscordSettings` (the token unwrapped here, and
only here) to `DiscordAdapter`'s plain arguments, and turns a missing token
or a bad URL into a `ConfigError` naming the key to set. Allowlists and
`require_mention` stay with the gateway (`gateway/intake/allowlist.py`,
`gateway/intake/triggers.py`); the adapter knows nothing of the config tree.
"""
from __future__ import annotations

from adapters.base import BotCommand
from adapters.discord import DiscordAdapter
from chorus_errors import ConfigError
from gateway.config import DiscordSettings

TOKEN_KEY = "platforms.discord.token"


def build_discord(settings: DiscordSettings, *, commands: tuple[BotCommand, ...] = ()) -> DiscordAdapter:
    """A `DiscordAdapter` for `platforms.discord` (no I/O; call `start()` to connect).

    `api_base_url` / `gateway_url` point discord.py at a proxy or a test
    fake; left unset, it talks to discord.com.

    Raises:
        ConfigError: `token` is missing, or a URL is not absolute http(s) / ws(s).
    """
    token = settings.token.get_secret_value().strip() if settings.token is not None else ""
    if not token:
        raise ConfigError(f"{TOKEN_KEY} is required to use Discord (the bot token from the developer portal)",
                          key=TOKEN_KEY)
    try:
        return DiscordAdapter(
            token=token, api_base_url=settings.api_base_url, gateway_url=settings.gateway_url, commands=commands
        )
    except ValueError as exc:
        key = "platforms.discord.gateway_url" if "gateway_url" in str(exc) else "platforms.discord.api_base_url"
        raise ConfigError(f"{key}: {exc}", key=key) from exc
