"""Where one platform's attachments may come from: its allowed origins, and what each may be sent.

Owns `Origin` (scheme, host, port: what a URL is compared by) and
`FetchPolicy`. An origin is either the platform's own well-known one
(`https://files.slack.com`, Discord's CDN, `https://api.telegram.org`): https,
and only reachable at a public address; or one the operator configured
(`platforms.slack.file_hosts`, a Discord `api_base_url`, a Telegram
`base_url`), which may be plain http and may resolve to a private or loopback
address, because the operator named that very origin. Credentials (Slack's
`Authorization: Bearer`) belong to origins, never to a URL. No I/O.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import yarl

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Origin:
    """scheme://host:port, lower-cased, the port made explicit."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str | yarl.URL) -> Origin:
        """The origin of an absolute http(s) URL.

        Raises:
            ValueError: not an absolute http or https URL with a host.
        """
        parsed = url if isinstance(url, yarl.URL) else yarl.URL(url)
        scheme = (parsed.scheme or "").lower()
        if scheme not in DEFAULT_PORTS or not parsed.host:
            raise ValueError(f"not an absolute http(s) URL: {_safe(str(url))!r}")
        port = parsed.explicit_port or DEFAULT_PORTS[scheme]
        return cls(scheme=scheme, host=parsed.host.lower().rstrip("."), port=port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{host}{port}"


def _safe(url: str) -> str:
    """A URL for an error text: scheme and host only (a Telegram file URL carries the token in its path)."""
    parsed = yarl.URL(url)
    return f"{parsed.scheme}://{parsed.host}" if parsed.host else "(no host)"


def parse_origin(text: str) -> Origin:
    """A configured origin such as `https://files.slack.com` or `http://127.0.0.1:8081` (no path, query or user).

    Raises:
        ValueError: not scheme://host[:port] with http or https.
    """
    parsed = yarl.URL(text.strip())
    if parsed.path not in ("", "/") or parsed.query_string or parsed.fragment or parsed.user or parsed.password:
        raise ValueError(f"an origin is scheme://host[:port] with nothing after it, got {_safe(text)!r}…")
    return Origin.of(parsed)


@dataclass(frozen=True, slots=True)
class AllowedOrigin:
    origin: Origin
    configured: bool  # named by the operator: plain http and private addresses allowed
    headers: tuple[tuple[str, str], ...] = ()  # sent to this origin only (e.g. the bot token)


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """One platform's allowed origins, built by the adapter from what the gateway configured."""

    platform: str
    allowed: tuple[AllowedOrigin, ...]

    @classmethod
    def build(
        cls,
        platform: str,
        *,
        builtin: Iterable[str] = (),
        configured: Iterable[str] = (),
        headers: Mapping[str, str] | None = None,
    ) -> FetchPolicy:
        """A policy from the platform's own origins and the operator's (both as scheme://host[:port]).

        `headers` are sent to every origin of this policy (and to no other); an
        origin listed in both is the platform's own (address-checked).

        Raises:
            ValueError: an origin that does not parse, or a built-in one that is not https.
        """
        sent = tuple((headers or {}).items())
        own = [parse_origin(text) for text in builtin]
        if any(origin.scheme != "https" for origin in own):
            raise ValueError("a platform's own file origins must be https")
        allowed = [AllowedOrigin(origin, configured=False, headers=sent) for origin in own]
        allowed.extend(
            AllowedOrigin(origin, configured=True, headers=sent)
            for origin in (parse_origin(text) for text in configured) if origin not in own
        )
        return cls(platform=platform, allowed=tuple(dict.fromkeys(allowed)))

    def find(self, origin: Origin) -> AllowedOrigin | None:
        return next((entry for entry in self.allowed if entry.origin == origin), None)

    def configured_host(self, host: str, port: int) -> bool:
        """Whether `host:port` belongs to an operator-configured origin (its addresses are not checked)."""
        host = host.lower().rstrip(".")
        return any(e.configured and e.origin.host == host and e.origin.port == port for e in self.allowed)


__all__ = ["AllowedOrigin", "FetchPolicy", "Origin", "parse_origin"]
