"""A loopback HTTP server that records every request it receives (path and Authorization header).

Stands for a host that must never be contacted (a "foreign" host, the admin
port, a metadata address) or for an allowed file host whose answers a test
scripts through `handler`.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType

from aiohttp import web

from tests.fakes.loopback import serve_loopback

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Recorder:
    def __init__(self, handler: Handler | None = None) -> None:
        self.handler = handler
        self.requests: list[tuple[str, str | None]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Recorder:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._any)
        self._runner, self.port = await serve_loopback(app)
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _any(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path, request.headers.get("Authorization")))
        if self.handler is not None:
            return await self.handler(request)
        return web.Response(body=b"the file", content_type="application/octet-stream")
