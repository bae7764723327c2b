"""Building the Telegram adapter from `platforms.telegram`.

Owns `build_telegram`: maps `TelegramSettings` (secrets unwrapped here, and
only here) to `TelegramAdapter`'s plain arguments, and turns a missing token,
webhook URL or webhook secret into a `ConfigError` naming the key to set.
Knows nothing of the Bot API; the adapter knows nothing of the config tree.
"""
from __future__ import annotations

from pydantic import SecretStr

from adapters.base import BotCommand
from adapters.listeners import ListenerLimits
from adapters.telegram import TelegramAdapter, WebhookOptions
from chorus_errors import ConfigError
from gateway.config import TelegramSettings

TOKEN_KEY = "platforms.telegram.token"


def _secret(value: SecretStr | None) -> str:
    return value.get_secret_value().strip() if value is not None else ""


def _webhook(settings: TelegramSettings) -> WebhookOptions:
    hook = settings.webhook
    if not hook.url:
        raise ConfigError(
            "platforms.telegram.webhook.url is required in webhook mode (the public HTTPS URL Telegram posts to)",
            key="platforms.telegram.webhook.url",
        )
    secret = _secret(hook.secret_token)
    if not secret:
        raise ConfigError(
            "platforms.telegram.webhook.secret_token is required in webhook mode (Telegram echoes it so we can "
            "tell its requests from forged ones)",
            key="platforms.telegram.webhook.secret_token",
        )
    options = WebhookOptions(url=hook.url, secret_token=secret, path=hook.path, listen=hook.listen, port=hook.port)
    if problems := options.problems():
        raise ConfigError(f"platforms.telegram.webhook: {'; '.join(problems)}", key="platforms.telegram.webhook")
    return options


def build_telegram(
    settings: TelegramSettings,
    *,
    max_attachment_bytes: int | None = None,
    commands: tuple[BotCommand, ...] = (),
    listener_limits: ListenerLimits | None = None,
) -> TelegramAdapter:
    """A `TelegramAdapter` for `platforms.telegram` (no I/O; call `start()` to connect).

    In webhook mode the adapter serves its route itself on
    `webhook.listen:webhook.port` at `webhook.path` and registers `webhook.url`
    with Telegram; in polling mode it long-polls and serves nothing.

    Raises:
        ConfigError: `token` is missing, or in webhook mode `webhook.url` /
            `webhook.secret_token` is missing or unusable.
    """
    token = _secret(settings.token)
    if not token:
        raise ConfigError(f"{TOKEN_KEY} is required to use Telegram (the bot token from @BotFather)", key=TOKEN_KEY)
    return TelegramAdapter(
        token,
        base_url=settings.base_url,
        mode=settings.mode,
        webhook=_webhook(settings) if settings.mode == "webhook" else None,
        token_setting=TOKEN_KEY,
        max_attachment_bytes=max_attachment_bytes,
        commands=commands,
        listener_limits=listener_limits or ListenerLimits(),
    )
