"""`chorus run`: start the gateway daemon and keep it up until SIGTERM/SIGINT.

With no config it runs on embedded defaults: the web chat on
http://127.0.0.1:8080, SQLite under `home`, in-process coordination; without a
model it still starts, and the page and the log say which keys to set. On
SIGTERM/SIGINT it stops intake, gives turns in flight
`gateway.shutdown_grace_seconds`, leaves unfinished work in the journal and
the outbox for the next start, and exits 0.
"""
from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from gateway.config import ChorusConfig, load_config, resolve_config_path
from gateway.ops.logs import configure_logging

if TYPE_CHECKING:
    from aiohttp import web

    from gateway.app import Gateway

log = structlog.get_logger(__name__)
LISTENING_PORTS = 3  # web chat, admin (with the Slack events route), Telegram webhook


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("run", help="start the gateway daemon")
    parser.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    parser.set_defaults(handler=handle)


def warn_at_start(config: ChorusConfig) -> None:
    """The config problems that do not stop a start, logged as doctor reports them."""
    from gateway.build import MODEL_MISSING_TEXT
    from gateway.doctor import SUMMARY_WINDOW_FIX, summary_window_problem
    from gateway.platforms.web_login import EXPOSED_FIX, exposed_web_problem

    if not config.model.name:
        log.warning("model.not_configured", fix=MODEL_MISSING_TEXT)
    if (problem := summary_window_problem(config)) is not None:
        log.warning("config.summary_window_too_small", problem=problem, fix=SUMMARY_WINDOW_FIX)
    if (problem := exposed_web_problem(config.platforms.web)) is not None:
        log.warning("web.unauthenticated", problem=problem, fix=EXPOSED_FIX)


async def serve(config: ChorusConfig, *, config_path: Path | None = None) -> int:
    """Run until a stop signal; returns the exit code.

    The parts start in order and stop in reverse: the tracer provider (telemetry on: flushed last), the signal
    handlers, the admin side (attached to the gateway), the admin server (which also carries the platforms'
    webhooks, so it outlives the gateway's grace period), the gateway.
    """
    # Imported here: the offline subcommands share this CLI and must not pay for the daemon's libraries.
    from adapters.listeners import raise_descriptor_limit
    from adapters.web import WebAdapter
    from gateway.admin.app import token_fingerprint
    from gateway.admin.token import announcement, resolve_admin_token
    from gateway.admin.wiring import Operations, admin_server
    from gateway.build import build_gateway, listener_limits, replica_id
    from gateway.ops.heap import settle_heap
    from gateway.platforms.web_login import resolve_web_login, web_announcement
    from gateway.telemetry.setup import start_tracing

    warn_at_start(config)
    # Before the build (which reads the same token back): a token generated now is shown once, below.
    web_login = resolve_web_login(config.platforms.web, config.home_dir) if config.platforms.web.enabled else None
    raise_descriptor_limit(listener_limits(config), ports=LISTENING_PORTS)
    ops = Operations.create(config, path=config_path)
    node = replica_id()
    tracing = start_tracing(config.telemetry, instance_id=node)  # None while telemetry is off: no SDK loaded
    gateway = build_gateway(config, engine=ops.engine(), model_engine=ops.model_engine(), bus=ops.bus, windows=ops.windows,
                            node=node)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    extra = forwarded_routes(gateway, config)
    try:
        async with AsyncExitStack() as running:
            if tracing is not None:
                running.push_async_callback(tracing.stop)  # first in, last out: the gateway's last spans are flushed
            running.enter_context(signal_handlers(loop, stop))
            token = resolve_admin_token(config)
            app = ops.attach(gateway, token=token.value, extra_routes=extra)
            running.callback(ops.detach)
            admin_port = await running.enter_async_context(
                admin_server(app, config.admin.host, config.admin.port, listener_limits(config)))
            log.info("admin.started", url=f"http://{config.admin.host}:{admin_port}/healthz", auth=token.source,
                     auth_id=token_fingerprint(token.value) if token.value else None)
            print(announcement(token, f"http://{config.admin.host}:{admin_port}/dashboard"), file=sys.stderr, flush=True)
            await running.enter_async_context(gateway)
            ops.install_sighup(loop)  # undone by `ops.detach`
            web_adapter = gateway.parts.adapters.get("web")
            if isinstance(web_adapter, WebAdapter) and web_login is not None:
                url = f"http://{config.platforms.web.host}:{web_adapter.port}/"
                log.info("web.access", url=url, auth="token" if web_login.access.required else "none",
                         token_source=web_login.source)
                print(web_announcement(web_login, url), file=sys.stderr, flush=True)
            log.info("gateway.ready", adapters=sorted(gateway.parts.adapters), home=str(config.home_dir),
                     frozen_objects=settle_heap())
            await stop.wait()
            log.info("gateway.stopping", grace_seconds=config.gateway.shutdown_grace_seconds)
    except OSError as exc:
        log.error("gateway.start_failed", error=str(exc))
        print(f"chorus run: cannot start: {exc} (is another chorus or program using that port?)", file=sys.stderr)
        return 1
    return 0


def forwarded_routes(gateway: Gateway, config: ChorusConfig) -> list[web.RouteDef]:
    """The platforms' webhook routes on the admin listener, each handled by the adapter running now.

    An adapter restarted after a config change (a new signing secret, Slack enabled at runtime) answers on the
    route registered at start; the Slack events path is always registered (404 while Slack is off).
    """
    from aiohttp import web

    paths = {("POST", config.platforms.slack.path, "slack")}
    for name, adapter in gateway.parts.adapters.items():
        paths.update((route.method, route.path, name) for route in adapter.routes() if isinstance(route, web.RouteDef))

    def forward(name: str, method: str, path: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handler(request: web.Request) -> web.StreamResponse:
            adapter = gateway.parts.adapters.get(name)
            for route in adapter.routes() if adapter is not None else ():
                if isinstance(route, web.RouteDef) and (route.method, route.path) == (method, path):
                    return await route.handler(request)
            raise web.HTTPNotFound(text=f"{name} is not enabled")
        return handler

    return [web.route(method, path, forward(name, method, path)) for method, path, name in sorted(paths)]


@contextmanager
def signal_handlers(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> Iterator[None]:
    """SIGTERM/SIGINT set `stop`; SIGUSR1 dumps where each task waits (stderr)."""
    from gateway.ops.tasks import dump_tasks

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
    try:
        yield
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
            loop.remove_signal_handler(sig)


async def handle(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    configure_logging(level=config.logging.level, fmt=config.logging.format)
    return await serve(config, config_path=resolve_config_path(args.config))
