"""Who may use the web chat: the token check and the Origin check, as pure decisions over request headers.

Owns `WebAccess` (the token, if one is required, and the extra allowed origins) and its checks.

- Token: a browser signs in once with `POST /login` (`{"token": …}`) and gets an HttpOnly, SameSite=Strict
  session cookie (an HMAC of the token, so changing the token signs everyone out); a non-browser client
  sends `Authorization: Bearer <token>`. The token never travels in a URL (URLs end up in access logs and
  browser history).
- Origin: a request that carries an `Origin` (browsers always send one on a websocket handshake and on a
  POST) must come from the page's own origin (its host:port is the request's `Host`) or from one of
  `allowed_origins`, so a page on another site cannot drive the chat with the visitor's cookie. With no
  token required, the page's own origin only counts when `Host` is an IP address or `localhost`: a name
  that resolves to this machine through DNS rebinding does not. A request without `Origin` is a non-browser
  client (curl, a script, a bot): it cannot be a cross-site page, and it still needs the token when one is
  required.
"""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

SESSION_COOKIE = "chorus_web_session"
_SESSION_LABEL = b"chorus-web-session-v1"


def normalized_origin(origin: str) -> str | None:
    """`scheme://host[:port]` lowercased, or None when `origin` is not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


def _literal_or_localhost(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class WebAccess:
    """The web chat's access rule: `token` None means no login; `allowed_origins` as configured."""

    token: str | None = None
    allowed_origins: Sequence[str] = ()

    @property
    def required(self) -> bool:
        return self.token is not None

    def session_value(self) -> str:
        """The cookie value a signed-in browser holds (derived from the token, never the token itself)."""
        assert self.token is not None
        return hmac.new(self.token.encode(), _SESSION_LABEL, hashlib.sha256).hexdigest()

    def token_matches(self, offered: str) -> bool:
        return self.token is not None and hmac.compare_digest(offered.encode(), self.token.encode())

    def signed_in(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
        """The request carries the session cookie or `Authorization: Bearer <token>` (always True without a token)."""
        if self.token is None:
            return True
        cookie = cookies.get(SESSION_COOKIE)
        if cookie is not None and hmac.compare_digest(cookie.encode(), self.session_value().encode()):
            return True
        scheme, _, value = headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.token_matches(value.strip())

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        """May a request with this `Origin` (None: none sent) and `Host` header act on the chat?"""
        if origin is None:
            return True  # not a browser: no cross-site page behind it (the token still applies)
        wanted = normalized_origin(origin)
        if wanted is None:
            return False  # "null" (sandboxed frames, file://) or garbage
        if any(normalized_origin(allowed) == wanted for allowed in self.allowed_origins):
            return True
        # The page's own origin: its host:port is the Host header (the scheme may differ behind a TLS proxy).
        if not host or wanted.split("://", 1)[1] != host.lower():
            return False
        return self.required or _literal_or_localhost(host)


__all__ = ["SESSION_COOKIE", "WebAccess", "normalized_origin"]
