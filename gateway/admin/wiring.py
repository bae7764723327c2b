"""Joining the admin side to a gateway: one object the daemon builds before `build_gateway` and attaches after.

Owns `Operations`: the `LiveConfig`, `EventLog`, `Metrics` and compression
`Recorder` of one process; `engine()` for `build_gateway(engine=...)`;
`attach(gateway)` (the turn runner follows the live limits, the log tap
feeds metrics and events, the config audit and the refused senders are
recorded from the bus, and the admin `web.Application` is returned, whose
`cleanup_ctx` listens to the other replicas' config changes while it runs);
and `install_sighup`. `chorus run` uses it as:

    ops = Operations.create(config, path=config_path)
    gateway = build_gateway(config, engine=ops.engine(), bus=ops.bus, windows=ops.windows)
    app = ops.attach(gateway, token=config.admin.token, extra_routes=webhook_routes)
    async with admin_server(app, config.admin.host, config.admin.port) as port, gateway:
        ops.install_sighup(loop)
        ...
    ops.detach()

No I/O until `attach`/`install_sighup`. Knows nothing of platforms.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from aiohttp import web
from pydantic import SecretStr

from adapters.listeners import ListenerLimits, serve
from agent.context.engine import ContextEngine
from agent.model_windows import ModelWindows
from gateway.admin.app import build_admin_app
from gateway.admin.audit import AuditRecorder, AuditStore, MemoryAudit, RedisAudit
from gateway.admin.config_schema import secret_keys
from gateway.admin.events import EventLog
from gateway.admin.gateway_backend import GatewayBackend
from gateway.admin.limits_api import limits_routes
from gateway.admin.memory_api import memory_routes
from gateway.admin.refused import MemoryRefused, RedisRefused, RefusedRecorder, RefusedStore
from gateway.admin.schedules_api import schedules_routes
from gateway.admin.shared_records import RedisHandle
from gateway.admin.tap import EventObserver, LogTap, Recorder, install_log_tap
from gateway.admin.tuning import following_summarizer, live_engine_factory
from gateway.app import Gateway
from gateway.build import model_windows
from gateway.chats.policy import ModelChoice
from gateway.config import ChorusConfig
from gateway.coord.coordinator import default_node
from gateway.live_parts import follow
from gateway.ops.config_sync import RedisConfigSync
from gateway.ops.events import EventBus
from gateway.ops.live_config import LiveConfig, install_sighup
from gateway.ops.metrics import Metrics


@dataclass(slots=True)
class Operations:
    """The operator side of one gateway process."""

    live: LiveConfig
    events: EventLog
    metrics: Metrics
    windows: ModelWindows  # learned model windows, shared by the engines and the model chain
    _undo: list[Callable[[], None]] = field(default_factory=list)

    @classmethod
    def create(cls, config: ChorusConfig, *, path: Path | None = None, metrics: Metrics | None = None) -> Operations:
        return cls(LiveConfig(config, path=path, bus=EventBus()), EventLog(), metrics or Metrics(), model_windows(config))

    @property
    def bus(self) -> EventBus:
        """The event bus to build the gateway with (`build_gateway(..., bus=ops.bus)`): config changes go here too."""
        return self.live.bus

    @property
    def recorder(self) -> Recorder:
        return Recorder(self.events, self.metrics)

    def engine(self) -> Callable[[], ContextEngine]:
        """The per-agent engine factory that follows the live config and records compressions."""
        return live_engine_factory(self.live, on_compression=self.recorder, windows=self.windows)

    def model_engine(self) -> Callable[[ModelChoice], ContextEngine]:
        """The engine factory for a chat on another model (`build_gateway(model_engine=...)`)."""
        summarizer = following_summarizer(self.live.current())  # shared, and rebuilt when model.* changes

        def build(choice: ModelChoice) -> ContextEngine:
            return live_engine_factory(self.live, summarizers=summarizer, on_compression=self.recorder, model=choice)()

        return build

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
            tap_logs: feed the dashboard's notice and error list from the gateway's log lines (metrics come from events).
            extra_routes: served beside the admin routes (platform webhooks).
        """
        if isinstance(token, SecretStr):
            token = token.get_secret_value()
        # Every live key reaches the part that uses it (gateway/live_parts.py: persona, access lists, models, adapters…).
        self._undo.append(follow(self.live, gateway))
        observer = EventObserver(self.events, self.metrics)
        self._undo.append(self.live.bus.subscribe(observer))
        if gateway.parts.bus is not self.live.bus:
            self._undo.append(gateway.parts.bus.subscribe(observer))
        if tap_logs:
            self._undo.append(install_log_tap(LogTap(self.events)))
        backend = GatewayBackend(gateway, events=self.events, live=self.live)
        sync = self._config_sync()
        audit, refused, shared = self._records()
        secrets = secret_keys(self.live.current())
        self._undo.append(self.live.bus.subscribe(AuditRecorder(audit, replica=default_node(), secret=secrets.__contains__)))
        self._undo.append(gateway.parts.bus.subscribe(RefusedRecorder(refused)))
        hub = gateway.parts.mcp
        notes = memory_routes(gateway.parts.notes) if gateway.parts.notes is not None else []
        if gateway.parts.schedules is not None:
            notes = [*notes, *schedules_routes(gateway.parts.schedules)]
        limits = gateway.parts.limits
        if limits is not None:
            notes = [*notes, *limits_routes(limits, self.live.current)]
            self._undo.append(self.live.subscribe(lambda _old, _new: limits.warn_unknown_prices()))
        app = build_admin_app(
            backend, metrics=self.metrics, token=token, live=self.live, events=self.events,
            before_scrape=[lambda: backend.refresh_metrics(self.metrics)], extra_routes=[*extra_routes, *notes],
            tools=hub.statuses if hub is not None and len(hub) else None,
            deadletters=gateway.parts.deadletters, config_sync=sync, audit=audit, refused=refused,
        )
        if sync is not None:
            app.cleanup_ctx.append(partial(_listening, sync))
        if shared is not None:
            app.on_cleanup.append(partial(_close_records, shared, audit, refused))
        return app

    def _records(self) -> tuple[AuditStore, RefusedStore, RedisHandle | None]:
        """The config audit and the refused senders: shared in Redis with `redis.url`, else this process's."""
        redis = self.live.current().redis
        if not redis.url:
            return MemoryAudit(), MemoryRefused(), None
        handle = RedisHandle(redis.url)
        return RedisAudit(handle, redis.key_prefix), RedisRefused(handle, redis.key_prefix), handle

    def _config_sync(self) -> RedisConfigSync | None:
        """With `redis.url`, PATCH and reload reach the other replicas (listening while the admin app runs)."""
        redis = self.live.current().redis
        if not redis.url:
            return None
        return RedisConfigSync(self.live, redis.url, prefix=redis.key_prefix)

    def install_sighup(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reload the config file on SIGHUP (no-op without a file)."""
        if self.live.path is not None:
            self._undo.append(install_sighup(loop, self.live, self.live.path))

    def detach(self) -> None:
        """Undo `attach` and `install_sighup` (idempotent)."""
        while self._undo:
            self._undo.pop()()


async def _close_records(shared: RedisHandle, audit: AuditStore, refused: RefusedStore, _app: web.Application) -> None:
    """At the admin app's cleanup: let the record writes in flight land, then close their Redis client."""
    for store in (audit, refused):
        if isinstance(store, (RedisAudit, RedisRefused)):
            await store.writes.drain()
    await shared.close()


async def _listening(sync: RedisConfigSync, _app: web.Application) -> AsyncIterator[None]:
    """The admin app's `cleanup_ctx`: the other replicas' config changes are heard while it runs."""
    sync.start()
    try:
        yield
    finally:
        sync.stop()


async def serve_admin(
    app: web.Application, host: str, port: int, limits: ListenerLimits | None = None
) -> tuple[web.AppRunner, int]:
    """Serve `app` on `host:port` (0: a free port) within `limits` (`gateway.read_timeout_seconds`,
    `gateway.max_connections`); returns the runner (call `cleanup()`) and the bound port."""
    return await serve(app, host, port, limits or ListenerLimits(), access_log=False)


@asynccontextmanager
async def admin_server(
    app: web.Application, host: str, port: int, limits: ListenerLimits | None = None
) -> AsyncIterator[int]:
    """`serve_admin` as one part of a lifecycle: yields the bound port, cleans the runner up at exit."""
    runner, bound = await serve_admin(app, host, port, limits)
    try:
        yield bound
    finally:
        await runner.cleanup()


__all__ = ["Operations", "admin_server", "serve_admin"]
