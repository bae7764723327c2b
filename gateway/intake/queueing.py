"""Busy handling per session: jobs of one session run one at a time, in order, never dropped.

Owns `Job`, `SessionLanes` and `SubmitResult`. A lane exists while its session
has work; `queue` mode runs jobs in arrival order, `interrupt` mode cancels
the running turn when a new message arrives and then runs the new one,
`collect` holds a turn until its sender pauses for `collect_seconds` (their
messages meanwhile join it), `steer` lets the running turn take queued
messages at a tool-result boundary (`take_steerable`); see `busy.py`.
`stop` cancels the running job (for `/stop`). Knows nothing of what a job does.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

import structlog

from adapters.base import InboundMessage
from gateway.commands.spec import Command
from gateway.intake.busy import BusyMode, BusyRules, Cancellable, LoopTimers, Timers
from gateway.intake.routing import Route

log = structlog.get_logger(__name__)

JobKind: TypeAlias = Literal["turn", "record", "command"]  # command: a queued one (/compress, /retry)


@dataclass(frozen=True, slots=True)
class Job:
    kind: JobKind
    message: InboundMessage
    route: Route
    command: Command | None = None
    journal_entry: str | None = None
    accepted_at: float = 0.0
    resumed: bool = False  # re-run after its process died or stopped: its turn may be in the history already
    also_entries: tuple[str, ...] = ()  # journal entries of messages collected into this one turn
    language: str = "en"  # of the gateway's own texts to this job's chat (`gateway.i18n.language_for`)

    @property
    def entries(self) -> tuple[str, ...]:
        """Every journal entry this job answers."""
        return ((self.journal_entry,) if self.journal_entry is not None else ()) + self.also_entries


def merge_collected(first: Job, later: Job) -> Job:
    """One turn of a sender's burst: the texts joined by new lines, in order, every journal entry kept."""
    text = "\n".join(part for part in (first.message.text, later.message.text) if part)
    message = replace(first.message, text=text, attachments=first.message.attachments + later.message.attachments,
                      mentions_bot=first.message.mentions_bot or later.message.mentions_bot)
    return replace(first, message=message, also_entries=first.also_entries + later.entries)


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
    collecting: Job | None = None  # collect mode: the turn waiting for its sender to pause
    timer: Cancellable | None = None  # fires when the collecting turn's gap has passed

    @property
    def empty(self) -> bool:
        return not self.jobs and self.current is None and self.collecting is None


# The cancel message of a turn stopped from the chat (/stop, /new, an interrupting message), not by a shutdown:
# the turn then finishes its streaming draft (a shutdown leaves it, for the resumed turn to replace).
STOPPED = "stopped from the chat"


