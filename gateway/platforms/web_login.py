"""Who may use the web chat, resolved at start from `platforms.web.auth`, `token` and `allowed_origins`.

Owns `WebLogin` (the access rule handed to `WebAdapter`, and where its token came from),
`resolve_web_login`, `web_announcement` and `exposed_web_problem`.

- `auth: auto` (the default): no login on a loopback host (only this machine reaches it), a token on any
  other host. `auth: token`: a token on any host. `auth: none`: no login, and on a non-loopback host that
  must be written explicitly: it is logged as a warning at every start and shown by `chorus doctor`.
- The token: `platforms.web.token`, else (null or empty, e.g. an unset `${CHORUS_WEB_TOKEN:-}`) one
  generated at the first start, saved to `<home>/web_token` (mode 0600) and reused after, like the
  admin token. A generated token is shown once, on stderr, never in the structured log.
- A token that is needed but can be neither read nor saved (home not writable) stops the start with a
  `ConfigError` naming `platforms.web.auth`: the web chat never falls back to running open.
"""
from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from adapters.web import WebAccess
from chorus_errors import ConfigError
from gateway.config import WebSettings

WEB_TOKEN_FILE = "web_token"
TOKEN_BYTES = 24
EXPOSED_FIX = ("set platforms.web.auth: token (a token is generated and shown at start, or set platforms.web.token), "
               "or bind platforms.web.host to 127.0.0.1")


def is_loopback(host: str) -> bool:
    """Only this machine can reach `host` (localhost, 127.0.0.0/8, ::1); 0.0.0.0 and names are not."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class WebLogin:
    """The web chat's access rule and where its token came from (`generated`: written at this start)."""

    access: WebAccess
    source: Literal["config", "file", "generated", "none"]
    path: Path | None = None


def _configured(settings: WebSettings) -> str | None:
    token = settings.token.get_secret_value().strip() if settings.token is not None else ""
    return token or None


def token_required(settings: WebSettings) -> bool:
    if settings.auth == "auto":
        return not is_loopback(settings.host)
    return settings.auth == "token"


def _read(path: Path) -> str | None:
    with contextlib.suppress(FileNotFoundError, UnicodeDecodeError):
        return path.read_text(encoding="utf-8").strip() or None
    return None


def _saved_token(path: Path) -> tuple[str, bool]:
    """The token in `path`, or a new one written there (mode 0600); True when it was just generated.

    Written whole to a private file, then linked into place: replicas sharing a home that start together
    all end up with the one token that won the link.
    """
    existing = _read(path)
    if existing is not None:
        return existing, False
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    draft = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
        try:
            os.link(draft, path)
        except FileExistsError:
            winner = _read(path)
            if winner is not None:
                return winner, False
            os.replace(draft, path)  # an empty or unreadable file left behind: ours replaces it
            return token, True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(draft)
    return token, True


def resolve_web_login(settings: WebSettings, home: Path) -> WebLogin:
    """The web chat's access rule for this start (may create `<home>/web_token`).

    Raises:
        ConfigError: a token is required but cannot be read or saved under home.
    """
    origins = tuple(settings.allowed_origins)
    if not token_required(settings):
        return WebLogin(WebAccess(None, origins), "none")
    configured = _configured(settings)
    if configured is not None:
        return WebLogin(WebAccess(configured, origins), "config")
    path = home / WEB_TOKEN_FILE
    try:
        token, generated = _saved_token(path)
    except OSError as exc:
        raise ConfigError(
            f"platforms.web.auth: the web chat on {settings.host} needs a token, and none could be saved in {path} "
            f"({exc.strerror or type(exc).__name__}); set platforms.web.token, or make home writable",
            key="platforms.web.auth",
        ) from None
    return WebLogin(WebAccess(token, origins), "generated" if generated else "file", path)


def exposed_web_problem(settings: WebSettings) -> str | None:
    """The warning for a web chat anyone on the network can use (`auth: none` on a non-loopback host)."""
    if not settings.enabled or token_required(settings) or is_loopback(settings.host):
        return None
    return (f"platforms.web.auth is none on {settings.host}: anyone who reaches port {settings.port} chats with "
            "the bot on the operator's model key")


def web_announcement(login: WebLogin, url: str) -> str:
    """The stderr line `chorus run` prints about the web chat (the token itself only when just generated)."""
    if login.source == "generated":
        return (f"chorus: web chat on {url} (sign-in token generated and saved in {login.path}: "
                f"{login.access.token}; set platforms.web.token to choose your own)")
    if login.source == "file":
        return f"chorus: web chat on {url} (sign-in token in {login.path})"
    if login.source == "config":
        return f"chorus: web chat on {url} (sign-in token from platforms.web.token)"
    return f"chorus: web chat on {url}"


__all__ = [
    "EXPOSED_FIX", "WEB_TOKEN_FILE", "WebLogin", "exposed_web_problem", "is_loopback", "resolve_web_login",
    "token_required", "web_announcement",
]
