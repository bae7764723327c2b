"""Building the Slack adapter from `platforms.slack`.

Owns `build_slack`: maps `SlackSettings` (secrets unwrapped here, and only
here) to `SlackAdapter`'s plain arguments, and turns a missing token or secret
into a `ConfigError` naming the key to set. Knows nothing of Slack's wire
protocol; the adapter knows nothing of the config tree.
"""
from __future__ import annotations

from adapters.base import BotCommand
from adapters.slack import SlackAdapter
from chorus_errors import ConfigError
from gateway.config import SlackSettings


def _secret(settings: SlackSettings, key: str, why: str) -> str:
    value = getattr(settings, key)
    secret = value.get_secret_value() if value is not None else ""
    if not secret.strip():
        raise ConfigError(f"platforms.slack.{key} is required {why}", key=f"platforms.slack.{key}")
    return str(secret)


def build_slack(settings: SlackSettings, *, commands: tuple[BotCommand, ...] = ()) -> SlackAdapter:
    """A `SlackAdapter` for `platforms.slack` (no I/O; call `start()` to connect).

    In `events` mode the gateway mounts `adapter.routes()` (at `settings.path`)
    on its aiohttp app; in `socket` mode `routes()` is empty.

    Raises:
        ConfigError: `bot_token` is missing, or the mode's `signing_secret`
            (events) / `app_token` (socket) is missing.
    """
    bot_token = _secret(settings, "bot_token", "to use Slack (the bot token, xoxb-…)")
    signing_secret: str | None = None
    app_token: str | None = None
    if settings.mode == "events":
        signing_secret = _secret(settings, "signing_secret", "in events mode (to verify Slack's requests)")
    else:
        app_token = _secret(settings, "app_token", "in socket mode (the app-level token, xapp-…)")
    return SlackAdapter(
        bot_token=bot_token,
        signing_secret=signing_secret,
        app_token=app_token,
        mode=settings.mode,
        api_base_url=settings.api_base_url,
        events_path=settings.path,
        commands=commands,
        file_hosts=tuple(settings.file_hosts),
    )
