"""Liveness and readiness endpoints: `/healthz` and `/readyz` on `admin.port`.

Owns `Readiness`, `health_routes(...)` (mountable into the ops engineer's
admin server) and `health_app(...)`. `/readyz` is 200 only when the session
store is open and answered its last ping, the coordinator is reachable (or embedded), the adapters
have started and are receiving (`AdapterWatch`: each adapter's `liveness()`, a transition logged once) and no
supervised background task is down (`detail` names it). Knows nothing of agents or platforms beyond those flags.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass

import structlog
from aiohttp import web

from adapters.base import Liveness, ReportsLiveness

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class StoreHealth:
    """The last ping of the session store: whether it answered, how fast, and failures so far."""

    ok: bool = True
    seconds: float = 0.0
    errors: int = 0


@dataclass(frozen=True, slots=True)
class Readiness:
    store_open: bool
    coordinator: bool
    adapters_started: bool
    background_tasks: bool = True  # False while a supervised task is down (`detail` says which and why)
    detail: str = ""
    coordination: str = ""  # the coordinator's real state: embedded | redis[…] | degraded: … | down: …

    @property
    def ready(self) -> bool:
        return self.store_open and self.coordinator and self.adapters_started and self.background_tasks


ReadinessProbe = Callable[[], Awaitable[Readiness]]


class AdapterWatch:
    """Reads each adapter's liveness; logs one line when one goes down (`adapter.down`) and one when it is back."""

    def __init__(self) -> None:
        self._down: set[str] = set()
        self.last: dict[str, Liveness] = {}

    def check(self, adapters: Mapping[str, object]) -> dict[str, Liveness]:
        """The liveness of every adapter that reports one, by platform name."""
        found: dict[str, Liveness] = {}
        for name, adapter in adapters.items():
            if not isinstance(adapter, ReportsLiveness):
                continue
            report = adapter.liveness()
            found[name] = report
            if not report.alive and name not in self._down:
                self._down.add(name)
                log.error("adapter.down", platform=name, detail=f"{name}: {report.detail}")
            elif report.alive and name in self._down:
                self._down.discard(name)
                log.warning("adapter.back", platform=name)
        self.last = found
        return found

    @staticmethod
    def reasons(found: Mapping[str, Liveness]) -> list[str]:
        """One phrase per adapter that is down, naming it (for `/readyz`'s detail)."""
        return [f"{name} is not receiving ({report.detail or 'down'})" for name, report in found.items() if not report.alive]


def health_routes(readiness: ReadinessProbe) -> list[web.RouteDef]:
    """Routes for `/healthz` (process alive) and `/readyz` (ready to serve)."""

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_request: web.Request) -> web.Response:
        report = await readiness()
        body = {"status": "ready" if report.ready else "not ready", **asdict(report)}
        return web.json_response(body, status=200 if report.ready else 503)

    return [web.get("/healthz", healthz), web.get("/readyz", readyz)]


def health_app(readiness: ReadinessProbe) -> web.Application:
    app = web.Application()
    app.add_routes(health_routes(readiness))
    return app


__all__ = ["AdapterWatch", "Readiness", "ReadinessProbe", "StoreHealth", "health_app", "health_routes"]
