"""The Telegram webhook as our own aiohttp route: secret checked, payload validated, update handed on.

Owns `WebhookOptions` and `webhook_routes`. Telegram sends the secret given to
setWebhook in `X-Telegram-Bot-Api-Secret-Token`; a missing or wrong one is 403
(compared in constant time) and the payload is never read. A body that is not
a JSON update is 400. What to do with a valid update is the caller's `accept`
callback, which answers with the status to return (200, 400 or 503).
"""
from __future__ import annotations

import hmac
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# What setWebhook accepts as secret_token (Bot API): 1-256 characters A-Z, a-z, 0-9, _ and -.
_SECRET_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,256}$")

Accept = Callable[[dict[str, Any]], Awaitable[int]]
log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class WebhookOptions:
    """Where Telegram posts updates and how we check them.

    Attributes:
        url: the public HTTPS URL registered with setWebhook.
        secret_token: sent back by Telegram in every request's secret header.
        path: the route path served (the path part of `url` behind a proxy).
        listen: serve the route ourselves on `listen:port`; None means the
            host application mounts `TelegramAdapter.routes()` instead.
        port: the port for `listen` (0 picks a free one).
        max_connections: concurrent connections Telegram may open (1-100).
    """

    url: str
    secret_token: str
    path: str = "/telegram"
    listen: str | None = None
    port: int = 8443
    max_connections: int = 40

    def problems(self) -> list[str]:
        """What is wrong with these options, in words (empty when they are usable)."""
        found: list[str] = []
        if not self.url.startswith(("https://", "http://")):
            found.append(f"webhook url must be an http(s) URL, got {self.url!r}")
        if not _SECRET_PATTERN.match(self.secret_token):
            found.append("webhook secret_token must be 1-256 characters of A-Z, a-z, 0-9, _ or -")
        if not self.path.startswith("/"):
            found.append(f"webhook path must start with '/', got {self.path!r}")
        if not 1 <= self.max_connections <= 100:
            found.append(f"webhook max_connections must be 1-100, got {self.max_connections}")
        return found


def webhook_routes(options: WebhookOptions, accept: Accept) -> list[web.RouteDef]:
    """The single POST route receiving Telegram's updates.

    Args:
        options: path and secret.
        accept: called with each authenticated JSON object; returns the HTTP status to answer.
    """
    expected = options.secret_token.encode()

    async def receive(request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, expected):
            log.warning("telegram.webhook.rejected", reason="bad or missing secret", remote=request.remote)
            return web.Response(status=403, text="forbidden")
        try:
            payload = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            log.warning("telegram.webhook.rejected", reason="body is not JSON")
            return web.Response(status=400, text="body is not JSON")
        except RecursionError:
            log.warning("telegram.webhook.rejected", reason="JSON nested too deeply")
            return web.Response(status=400, text="body is JSON nested too deeply to be an update")
        if not isinstance(payload, dict) or not isinstance(payload.get("update_id"), int):
            log.warning("telegram.webhook.rejected", reason="not an update")
            return web.Response(status=400, text="not a Telegram update: expected an object with an integer update_id")
        status = await accept(payload)
        return web.Response(status=status)

    return [web.post(options.path, receive)]
