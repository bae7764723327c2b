"""The shared attachment fetcher against loopback servers that record every request they receive."""
from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from structlog.testing import capture_logs

from adapters.base import AdapterError, AttachmentRefused, AttachmentTooLarge
from adapters.fetch import FetchPolicy, FileFetcher, refusal
from tests.fakes.recorder import Recorder

TOKEN = "xoxb-secret-bot-token"


@pytest.fixture
async def servers() -> AsyncIterator[tuple[Recorder, Recorder]]:
    """(allowed, foreign): two loopback servers; only the first is configured in the tests' policy."""
    async with Recorder() as allowed, Recorder() as foreign:
        yield allowed, foreign


def fetcher_for(allowed: Recorder, **options: object) -> FileFetcher:
    policy = FetchPolicy.build("slack", configured=[allowed.origin], headers={"Authorization": f"Bearer {TOKEN}"})
    return FileFetcher(policy, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(("address", "refused"), [
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("::1", "loopback"),
    ("::ffff:127.0.0.1", "loopback (IPv4 inside IPv6)"),
    ("::ffff:169.254.169.254", "link-local (cloud metadata) (IPv4 inside IPv6)"),
    ("169.254.169.254", "link-local (cloud metadata)"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("192.168.1.1", "private"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.254", "carrier-grade NAT"),
    ("0.0.0.0", "unspecified (this host)"),
    ("fd00::1", "unique-local (private)"),
    ("fc00::1", "unique-local (private)"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("64:ff9b::a9fe:a9fe", "link-local (cloud metadata) (IPv4 inside IPv6)"),
    ("2002:7f00:1::", "loopback (IPv4 inside IPv6)"),
    ("224.0.0.1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("files.slack.com", "not an IP address"),
    ("8.8.8.8", None),
    ("100.128.0.1", None),
    ("172.32.0.1", None),
    ("2606:4700::1111", None),
    ("::ffff:8.8.8.8", None),
])
def test_address_check(address: str, refused: str | None) -> None:
    """Only public unicast addresses pass; IPv6 forms carrying an IPv4 address are judged by that address."""
    assert refusal(address) == refused


async def test_a_configured_origin_is_fetched_with_its_token(servers: tuple[Recorder, Recorder]) -> None:
    """The operator named this loopback origin: it gets the request and the token, and the body comes back."""
    allowed, _foreign = servers
    fetched = await fetcher_for(allowed).fetch(f"{allowed.origin}/files-pri/T1/a.txt", max_bytes=1024)
    assert fetched.data == b"the file"
    assert allowed.requests == [("/files-pri/T1/a.txt", f"Bearer {TOKEN}")]


async def test_a_foreign_host_gets_no_request_and_no_token(servers: tuple[Recorder, Recorder]) -> None:
    """A URL on another origin is refused before any connection; the refusal is logged with the host only."""
    allowed, foreign = servers
    with capture_logs() as logs, pytest.raises(AttachmentRefused) as refused:
        await fetcher_for(allowed).fetch(f"{foreign.origin}/metrics", max_bytes=1024)
    assert foreign.requests == [] and allowed.requests == []
    assert refused.value.host == "127.0.0.1"
    (line,) = [entry for entry in logs if entry["event"] == "attachment.refused"]
    assert line["host"] == "127.0.0.1" and "not one of the platform's file origins" in line["reason"]
    assert TOKEN not in repr(logs) and "/metrics" not in repr(logs)


async def test_a_redirect_to_a_foreign_host_is_refused(servers: tuple[Recorder, Recorder]) -> None:
    """The allowed host answers 302 to a foreign one: the foreign host is never contacted."""
    allowed, foreign = servers

    async def redirect(_request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"{foreign.origin}/steal")

    allowed.handler = redirect
    with pytest.raises(AttachmentRefused):
        await fetcher_for(allowed).fetch(f"{allowed.origin}/files-pri/x", max_bytes=1024)
    assert foreign.requests == []
    assert len(allowed.requests) == 1


async def test_a_redirect_within_the_origin_keeps_the_token_and_to_another_allowed_origin_drops_it(
    servers: tuple[Recorder, Recorder],
) -> None:
    """Same origin: the token follows. Another allowed origin: the file is fetched without the token."""
    first, second = servers

    async def hop(request: web.Request) -> web.StreamResponse:
        if request.path == "/a":
            raise web.HTTPFound("/b")
        if request.path == "/b":
            raise web.HTTPTemporaryRedirect(f"{second.origin}/c")
        return web.Response(body=b"done")

    first.handler = hop
    policy = FetchPolicy.build("slack", configured=[first.origin, second.origin],
                               headers={"Authorization": f"Bearer {TOKEN}"})
    fetched = await FileFetcher(policy).fetch(f"{first.origin}/a", max_bytes=1024)
    assert fetched.data == b"the file"
    assert first.requests == [("/a", f"Bearer {TOKEN}"), ("/b", f"Bearer {TOKEN}")]
    assert second.requests == [("/c", None)]


async def test_an_announced_oversize_body_is_refused_before_reading(servers: tuple[Recorder, Recorder]) -> None:
    """Content-Length over the cap: refused on the header."""
    allowed, _foreign = servers
    allowed.handler = lambda _request: _response(b"x" * 5000)
    with pytest.raises(AttachmentTooLarge):
        await fetcher_for(allowed).fetch(f"{allowed.origin}/big", max_bytes=1024)


async def _response(body: bytes) -> web.StreamResponse:
    return web.Response(body=body)


async def test_an_endless_body_is_cut_without_reading_it_all(servers: tuple[Recorder, Recorder]) -> None:
    """A chunked body with no length: the download stops at the cap and the server's writes then fail."""
    allowed, _foreign = servers
    chunk = b"y" * 65_536
    total_chunks = 2_000  # 131 MB if it were all read
    written: list[int] = []
    finished = asyncio.Event()

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for _ in range(total_chunks):
                await response.write(chunk)
                written.append(len(chunk))
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            finished.set()
        return response

    allowed.handler = endless
    with pytest.raises(AttachmentTooLarge):
        await fetcher_for(allowed).fetch(f"{allowed.origin}/stream", max_bytes=200_000)
    await asyncio.wait_for(finished.wait(), 30)
    assert len(written) < total_chunks


class PinnedResolver(AbstractResolver):
    """DNS for the test: every name resolves to `address` (as a hostile or hijacked record would)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        return [ResolveResult(hostname=host, host=self.address, port=port, family=socket.AF_INET, proto=0, flags=0)]

    async def close(self) -> None:
        return None


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "10.0.0.5", "100.64.1.1"])
async def test_a_platform_origin_resolving_to_a_private_address_is_refused(address: str) -> None:
    """files.slack.com is the platform's own origin, not the operator's: a private answer is never connected to."""
    resolver = PinnedResolver(address)
    policy = FetchPolicy.build("slack", builtin=["https://files.slack.com"], headers={"Authorization": "Bearer t"})
    with pytest.raises(AttachmentRefused) as refused:
        await FileFetcher(policy, resolver=resolver).fetch("https://files.slack.com/files-pri/x", max_bytes=1024)
    assert resolver.asked == ["files.slack.com"]
    assert refused.value.host == "files.slack.com" and "non-public" in refused.value.reason


@pytest.mark.parametrize("url", [
    "http://files.slack.com/files-pri/x",  # the platform's origin is https only
    "https://127.0.0.1/files-pri/x",
    "https://[::ffff:127.0.0.1]/x",
    "file:///etc/passwd",
    "/var/lib/telegram-bot-api/secret",
])
async def test_urls_off_the_platform_origins_are_refused(url: str) -> None:
    policy = FetchPolicy.build("slack", builtin=["https://files.slack.com"])
    with pytest.raises(AttachmentRefused):
        await FileFetcher(policy, resolver=PinnedResolver("8.8.8.8")).fetch(url, max_bytes=1024)


async def test_a_non_200_answer_is_a_plain_adapter_error(servers: tuple[Recorder, Recorder]) -> None:
    allowed, _foreign = servers

    async def missing(_request: web.Request) -> web.StreamResponse:
        raise web.HTTPNotFound()

    allowed.handler = missing
    with pytest.raises(AdapterError) as failed:
        await fetcher_for(allowed).fetch(f"{allowed.origin}/gone", max_bytes=1024)
    assert failed.value.status == 404 and not isinstance(failed.value, AttachmentRefused)


def test_a_platform_origin_must_be_https() -> None:
    with pytest.raises(ValueError, match="https"):
        FetchPolicy.build("slack", builtin=["http://files.slack.com"])
