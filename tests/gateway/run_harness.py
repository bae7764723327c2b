"""The gateway built exactly as `chorus run` builds it: `Operations` (live tuning) + `build_gateway` + `attach`."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from aiohttp import web

from adapters.base import PlatformAdapter
from gateway.admin.wiring import Operations
from gateway.app import Gateway
from gateway.build import build_gateway
from gateway.config import ChorusConfig
from gateway.ops.health import health_routes
from tests.fakes.loopback import serve_loopback


@asynccontextmanager
async def run_like_chorus(
    config: ChorusConfig, *, adapters: Mapping[str, PlatformAdapter] | None = None, **parts: Any
) -> AsyncIterator[tuple[Gateway, Operations]]:
    """`gateway/cli/run.py:serve` without signals and the admin socket: the same construction."""
    ops = Operations.create(config)
    gateway = build_gateway(config, engine=ops.engine(), windows=ops.windows, adapters=adapters, **parts)
    await gateway.start()
    ops.attach(gateway, token=None, tap_logs=False)
    try:
        yield gateway, ops
    finally:
        await gateway.stop()
        ops.detach()


@asynccontextmanager
async def serving_readyz(gateway: Gateway) -> AsyncIterator[str]:
    """`/healthz` and `/readyz` served as the admin server serves them, on a loopback port; yields /readyz's URL."""
    app = web.Application()
    app.add_routes(health_routes(gateway.readiness))
    runner, port = await serve_loopback(app)
    try:
        yield f"http://127.0.0.1:{port}/readyz"
    finally:
        await runner.cleanup()


T = TypeVar("T")


async def until(check: Callable[[], Awaitable[T | None]], *, timeout: float = 60.0) -> T:
    """Call `check` until it returns something other than None: waiting on a condition an HTTP probe shows."""
    async with asyncio.timeout(timeout):
        while True:
            found = await check()
            if found is not None:
                return found
            await asyncio.sleep(0.05)  # the probe's interval, not synchronisation of a known event
