"""Building the platforms' adapters from the config: which are enabled, each one alone, and what they share.

Owns `build_adapter` (one platform by name: web, console, telegram, discord, slack; None when
disabled), `build_adapters` and `leased_adapters` (every enabled one; a long-polled Telegram
token behind the poller lease), the listener limits every port gets, the command menu, the
access rules per platform and `AttachmentSources`, the adapters that download attachments
read at each use (an adapter restarted after a config change replaces its entry). Secrets are
unwrapped in the per-platform factories (`gateway/platforms/telegram.py`, …), never logged.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from adapters.base import AttachmentSource, BotCommand, PlatformAdapter
from adapters.console import ConsoleAdapter
from adapters.listeners import ListenerLimits
from adapters.web import WebAdapter
from chorus_errors import ConfigError
from gateway.commands.table import COMMANDS
from gateway.config import ChorusConfig
from gateway.coord import Coordinator, poller_lease_name
from gateway.intake.allowlist import AccessRules
from gateway.intake.poller import LeasedAdapter
from gateway.platforms.web_login import resolve_web_login

PLATFORM_FACTORIES = {"telegram": "build_telegram", "discord": "build_discord", "slack": "build_slack"}
WEB_UPLOADS_DIR = "web_uploads"  # under the home: files sent in the web chat, until their turn read them


def listener_limits(config: ChorusConfig) -> ListenerLimits:
    """`gateway.read_timeout_seconds` and `gateway.max_connections`, for every port the process listens on."""
    return ListenerLimits(read_timeout_seconds=config.gateway.read_timeout_seconds,
                          max_connections=config.gateway.max_connections)


ADAPTER_NAMES = ("web", "console", *PLATFORM_FACTORIES)  # in start order


def build_adapters(config: ChorusConfig, *, banner: str = "") -> dict[str, PlatformAdapter]:
    """Every enabled adapter by platform name (ConfigError names a missing key)."""
    adapters: dict[str, PlatformAdapter] = {}
    for name in ADAPTER_NAMES:
        if (adapter := build_adapter(config, name, banner=banner)) is not None:
            adapters[name] = adapter
    return adapters


def build_adapter(config: ChorusConfig, name: str, *, banner: str = "") -> PlatformAdapter | None:
    """Platform `name`'s adapter, or None when it is disabled (ConfigError names a missing key)."""
    platforms = config.platforms
    if name == "web":
        if not platforms.web.enabled:
            return None
        login = resolve_web_login(platforms.web, config.home_dir)  # a token off loopback (ConfigError if none can be had)
        # Uploads wait in the home (a turn replayed after a restart still reads them), capped like every download.
        return WebAdapter(host=platforms.web.host, port=platforms.web.port, banner=banner,
                          limits=listener_limits(config), access=login.access,
                          uploads_dir=config.home_dir / WEB_UPLOADS_DIR,
                          max_upload_bytes=config.gateway.max_attachment_bytes)
    if name == "console":
        return ConsoleAdapter() if platforms.console else None
    settings = getattr(platforms, name)
    if not settings.enabled:
        return None
    module = importlib.import_module(f"gateway.platforms.{name}")
    try:
        if name == "telegram":
            # The photo size is chosen against the cap at intake; the menu is set at start.
            adapter: PlatformAdapter = module.build_telegram(
                settings, max_attachment_bytes=config.gateway.max_attachment_bytes, commands=command_menu(),
                listener_limits=listener_limits(config),
            )
            return adapter
        # discord, slack: the slash-command menu
        built: PlatformAdapter = getattr(module, PLATFORM_FACTORIES[name])(settings, commands=command_menu())
        return built
    except ConfigError as exc:  # a token read from an unset ${VAR}: name the variable, not only the key
        raise ConfigError(str(exc) + config.env_hint(exc.key), key=exc.key) from None


def command_menu() -> tuple[BotCommand, ...]:
    """The platforms' command menus, from the gateway's own command list."""
    return COMMANDS.menu


def attachment_sources(adapters: Mapping[str, PlatformAdapter]) -> dict[str, AttachmentSource]:
    """The adapters that can download attachments (a leased poller's inner adapter does the work)."""
    sources: dict[str, AttachmentSource] = {}
    for name, adapter in adapters.items():
        inner = adapter.inner if isinstance(adapter, LeasedAdapter) else adapter
        if isinstance(inner, AttachmentSource):
            sources[name] = inner
    return sources


class AttachmentSources(Mapping[str, AttachmentSource]):
    """`attachment_sources(adapters)` read at use: an adapter restarted after a config change is the one asked."""

    def __init__(self, adapters: Mapping[str, PlatformAdapter]) -> None:
        self._adapters = adapters

    def __getitem__(self, name: str) -> AttachmentSource:
        return attachment_sources(self._adapters)[name]

    def __iter__(self) -> Iterator[str]:
        return iter(attachment_sources(self._adapters))

    def __len__(self) -> int:
        return len(attachment_sources(self._adapters))


def access_rules(config: ChorusConfig) -> dict[str, AccessRules]:
    rules = {"web": AccessRules.of("web"), "console": AccessRules.of("console")}
    for name in PLATFORM_FACTORIES:
        settings = getattr(config.platforms, name)
        rules[name] = AccessRules.of(
            name,
            allowed_users=settings.allowed_users,
            allowed_chats=settings.allowed_chats,
            allow_all_users=settings.allow_all_users,
        )
    return rules


def leased_adapters(config: ChorusConfig, coord: Coordinator, *, node: str, banner: str) -> dict[str, PlatformAdapter]:
    """The enabled adapters; a long-polled Telegram token behind the poller lease (two pollers of one token conflict)."""
    return {name: adapter for name in ADAPTER_NAMES
            if (adapter := leased_adapter(config, name, coord, node=node, banner=banner)) is not None}


def leased_adapter(
    config: ChorusConfig, name: str, coord: Coordinator, *, node: str, banner: str = ""
) -> PlatformAdapter | None:
    """`build_adapter`, with a long-polled Telegram token behind the poller lease."""
    adapter = build_adapter(config, name, banner=banner)
    telegram = config.platforms.telegram
    if name == "telegram" and adapter is not None and telegram.mode == "polling" and telegram.token is not None:
        return LeasedAdapter(adapter, lease=coord.poller_lease, owner=node,
                             name=poller_lease_name("telegram", telegram.token.get_secret_value()))
    return adapter


__all__ = [
    "ADAPTER_NAMES", "PLATFORM_FACTORIES", "AttachmentSources", "access_rules", "attachment_sources", "build_adapter",
    "WEB_UPLOADS_DIR", "build_adapters", "command_menu", "leased_adapter", "leased_adapters", "listener_limits",
]
