"""Bounded listeners: idle and slow connections are closed, the connection cap sheds, accept errors are tallied."""
from __future__ import annotations

import asyncio
import errno
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from structlog.testing import capture_logs

from adapters.listeners import ListenerLimits, serve

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
