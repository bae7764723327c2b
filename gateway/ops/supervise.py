"""Supervised background tasks: one that dies is logged, reported as down, and restarted with backoff.

Owns `Supervisor` and `TaskDown`. A task that raises (or returns, which a
forever-loop must not) logs one `task.died` error line, is reported by `down`
until it runs again (the gateway's `/readyz` turns red with the reason), and
is restarted after a delay that doubles from `initial_backoff` up to
`max_backoff`; a task that ran for `stable_after` seconds before dying starts
again from the initial delay. Knows nothing of what the tasks do.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

log = structlog.get_logger(__name__)

INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 30.0
STABLE_AFTER = 60.0


@dataclass(frozen=True, slots=True)
class TaskDown:
    """A background task that died and waits for its restart."""

    task: str
    error: str  # the exception type name
    at: float
    restart_in: float
    restarts: int

    @property
    def reason(self) -> str:
        return f"background task {self.task} died ({self.error}); restart {self.restarts + 1} in {self.restart_in:g} s"


class Supervisor:
    """Runs named coroutines forever, restarting each after a failure.

    Args:
        initial_backoff: seconds before the first restart.
        max_backoff: the cap of the doubling delay.
        stable_after: a task alive this long before dying restarts from `initial_backoff` again.
        clock: a monotonic clock in seconds.
        sleep: waits out the backoff (tests pass one they control).
        on_death: told the name and error type of each task that dies (the gateway publishes it as an event).
    """

    def __init__(
        self,
        *,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        stable_after: float = STABLE_AFTER,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_death: Callable[[str, str], None] | None = None,
    ) -> None:
        self._on_death = on_death
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.stable_after = stable_after
        self._clock = clock
        self._sleep = sleep
        self._tasks: list[asyncio.Task[None]] = []
        self._down: dict[str, TaskDown] = {}
        self.restarts: dict[str, int] = {}

    @property
    def down(self) -> list[TaskDown]:
        """The tasks not running right now (died, waiting for their restart)."""
        return list(self._down.values())

    def start(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        """Run `run()` as task `name`, again after each failure, until `stop`."""
        self._tasks.append(asyncio.create_task(self._keep(name, run), name=name))

    async def stop(self) -> None:
        """Cancel every task and wait for them (repeatable)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._down.clear()

    async def _keep(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        delay = self.initial_backoff
        restarts = 0
        while True:
            started = self._clock()
            failure: Exception | None = None
            try:
                await run()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the supervisor's whole job is to survive this
                failure = exc
            if self._clock() - started >= self.stable_after:
                delay = self.initial_backoff
            error = type(failure).__name__ if failure is not None else "returned"
            log.error("task.died", task=name, error=error, restart_in=delay, exc_info=failure)
            if self._on_death is not None:
                self._on_death(name, error)
            self._down[name] = TaskDown(task=name, error=error, at=time.time(), restart_in=delay, restarts=restarts)
            await self._sleep(delay)  # the restart backoff
            restarts += 1
            self.restarts[name] = restarts
            del self._down[name]
            log.info("task.restarted", task=name, restarts=restarts)
            delay = min(delay * 2, self.max_backoff)

__all__ = ["Supervisor", "TaskDown"]
