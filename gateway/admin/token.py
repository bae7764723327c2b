"""The admin token `chorus run` uses: `admin.token`, else on a loopback admin port one generated under `home`.

Owns `AdminToken` and `resolve_admin_token`. With `admin.token` unset the
operator API would answer 403 and the dashboard would be a dead end; on a
loopback address (reachable only from this machine) a random token is
generated at the first start, saved to `<home>/admin_token` (mode 0600) and
reused after. It is shown once, on stderr with the dashboard URL, never in the
structured log (which records its fingerprint). An admin port on another
address keeps the API disabled until `admin.token` is set.
"""
from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gateway.config import ChorusConfig

TOKEN_FILE = "admin_token"
TOKEN_BYTES = 24
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True, slots=True)
class AdminToken:
    """The token and where it came from (`generated`: written at this start, to be shown once)."""

    value: str | None
    source: Literal["config", "file", "generated", "none"]
    path: Path | None = None


def _read(path: Path) -> str | None:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = path.read_text(encoding="utf-8").strip()
        return text or None
    return None


def resolve_admin_token(config: ChorusConfig) -> AdminToken:
    """The admin token for this start (may create `<home>/admin_token`).

    Raises:
        OSError: home cannot be written (the caller reports it like any start failure).
    """
    if config.admin.token is not None and config.admin.token.get_secret_value():
        return AdminToken(config.admin.token.get_secret_value(), "config")
    if config.admin.host not in LOOPBACK_HOSTS:
        return AdminToken(None, "none")
    path = config.home_dir / TOKEN_FILE
    existing = _read(path)
    if existing is not None:
        return AdminToken(existing, "file", path)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return AdminToken(token, "generated", path)


def announcement(token: AdminToken, dashboard: str) -> str:
    """The stderr line `chorus run` prints about the dashboard (the token itself only when just generated)."""
    if token.source == "generated":
        return (f"chorus: dashboard on {dashboard}#token={token.value} (admin token generated and saved in "
                f"{token.path}; set admin.token to choose your own)")
    if token.source == "file":
        return f"chorus: dashboard on {dashboard} (admin token in {token.path})"
    if token.source == "none":
        return (f"chorus: dashboard on {dashboard} is disabled: admin.host is not loopback, so set admin.token "
                "(e.g. admin: {token: ${CHORUS_ADMIN_TOKEN}})")
    return f"chorus: dashboard on {dashboard} (admin.token from the config)"


__all__ = ["LOOPBACK_HOSTS", "TOKEN_FILE", "AdminToken", "announcement", "resolve_admin_token"]
