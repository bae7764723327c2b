"""Every HTTP listener of the process (web chat, admin + Slack events, Telegram webhook), bounded.

Owns `ListenerLimits`, `serve` and `raise_descriptor_limit` (called once by
`chorus run`: the soft descriptor limit up to the hard one, a warning when the
caps still do not fit). A listener served here:

- closes a connection that sends no complete request within
  `read_timeout_seconds` (nothing at all, or headers trickled in slowly), and
  an idle keep-alive connection after the same time (aiohttp's
  `keepalive_timeout`, armed from the moment a connection is accepted);
- gives a request body the same time to arrive (`_body_deadline`: 408 after);
- holds at most `max_connections` connections: one more is closed the moment
  it is accepted (`_Gate`), not queued, so descriptors never run out under a
  flood of idle sockets and health checks keep being answered;
- reports what it shed, and the loop's accept errors (EMFILE…), once per
  `REPORT_INTERVAL_SECONDS` with a count (`_Tally`), never a traceback per
  accept.

A websocket (the web chat) is a request in progress, so these timeouts do not
end it; its own heartbeat does. Knows nothing of the gateway.
"""
from __future__ import annotations

import asyncio
import errno
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

log = structlog.get_logger(__name__)

REPORT_INTERVAL_SECONDS = 10.0
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_HANDLER_MARK = "chorus_accept_errors"
DESCRIPTOR_RESERVE = 1000  # database, Redis, model, platform and MCP connections, files


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    """`gateway.read_timeout_seconds` and `gateway.max_connections` (per listening port)."""

    read_timeout_seconds: float = 30.0
    max_connections: int = 2000


class _Tally:
    """Counts one kind of event; logs the first at once, then one line per interval with how many followed."""

    def __init__(self, event: str, *, interval: float = REPORT_INTERVAL_SECONDS, **fields: object) -> None:
        self._event = event
        self._interval = interval
        self.fields = fields
        self._pending = 0
        self._timer: asyncio.TimerHandle | None = None

    def note(self, **detail: object) -> None:
        if self._timer is None:
            log.warning(self._event, count=1, **self.fields, **detail)
            self._timer = asyncio.get_running_loop().call_later(self._interval, self._flush)
            return
        self._pending += 1

    def _flush(self) -> None:
        count, self._pending = self._pending, 0
        if count == 0:
            self._timer = None
            return
        log.warning(self._event, count=count, window_seconds=self._interval, **self.fields)
        self._timer = asyncio.get_running_loop().call_later(self._interval, self._flush)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _Counted(asyncio.Protocol):
    """Passes everything to aiohttp's protocol; gives the slot back when the connection ends."""

    def __init__(self, inner: asyncio.Protocol, gate: _Gate) -> None:
        self._inner = inner
        self._gate = gate

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._gate.open -= 1
        self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


class _Shed(asyncio.Protocol):
    """A connection over the cap: closed (reset) as soon as it is accepted."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.abort()  # type: ignore[attr-defined]


class _Gate:
    """At most `limit` open connections; the protocol factory aiohttp's server is wrapped in."""

    def __init__(self, inner: Callable[[], asyncio.Protocol], limit: int, shed: _Tally) -> None:
        self._inner = inner
        self._limit = limit
        self._shed = shed
        self.open = 0

    def __call__(self) -> asyncio.Protocol:
        if self.open >= self._limit:
            self._shed.note()
            return _Shed()
        self.open += 1
        return _Counted(self._inner(), self)


class _GatedSite(web.BaseSite):
    """A TCP site whose connections pass through a `_Gate`."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, limits: ListenerLimits) -> None:
        super().__init__(runner)
        self._host = host
        self._port = port
        self._limits = limits
        self.gate: _Gate | None = None
        self._shed = _Tally("listener.connections_shed", host=host, port=port, limit=limits.max_connections)

    @property
    def name(self) -> str:
        return f"http://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        if server is None:
            raise RuntimeError("call runner.setup() before starting a site")
        self.gate = _Gate(server, self._limits.max_connections, self._shed)
        self._server = await asyncio.get_running_loop().create_server(self.gate, self._host, self._port)
        if self._server.sockets:
            self._port = int(self._server.sockets[0].getsockname()[1])
            self._shed.fields["port"] = self._port

    async def stop(self) -> None:
        self._shed.close()
        await super().stop()

    @property
    def port(self) -> int:
        return self._port


def _body_deadline(seconds: float) -> Callable[..., Awaitable[web.StreamResponse]]:
    @web.middleware
    async def deadline(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                       ) -> web.StreamResponse:
        if request.body_exists:
            try:
                async with asyncio.timeout(seconds):
                    await request.read()  # kept by aiohttp: the handler's text()/json() reads it again
            except TimeoutError:
                raise web.HTTPRequestTimeout(text="the request body did not arrive in time") from None
        return await handler(request)

    return deadline


def _accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Route the loop's out-of-resource errors (EMFILE on accept…) to one counted line per interval."""
    if getattr(loop, _HANDLER_MARK, None) is not None:
        return
    previous = loop.get_exception_handler()
    tally = _Tally("listener.accept_failed")

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
            tally.note(error=errno.errorcode.get(exc.errno or 0, str(exc.errno)), message=context.get("message"))
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    setattr(loop, _HANDLER_MARK, tally)


def raise_descriptor_limit(limits: ListenerLimits, *, ports: int) -> tuple[int, int]:
    """Raise this process's soft descriptor limit to its hard limit (as a supervisor's LimitNOFILE would);
    warn when it is still below what `ports` listeners at `max_connections` need. Returns (soft, needed)."""
    import resource  # POSIX only, like the daemon

    needed = ports * limits.max_connections + DESCRIPTOR_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    if soft < needed:
        log.warning("listener.descriptors_low", nofile=soft, needed=needed,
                    fix=f"raise the descriptor limit (LimitNOFILE={needed} or more, ulimit -n) or lower "
                        "gateway.max_connections")
    return soft, needed


async def serve(
    app: web.Application, host: str, port: int, limits: ListenerLimits, *, access_log: bool = True
) -> tuple[web.AppRunner, int]:
    """Serve `app` on `host:port` (0: a free port) within `limits`; returns the runner and the bound port.

    Raises:
        OSError: the address cannot be bound (the runner is cleaned up first).
    """
    _accept_errors(asyncio.get_running_loop())
    app.middlewares.append(_body_deadline(limits.read_timeout_seconds))
    options: dict[str, Any] = {} if access_log else {"access_log": None}
    runner = web.AppRunner(app, handle_signals=False, keepalive_timeout=limits.read_timeout_seconds, **options)
    await runner.setup()
    site = _GatedSite(runner, host, port, limits)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    return runner, site.port


__all__ = ["ListenerLimits", "raise_descriptor_limit", "serve"]
