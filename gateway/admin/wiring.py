"""Joining the admin side to a gateway: one object the daemon builds before `build_gateway` and attaches after.

Owns `Operations`: the `LiveConfig`, `EventLog`, `Metrics` and compression
`Recorder` of one process; `engine()` for `build_gateway(engine=...)`;
`attach(gateway)` (the turn runner follows the live limits, the log tap
feeds metrics and events, and the admin `web.Application` is returned);
and `install_sighup`. `chorus run` uses it as:

    ops = Operations.create(config, path=config_path)
    gateway = build_gateway(config, engine=ops.engine())
    await gateway.start()
    app = ops.attach(gateway, token=config.admin.token, extra_routes=webhook_routes)
    runner, port = await serve_admin(app, config.admin.host, config.admin.port)
    ops.install_sighup(loop)
    ...
    ops.detach(); await runner.cleanup()

No I/O until `attach`/`install_sighup`. Knows nothing of platforms.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from pydantic import SecretStr

from agent.context.engine import ContextEngine
from agent.memory import NotesStore
from gateway.admin.app import build_admin_app
from gateway.admin.events import EventLog
from gateway.admin.gateway_backend import GatewayBackend
from gateway.admin.memory_api import memory_routes
from gateway.admin.tap import LogTap, Recorder, install_log_tap
from gateway.admin.tuning import follow_turn_limits, live_engine_factory
from gateway.app import Gateway
from gateway.config import ChorusConfig
from gateway.live_config import LiveConfig, install_sighup
from gateway.metrics import Metrics


@dataclass(slots=True)
class Operations:
    """The operator side of one gateway process."""

    live: LiveConfig
    events: EventLog
    metrics: Metrics
    _undo: list[Callable[[], None]] = field(default_factory=list)

    @classmethod
    def create(cls, config: ChorusConfig, *, path: Path | None = None, metrics: Metrics | None = None) -> Operations:
        return cls(LiveConfig(config, path=path), EventLog(), metrics or Metrics())

    @property
    def recorder(self) -> Recorder:
        return Recorder(self.events, self.metrics)

    def engine(self) -> Callable[[], ContextEngine]:
        """The per-agent engine factory that follows the live config and records compressions."""
        return live_engine_factory(self.live, on_compression=self.recorder)

    def attach(
        self,
        gateway: Gateway,
        *,
        token: str | SecretStr | None,
        tap_logs: bool = True,
        extra_routes: Sequence[web.RouteDef] = (),
    ) -> web.Application:
        """Make `gateway` follow the live limits and return its admin application.

        Args:
            gateway: the gateway built with `engine=self.engine()`.
            token: `admin.token` (None: the operator API answers 403).
            tap_logs: feed metrics and the event log from the gateway's log lines.
            extra_routes: served beside the admin routes (platform webhooks).
        """
        if isinstance(token, SecretStr):
            token = token.get_secret_value()
        self._undo.append(follow_turn_limits(self.live, gateway.parts.runner))
        if tap_logs:
            self._undo.append(install_log_tap(LogTap(self.events, self.metrics)))
        backend = GatewayBackend(gateway, events=self.events, live=self.live)
        config = self.live.current()
        notes = memory_routes(NotesStore(config.home_dir, config.memory))
        return build_admin_app(
            backend, metrics=self.metrics, token=token, live=self.live, events=self.events,
            before_scrape=[lambda: backend.refresh_metrics(self.metrics)], extra_routes=[*extra_routes, *notes],
        )

    def install_sighup(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reload the config file on SIGHUP (no-op without a file)."""
        if self.live.path is not None:
            self._undo.append(install_sighup(loop, self.live, self.live.path))

    def detach(self) -> None:
        """Undo `attach` and `install_sighup` (idempotent)."""
        while self._undo:
            self._undo.pop()()


async def serve_admin(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve `app` on `host:port` (0: a free port); returns the runner (call `cleanup()`) and the bound port."""
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    bound = port
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            bound = int(address[1])
    return runner, bound


__all__ = ["Operations", "serve_admin"]
