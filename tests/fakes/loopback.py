"""Serving a fake's aiohttp application on 127.0.0.1 on a free port."""
from __future__ import annotations

from typing import Any

from aiohttp import web


async def serve_loopback(app: web.Application, **runner_options: Any) -> tuple[web.AppRunner, int]:
    """Start `app` on 127.0.0.1:0; returns the runner (clean it up to stop) and the port it got."""
    runner = web.AppRunner(app, **runner_options)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
