"""The web chat's login and Origin checks on a real socket: no chat without the token, no foreign page driving it."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from adapters.base import InboundMessage
from adapters.web import SESSION_COOKIE, WebAccess, WebAdapter

TOKEN = "s3cret-web-token"
FOREIGN = "https://evil.example"


@pytest.fixture
async def guarded() -> AsyncIterator[tuple[WebAdapter, asyncio.Queue[InboundMessage]]]:
    web = WebAdapter(port=0, access=WebAccess(TOKEN, ("https://chat.example.com",)))
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await web.start(queue)
    yield web, queue
    await web.stop()


async def _handshake_status(url: str, headers: dict[str, str] | None = None) -> int:
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, headers=headers or {}) as ws:
                await ws.receive_json()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


async def test_without_the_token_a_known_chat_cannot_be_joined(
    guarded: tuple[WebAdapter, asyncio.Queue[InboundMessage]],
) -> None:
    """Knowing a chat id is not enough: no websocket, no message reaches the gateway, wrong tokens too."""
    web, queue = guarded
    url = f"http://127.0.0.1:{web.port}/ws?chat=victim-chat"
    assert await _handshake_status(url) == 401
    assert await _handshake_status(url, {"Authorization": "Bearer wrong"}) == 401
    assert await _handshake_status(f"{url}&token={TOKEN}") == 401  # a token in the URL is not read
    assert await _handshake_status(url, {"Cookie": f"{SESSION_COOKIE}={TOKEN}"}) == 401  # the cookie is not the token
    assert web.connected("victim-chat") == 0 and queue.empty()


async def test_a_bearer_token_opens_the_chat(guarded: tuple[WebAdapter, asyncio.Queue[InboundMessage]]) -> None:
    """A non-browser client sends Authorization: Bearer; its messages reach the queue."""
    web, queue = guarded
    async with aiohttp.ClientSession() as session, session.ws_connect(
        f"http://127.0.0.1:{web.port}/ws?chat=mine", headers={"Authorization": f"Bearer {TOKEN}"},
    ) as ws:
        assert await ws.receive_json() == {"type": "hello", "chat_id": "mine", "upload_limit": 10_000_000, "transcript": False}
        await ws.send_json({"type": "message", "text": "hi", "client_id": "c1"})
        message = await asyncio.wait_for(queue.get(), 5)
    assert (message.chat_id, message.text) == ("mine", "hi")


async def test_the_page_signs_in_with_a_post_and_an_httponly_cookie(
    guarded: tuple[WebAdapter, asyncio.Queue[InboundMessage]],
) -> None:
    """POST /login sets a SameSite=Strict HttpOnly cookie (not the token); the page's websocket then connects."""
    web, _ = guarded
    base = f"http://127.0.0.1:{web.port}"
    own = {"Origin": base}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:  # unsafe: an IP host
        async with session.get(f"{base}/login") as state:
            assert await state.json() == {"required": True, "signed_in": False}
        async with session.post(f"{base}/login", json={"token": "guess"}, headers=own) as wrong:
            assert wrong.status == 401 and SESSION_COOKIE not in wrong.cookies
        async with session.post(f"{base}/login", json={"token": TOKEN}, headers=own) as right:
            assert right.status == 200
            cookie = right.cookies[SESSION_COOKIE]
        assert cookie["httponly"] and cookie["samesite"] == "Strict" and TOKEN not in cookie.value
        async with session.get(f"{base}/login") as state:
            assert await state.json() == {"required": True, "signed_in": True}
        async with session.ws_connect(f"{base}/ws?chat=page", headers=own) as ws:
            assert (await ws.receive_json())["type"] == "hello"
        async with session.post(f"{base}/logout", headers=own) as out:
            assert out.status == 200
        async with session.get(f"{base}/login") as state:
            assert await state.json() == {"required": True, "signed_in": False}


async def test_a_foreign_origin_is_refused_even_with_the_token(
    guarded: tuple[WebAdapter, asyncio.Queue[InboundMessage]],
) -> None:
    """A page on another site (its Origin) cannot open the websocket or sign in; allowed_origins can."""
    web, _ = guarded
    url = f"http://127.0.0.1:{web.port}/ws?chat=x"
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert await _handshake_status(url, {**bearer, "Origin": FOREIGN}) == 403
    assert await _handshake_status(url, {**bearer, "Origin": "null"}) == 403
    assert await _handshake_status(url, {**bearer, "Origin": f"http://127.0.0.1:{web.port}"}) == 101
    assert await _handshake_status(url, {**bearer, "Origin": "https://chat.example.com"}) == 101
    assert await _handshake_status(url, {**bearer, "Origin": "http://chat.example.com"}) == 403  # scheme counts
    async with aiohttp.ClientSession() as session, session.post(
        f"http://127.0.0.1:{web.port}/login", json={"token": TOKEN}, headers={"Origin": FOREIGN},
    ) as response:
        assert response.status == 403 and SESSION_COOKIE not in response.cookies


async def test_without_a_token_only_the_loopback_page_may_drive_the_chat() -> None:
    """No login on loopback: the page's own origin works, a rebound DNS name (Host = Origin = evil) does not."""
    web = WebAdapter(port=0)
    await web.start(asyncio.Queue())
    try:
        url = f"http://127.0.0.1:{web.port}/ws?chat=local"
        assert await _handshake_status(url) == 101  # a local script: no Origin
        assert await _handshake_status(url, {"Origin": f"http://127.0.0.1:{web.port}"}) == 101
        assert await _handshake_status(url, {"Origin": f"http://localhost:{web.port}",
                                             "Host": f"localhost:{web.port}"}) == 101
        rebound = f"evil.example:{web.port}"
        assert await _handshake_status(url, {"Origin": f"http://{rebound}", "Host": rebound}) == 403
        assert await _handshake_status(url, {"Origin": FOREIGN}) == 403
    finally:
        await web.stop()
