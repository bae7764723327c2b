"""Bounded listeners: idle and slow connections are closed, the connection cap sheds, accept errors are tallied."""
from __future__ import annotations

import asyncio
import errno
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from adapters.listeners import ListenerLimits, raise_descriptor_limit, serve

EOF_WAIT_SECONDS = 30.0  # generous: the server closes after read_timeout_seconds; this only bounds a hang


async def _echo(request: web.Request) -> web.Response:
    return web.Response(text=f"got {len(await request.read())} bytes")


async def _listening(limits: ListenerLimits) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_get("/healthz", _ok)
    app.router.add_post("/echo", _echo)
    return await serve(app, "127.0.0.1", 0, limits)


async def _ok(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


@pytest.fixture
async def port() -> AsyncIterator[int]:
    runner, bound = await _listening(ListenerLimits(read_timeout_seconds=1.0, max_connections=5))
    yield bound
    await runner.cleanup()


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str = "/healthz") -> bytes:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    await writer.drain()
    return await asyncio.wait_for(reader.readuntil(b"ok"), EOF_WAIT_SECONDS)


async def test_an_idle_connection_is_closed_after_the_read_timeout(port: int) -> None:
    """Connected, nothing sent: the server closes it (EOF) after read_timeout_seconds."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert await asyncio.wait_for(reader.read(), EOF_WAIT_SECONDS) == b""
    writer.close()


async def test_headers_trickled_in_are_cut_off(port: int) -> None:
    """A request line and one header, then silence (slowloris): closed without an answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: test\r\n")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), EOF_WAIT_SECONDS) == b""
    writer.close()


async def test_a_body_that_never_arrives_gets_408(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\nonly ten b")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), EOF_WAIT_SECONDS)
    assert answer.startswith(b"HTTP/1.1 408")
    writer.close()


async def test_a_keep_alive_connection_idle_after_a_request_is_closed(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert b"200 OK" in await _get(reader, writer)
    assert await asyncio.wait_for(reader.read(), EOF_WAIT_SECONDS) == b""
    writer.close()


async def test_connections_beyond_the_cap_are_closed_at_once_and_the_others_still_served() -> None:
    """max_connections 5: the sixth is closed as soon as accepted (logged once), the five held ones still work."""
    runner, port = await _listening(ListenerLimits(read_timeout_seconds=60.0, max_connections=5))
    held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(5)]
    try:
        with capture_logs() as logs:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                shed = await asyncio.wait_for(reader.read(), EOF_WAIT_SECONDS)
            except ConnectionResetError:
                shed = b""
            writer.close()
        assert shed == b""
        assert [entry["event"] for entry in logs] == ["listener.connections_shed"]
        assert logs[0]["port"] == port and logs[0]["limit"] == 5
        for held_reader, held_writer in held:
            assert b"200 OK" in await _get(held_reader, held_writer)
    finally:
        for _reader, held_writer in held:
            held_writer.close()
        await runner.cleanup()


async def test_accept_errors_are_logged_once_per_interval_with_a_count(port: int) -> None:
    """EMFILE on accept reaches the loop's exception handler: one line, not a traceback per accept."""
    loop = asyncio.get_running_loop()
    with capture_logs() as logs:
        for _ in range(1000):
            loop.call_exception_handler({
                "message": "socket.accept() out of system resource",
                "exception": OSError(errno.EMFILE, "Too many open files"),
            })
    assert len(logs) == 1
    assert logs[0]["event"] == "listener.accept_failed" and logs[0]["error"] == "EMFILE" and logs[0]["count"] == 1


def test_the_descriptor_limit_is_raised_to_the_hard_limit_and_a_shortfall_is_named() -> None:
    """At start the soft limit goes up to the hard one; a cap the hard limit cannot hold is warned about."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard < 1100:
        pytest.skip(f"needs a finite hard descriptor limit of at least 1,100 (this one: {hard})")
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
        with capture_logs() as logs:
            raised, needed = raise_descriptor_limit(ListenerLimits(max_connections=1), ports=3)
        assert (raised, needed, logs) == (hard, 1003, [])
        with capture_logs() as logs:
            raise_descriptor_limit(ListenerLimits(max_connections=hard), ports=3)
        assert [(entry["event"], entry["nofile"], entry["needed"]) for entry in logs] == [
            ("listener.descriptors_low", hard, 3 * hard + 1000)]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_a_web_chat_websocket_outlives_the_read_timeout() -> None:
    """A websocket is a request in progress: an idle raw socket is closed after read_timeout_seconds, while a
    websocket opened before it still carries a message afterwards."""
    from adapters.base import InboundMessage
    from adapters.web import WebAdapter

    adapter = WebAdapter(host="127.0.0.1", port=0, limits=ListenerLimits(read_timeout_seconds=1.0))
    inbound: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(inbound)
    try:
        async with aiohttp.ClientSession() as http, http.ws_connect(
            f"http://127.0.0.1:{adapter.port}/ws?chat=c1"
        ) as ws:
            assert (await ws.receive_json())["type"] == "hello"
            reader, writer = await asyncio.open_connection("127.0.0.1", adapter.port)
            assert await asyncio.wait_for(reader.read(), EOF_WAIT_SECONDS) == b""  # the read timeout has passed
            writer.close()
            await ws.send_json({"type": "message", "text": "still here?"})
            message = await asyncio.wait_for(inbound.get(), EOF_WAIT_SECONDS)
        assert (message.chat_id, message.text) == ("c1", "still here?")
    finally:
        await adapter.stop()
