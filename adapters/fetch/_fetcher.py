"""The one path every adapter downloads an attachment through.

Owns `FileFetcher.fetch`. Each hop (the URL, then every redirect, followed by
hand up to `MAX_REDIRECTS`) must be on an origin of the platform's
`FetchPolicy`, else it is refused before any connection. The host is resolved
by `_CheckedResolver`, which hands aiohttp only the addresses it checked (no
loopback, private, link-local, metadata… unless the operator configured that
very origin), so the connection goes to an address that was checked: nothing
can re-resolve in between. An IP-literal host, which aiohttp never resolves, is
checked the same way before the request. The origin's headers (the bot token)
go with the first request only, and again only on a redirect back to that
same origin. The body is refused on its Content-Length when that is over the
cap, else streamed and abandoned as soon as it passes it.

A refusal raises `AttachmentRefused` and logs one `attachment.refused` line
naming the platform, the host and the reason: never the path or query (a
Telegram file URL carries the token in its path) nor a header.
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

import aiohttp
import structlog
import yarl
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from adapters.base import AdapterError, AttachmentRefused, AttachmentTooLarge

from ._addresses import refusal
from ._policy import FetchPolicy, Origin

log = structlog.get_logger(__name__)

MAX_REDIRECTS = 5
TIMEOUT_SECONDS = 60.0
CHUNK_BYTES = 64 * 1024
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True, slots=True)
class Fetched:
    data: bytes
    content_type: str


class _Unsafe(OSError):
    """Raised inside aiohttp's connect step; carries the host and why its addresses were refused."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason


class _CheckedResolver(AbstractResolver):
    """Resolves with `inner`, then keeps only the addresses the policy allows for that host."""

    def __init__(self, policy: FetchPolicy, inner: AbstractResolver) -> None:
        self._policy = policy
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        if self._policy.configured_host(host, port):
            return found
        reasons = [refusal(entry["host"]) for entry in found]
        kept = [entry for entry, reason in zip(found, reasons, strict=True) if reason is None]
        if not kept:
            raise _Unsafe(host, f"resolves only to non-public addresses ({reasons[0] if reasons else 'none'})")
        return kept

    async def close(self) -> None:
        await self._inner.close()


class FileFetcher:
    """Downloads attachment URLs within one platform's `FetchPolicy`.

    Args:
        policy: the allowed origins and the headers each gets.
        resolver: the DNS resolver whose answers are checked (default: aiohttp's).
        timeout_seconds: the whole download, redirects included.
    """

    def __init__(
        self, policy: FetchPolicy, *, resolver: AbstractResolver | None = None, timeout_seconds: float = TIMEOUT_SECONDS
    ) -> None:
        self.policy = policy
        self._resolver = resolver
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)

    async def fetch(self, url: str, *, max_bytes: int) -> Fetched:
        """The body at `url` (after allowed redirects), at most `max_bytes`.

        Raises:
            AttachmentRefused: a hop off the allowed origins, or to a refused address (logged once).
            AttachmentTooLarge: over `max_bytes` by Content-Length or while streaming.
            AdapterError: a non-200 answer, too many redirects, or a network error.
        """
        platform = self.policy.platform
        try:
            return await self._fetch(yarl.URL(url), max_bytes)
        except AttachmentRefused as exc:
            log.warning("attachment.refused", platform=platform, host=exc.host, reason=exc.reason)
            raise
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, _Unsafe):
                refused = exc.os_error
                log.warning("attachment.refused", platform=platform, host=refused.host, reason=refused.reason)
                raise AttachmentRefused(refused.host, refused.reason, platform=platform) from None
            raise AdapterError(f"{platform} file download failed: cannot connect to {exc.host}",
                               platform=platform) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise AdapterError(f"{platform} file download failed: {type(exc).__name__}", platform=platform) from None

    async def _fetch(self, url: yarl.URL, max_bytes: int) -> Fetched:
        first = self._check(url)
        inner = self._resolver or DefaultResolver()
        connector = aiohttp.TCPConnector(resolver=_CheckedResolver(self.policy, inner), use_dns_cache=False)
        async with aiohttp.ClientSession(connector=connector, timeout=self._timeout, trust_env=False) as http:
            for _hop in range(MAX_REDIRECTS + 1):
                origin = self._check(url)
                headers = dict(self._headers(origin)) if origin == first else {}
                async with http.get(url, headers=headers, allow_redirects=False) as response:
                    location = response.headers.get("Location")
                    if response.status in REDIRECT_STATUSES and location:
                        url = url.join(yarl.URL(location))
                        continue
                    if response.status != 200:
                        raise AdapterError(f"{self.policy.platform} file download failed ({response.status})",
                                           platform=self.policy.platform, status=response.status)
                    return Fetched(await self._body(response, max_bytes), response.content_type)
        raise AdapterError(f"{self.policy.platform} file download failed: more than {MAX_REDIRECTS} redirects",
                           platform=self.policy.platform)

    def _check(self, url: yarl.URL) -> Origin:
        """The URL's origin when it is allowed (and an IP-literal host is public or configured)."""
        host = url.host or "(no host)"
        try:
            origin = Origin.of(url)
        except ValueError:
            raise AttachmentRefused(host, "not an http(s) URL", platform=self.policy.platform) from None
        allowed = self.policy.find(origin)
        if allowed is None:
            raise AttachmentRefused(host, f"{origin} is not one of the platform's file origins",
                                    platform=self.policy.platform)
        if not allowed.configured and _is_ip(origin.host) and (reason := refusal(origin.host)) is not None:
            raise AttachmentRefused(host, reason, platform=self.policy.platform)
        return origin

    def _headers(self, origin: Origin) -> tuple[tuple[str, str], ...]:
        allowed = self.policy.find(origin)
        return allowed.headers if allowed is not None else ()

    async def _body(self, response: aiohttp.ClientResponse, max_bytes: int) -> bytes:
        platform = self.policy.platform
        if response.content_length is not None and response.content_length > max_bytes:
            raise AttachmentTooLarge(f"file is {response.content_length} bytes, over {max_bytes}", platform=platform)
        data = bytearray()
        async for chunk in response.content.iter_chunked(CHUNK_BYTES):
            data.extend(chunk)
            if len(data) > max_bytes:
                raise AttachmentTooLarge(f"file is over {max_bytes} bytes", platform=platform)
        return bytes(data)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


__all__ = ["FileFetcher", "Fetched"]
