"""Busy handling per session: jobs of one session run one at a time, in order, never dropped.

Owns `Job`, `SessionLanes` and `SubmitResult`. A lane exists while its session
has work; `queue` mode runs jobs in arrival order, `interrupt` mode cancels
the running turn when a new message arrives and then runs the new one.
`stop` cancels the running job (for `/stop`). Knows nothing of what a job does.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import structlog

from adapters.base import InboundMessage
from gateway.commands.spec import Command
from gateway.intake.routing import Route

log = structlog.get_logger(__name__)

JobKind: TypeAlias = Literal["turn", "record", "command"]  # command: a queued one (/compress, /retry)
BusyMode: TypeAlias = Literal["queue", "interrupt"]


@dataclass(frozen=True, slots=True)
class Job:
    kind: JobKind
    message: InboundMessage
    route: Route
    command: Command | None = None
    journal_entry: str | None = None
    accepted_at: float = 0.0
    resumed: bool = False  # re-run after its process died or stopped: its turn may be in the history already


@dataclass(frozen=True, slots=True)
class SubmitResult:
    busy: bool  # something was running or waiting before this job
    position: int  # answering jobs ahead of this one (the running one included)
    interrupted: Job | None = None  # the running turn this job cancelled
    reason: str = ""


@dataclass(slots=True)
class _Lane:
    jobs: deque[Job] = field(default_factory=deque)
    current: asyncio.Task[None] | None = None  # the job's task, from its creation until it is done
    current_job: Job | None = None
    running: bool = False  # the current job has begun: only then do `stop` and `interrupt` cancel it


# The cancel message of a turn stopped from the chat (/stop, /new, an interrupting message), not by a shutdown:
# the turn then finishes its streaming draft (a shutdown leaves it, for the resumed turn to replace).
STOPPED = "stopped from the chat"


class SessionLanes:
    """One lane of jobs per session key.

    Args:
        run: executes one job (the lane awaits it before the next).
        mode: `queue` or `interrupt`.
    """

    def __init__(self, run: Callable[[Job], Coroutine[Any, Any, None]], *, mode: BusyMode = "queue") -> None:
        self._run = run
        self._mode = mode
        self._lanes: dict[str, _Lane] = {}
        self._closed = False
        self._idle = asyncio.Event()
        self._idle.set()

    def busy(self, key: str) -> bool:
        lane = self._lanes.get(key)
        return lane is not None and lane.running

    def queued(self, key: str) -> int:
        lane = self._lanes.get(key)
        return len(lane.jobs) if lane is not None else 0

    @property
    def active_sessions(self) -> int:
        return len(self._lanes)

    def submit(self, job: Job) -> SubmitResult:
        """Add a job to its session's lane; an idle lane starts it at once (its own task)."""
        if self._closed:
            raise RuntimeError("SessionLanes is closed; the gateway is shutting down")
        lane = self._lanes.setdefault(job.route.key, _Lane())
        # Context-only records are quick and invisible: they do not make a session "busy" for the user.
        ahead = sum(1 for queued in lane.jobs if queued.kind != "record")
        if lane.current_job is not None and lane.current_job.kind != "record":
            ahead += 1
        interrupted: Job | None = None
        if self._mode == "interrupt" and job.kind == "turn" and lane.running and lane.current is not None:
            if lane.current_job is not None and lane.current_job.kind == "turn":
                lane.current.cancel(STOPPED)
                interrupted = lane.current_job
        lane.jobs.append(job)
        if lane.current is None:
            self._idle.clear()
            self._start_next(job.route.key, lane)
        reason = "interrupted the running turn" if interrupted else ("queued" if ahead else "started")
        return SubmitResult(busy=ahead > 0, position=ahead, interrupted=interrupted, reason=reason)

    def stop(self, key: str) -> Job | None:
        """Cancel the running job of `key` (queued ones still run); returns it, or None if nothing ran."""
        lane = self._lanes.get(key)
        if lane is None or lane.current is None or not lane.running:
            return None
        lane.current.cancel(STOPPED)
        return lane.current_job

    # One task per job, chained by its done callback: no lane worker task waiting on each job
    # (a task, a wait and two loop turns fewer per message).
    def _start_next(self, key: str, lane: _Lane) -> None:
        job = lane.jobs.popleft()
        lane.current_job, lane.running = job, False
        lane.current = asyncio.create_task(self._job(lane, job), name=f"job:{job.kind}:{key}")
        lane.current.add_done_callback(functools.partial(self._finished, key, lane))

    async def _job(self, lane: _Lane, job: Job) -> None:
        lane.running = True
        await self._run(job)

    def _finished(self, key: str, lane: _Lane, task: asyncio.Task[None]) -> None:
        lane.current, lane.current_job, lane.running = None, None, False
        if not task.cancelled() and task.exception() is not None:
            log.error("lane.job_failed", session_key=key, error=type(task.exception()).__name__)
        if lane.jobs:
            self._start_next(key, lane)
            return
        if self._lanes.get(key) is lane:
            del self._lanes[key]
        if not self._lanes:
            self._idle.set()

    async def drain(self, timeout: float) -> list[Job]:
        """Stop accepting; wait up to `timeout` for running and queued jobs, then cancel the rest.

        Returns:
            The jobs that did not finish (running ones cancelled, queued ones never started).
        """
        self._closed = True
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)
        unfinished: list[Job] = []
        for lane in list(self._lanes.values()):
            unfinished.extend(lane.jobs)
            lane.jobs.clear()
            if lane.current_job is not None:
                unfinished.append(lane.current_job)
            if lane.current is not None:
                lane.current.cancel()
        running = [lane.current for lane in self._lanes.values() if lane.current is not None]
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        self._lanes.clear()
        return unfinished


__all__ = ["STOPPED", "BusyMode", "Job", "JobKind", "SessionLanes", "SubmitResult"]