class SessionLanes:
    """One lane of jobs per session key.

    Args:
        run: executes one job (the lane awaits it before the next).
        mode: the mode of every chat when no `rules` are given.
        rules: the mode per chat and the collect gap (live config).
        timers: what `collect` waits on (tests pass their own clock).
    """

    def __init__(
        self, run: Callable[[Job], Coroutine[Any, Any, None]], *, mode: BusyMode = "queue",
        rules: BusyRules | None = None, timers: Timers | None = None,
    ) -> None:
        self._run = run
        self._rules = rules or BusyRules.fixed(mode)
        self._timers = timers or LoopTimers()
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

    def mode(self, job: Job) -> BusyMode:
        return self._rules.mode(job.route.chat_scope)

    def submit(self, job: Job) -> SubmitResult:
        """Add a job to its session's lane; an idle lane starts it at once (its own task)."""
        if self._closed:
            raise RuntimeError("SessionLanes is closed; the gateway is shutting down")
        lane = self._lanes.setdefault(job.route.key, _Lane())
        mode = self.mode(job)
        if mode == "collect" and job.kind == "turn" and job.command is None:
            return self._collect(job.route.key, lane, job)
        self._flush_collecting(job.route.key, lane)  # a command or a record keeps its place after the burst
        # Context-only records are quick and invisible: they do not make a session "busy" for the user.
        ahead = sum(1 for queued in lane.jobs if queued.kind != "record")
        if lane.current_job is not None and lane.current_job.kind != "record":
            ahead += 1
        interrupted: Job | None = None
        if mode == "steer" and job.kind == "turn" and lane.running:
            lane.jobs.append(job)  # the running turn may take it at a tool boundary; else it runs next
            return SubmitResult(busy=False, position=ahead, reason="offered to the running turn")
        if mode == "interrupt" and job.kind == "turn" and lane.running and lane.current is not None:
            if lane.current_job is not None and lane.current_job.kind == "turn":
                lane.current.cancel(STOPPED)
                interrupted = lane.current_job
        lane.jobs.append(job)
        if lane.current is None:
            self._idle.clear()
            self._start_next(job.route.key, lane)
        reason = "interrupted the running turn" if interrupted else ("queued" if ahead else "started")
        return SubmitResult(busy=ahead > 0, position=ahead, interrupted=interrupted, reason=reason)

    def _collect(self, key: str, lane: _Lane, job: Job) -> SubmitResult:
        """Collect mode: join the sender's waiting turn (restarting its gap), or start waiting with this one."""
        pending = lane.collecting
        if pending is not None and pending.message.user_id == job.message.user_id:
            lane.collecting = merge_collected(pending, job)
            reason = "collected into the waiting turn"
        else:
            self._flush_collecting(key, lane)
            lane.collecting = job
            reason = "waiting for the sender to pause"
        if lane.timer is not None:
            lane.timer.cancel()
        self._idle.clear()
        lane.timer = self._timers.call_later(
            self._rules.collect_seconds(), functools.partial(self._collected, key, lane)
        )
        return SubmitResult(busy=False, position=0, reason=reason)

    def _collected(self, key: str, lane: _Lane) -> None:
        lane.timer = None
        self._flush_collecting(key, lane)

    def _flush_collecting(self, key: str, lane: _Lane) -> None:
        """The waiting burst becomes a queued turn (started at once on an idle lane)."""
        job, lane.collecting = lane.collecting, None
        if lane.timer is not None:
            lane.timer.cancel()
            lane.timer = None
        if job is None:
            return
        lane.jobs.append(job)
        if lane.current is None:
            self._start_next(key, lane)

    def take_steerable(self, key: str) -> list[Job]:
        """Steer mode: the queued turns of `key` (in order), taken off the lane for the running turn to answer."""
        lane = self._lanes.get(key)
        if lane is None or not lane.running:
            return []
        taken = [job for job in lane.jobs if job.kind == "turn" and job.command is None and self.mode(job) == "steer"]
        for job in taken:
            lane.jobs.remove(job)
        return taken

    def replace_queued(self, key: str, message_id: str, change: Callable[[Job], Job]) -> Job | None:
        """Replace the queued (not yet started) job of message `message_id` with `change(job)`; None: none queued."""
        lane = self._lanes.get(key)
        if lane is None:
            return None
        collecting = lane.collecting
        if collecting is not None and collecting.message.message_id == message_id and not collecting.message.edited:
            lane.collecting = change(collecting)
            return lane.collecting
        for index, job in enumerate(lane.jobs):
            if job.message.message_id == message_id and job.kind in ("turn", "record") and not job.message.edited:
                lane.jobs[index] = change(job)
                return lane.jobs[index]
        return None

    def waiting(self, key: str) -> list[Job]:
        """The session's jobs not finished yet, in order: the running one, the queued ones, a collecting burst."""
        lane = self._lanes.get(key)
        if lane is None:
            return []
        current = [lane.current_job] if lane.current_job is not None and lane.current is not None else []
        return [*current, *lane.jobs, *([lane.collecting] if lane.collecting is not None else [])]

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
        if lane.collecting is not None:
            return  # its timer starts it
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
        for key, lane in list(self._lanes.items()):
            self._flush_collecting(key, lane)  # a waiting burst is answered within the grace, or kept
        with contextlib.suppress(asyncio.TimeoutError):
            async with asyncio.timeout(timeout):
                await self._idle.wait()
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


__all__ = ["STOPPED", "BusyMode", "Job", "JobKind", "SessionLanes", "SubmitResult", "merge_collected"]
