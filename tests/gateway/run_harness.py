"""The gateway built exactly as `chorus run` builds it: `Operations` (live tuning) + `build_gateway` + `attach`."""
from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from adapters.base import PlatformAdapter
from gateway.admin.wiring import Operations
from gateway.app import Gateway
from gateway.build import build_gateway
from gateway.config import ChorusConfig


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
