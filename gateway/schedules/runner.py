"""The scheduler loop: which occurrences are due, the claim that makes one replica run each, and running it.

Owns `Scheduler`. Every tick it reads the clock (injected: `gateway.config.limits_clock`, so a test moves
time through `CHORUS_TEST_CLOCK_FILE`), the operator's jobs (live config) and the stored ones, and for each
job the occurrences since it last looked. An occurrence runs here only when this replica's INSERT made its
run row (`ScheduleStore.claim`) AND its key `schedule:JOB:OCCURRENCE` passes the cross-replica
de-duplicator every platform delivery passes (Redis when configured): replicas sharing the store, or sharing
only Redis, fire it once. After a restart, occurrences missed within `scheduling.catch_up_minutes` run once;
older ones are skipped with one log line (and one `skipped` run row). A turn is handed to the gateway as a
scheduled `InboundMessage` (journal, lane, limits, outbox: the path of every message); `deliver_only`
records the text in the outbox. A hand-over that fails is retried on the next ticks, then reported in the
job's chat or the home channel. Knows the platforms only through `JobHost`.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Protocol

import structlog

from adapters.base import ChatTarget, InboundMessage
from gateway.config import ChorusConfig
from gateway.coord.base import Deduplicator, OutboundItem
from gateway.i18n import Phrase, language_for, say
from gateway.schedules.jobs import OPERATOR, Job, RunStatus, operator_job
from gateway.schedules.store import ScheduleStore
from gateway.schedules.texts import TURN_PROMPT

log = structlog.get_logger(__name__)

TICK_SECONDS = 0.25  # how often the clock is read: cheap (no store call unless an occurrence is due or jobs changed)
JOBS_REFRESH_SECONDS = 1.0  # stored jobs are re-read this often (another replica's tool may have added one)
MAX_ATTEMPTS = 3  # hand-overs of one occurrence before it is reported failed
SKIP_COUNT_CAP = 100_000  # occurrences counted for the skip line at most (a every-minute job down for months)
DEDUP_TTL = 86_400.0  # a deliver_only key outlives any race for it (claims and takeovers settle within a lease)
DUPLICATE_DETAIL = "run by a replica with another store (they share Redis)"
STOP_GRACE_SECONDS = 5.0  # a run in progress when the gateway stops is finished within this
BOUNDARY_SECONDS = 0.001  # occurrences are whole minutes: an occurrence exactly catch_up_minutes old is run


class JobHost(Protocol):
    """What running a job needs of the gateway."""

    async def run_turn(self, message: InboundMessage) -> None:
        """Journal the scheduled message and queue its turn on its session's lane (raises when it cannot)."""
        ...

    async def deliver(self, item: OutboundItem) -> None:
        """Record a reply in the outbox and send it (the outbox resends it if the send fails)."""
        ...

    async def notify(self, target: ChatTarget, message: Phrase) -> None:
        """A best-effort notice outside the outbox."""
        ...


def target_of(job: Job, home_channel: str | None) -> ChatTarget | None:
    """Where a job's turn runs and its reply goes: its chat and thread, else the home channel (None: nowhere)."""
    chat = job.chat or home_channel
    if not chat:
        return None
    platform, _, chat_id = chat.partition(":")
    return ChatTarget(platform=platform, chat_id=chat_id, thread_id=job.thread if job.chat else None)


def occurrence_key(job_id: str, occurrence: float) -> str:
    """The one key of an occurrence: the de-duplicator's, and the scheduled message's delivery id."""
    return f"schedule:{job_id}:{int(occurrence)}"


def _clock_text(moment: float, timezone: str = "UTC") -> str:
    from gateway.schedules.recurrence import zone

    return datetime.fromtimestamp(moment, zone(timezone)).strftime("%Y-%m-%d %H:%M %Z")


class Scheduler:
    """Fires the jobs of the running config and the store, once per occurrence across replicas.

    Args:
        store: the schedule store (opened by the gateway).
        config: the running config (live: `schedules`, `scheduling`, `gateway.home_channel`).
        clock: epoch seconds.
        node: this replica's name, kept on the run rows it claims.
        dedup: the cross-replica de-duplicator of intake.
    """

    def __init__(self, store: ScheduleStore, *, config: Callable[[], ChorusConfig], clock: Callable[[], float],
                 node: str, dedup: Deduplicator) -> None:
        self.store = store
        self._config = config
        self.clock = clock
        self._node = node
        self._dedup = dedup
        self._host: JobHost | None = None
        self._cursors: dict[str, float] = {}  # job id -> the moment up to which its occurrences were looked at
        self._retries: dict[tuple[str, float], int] = {}  # (job id, occurrence) -> hand-overs tried
        self._stored: list[Job] = []
        self._stored_at = float("-inf")
        self._stale_checked_at = float("-inf")

    def bind(self, host: JobHost) -> None:
        self._host = host

    def operator_jobs(self) -> list[Job]:
        return [operator_job(name, job) for name, job in self._config().schedules.items()]

    async def loop(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - retried on the next tick (a store that went away)
                log.warning("schedule.tick_failed", error=type(exc).__name__)
            await asyncio.sleep(TICK_SECONDS)  # a polling timer: the clock may be a test's file

    async def tick(self) -> None:
        """Run every occurrence due since the last tick (and retry hand-overs that failed)."""
        config = self._config()
        if not config.scheduling.enabled:
            return
        now = self.clock()
        jobs = self.operator_jobs() + await self._stored_jobs(now)
        await self._resume_cursors(jobs, now)
        catch_up = config.scheduling.catch_up_minutes * 60
        for job in jobs:
            since = self._cursors[job.id]
            self._cursors[job.id] = max(since, now)
            oldest = now - catch_up  # an occurrence this old still runs; an older one is skipped
            if since < oldest:
                await self._skip(job, since, oldest)
                since = oldest - BOUNDARY_SECONDS
            for occurrence in job.when.between(since, now):
                if await asyncio.to_thread(self.store.claim, job.id, occurrence, node=self._node, now=now):
                    await self._run(job, occurrence, attempts=1)
        by_id = {job.id: job for job in jobs}
        await self._take_stale(by_id, now)
        for (job_id, occurrence), attempts in list(self._retries.items()):
            del self._retries[(job_id, occurrence)]
            if job_id in by_id:
                await self._run(by_id[job_id], occurrence, attempts=attempts + 1)

    async def _take_stale(self, jobs: dict[str, Job], now: float) -> None:
        """Occurrences a replica claimed and died before handing over (claimed longer than a lease ago) run here.

        Without the de-duplicator's claim (`attempts` 2): the dead replica may have made it before dying.
        """
        loop_time = asyncio.get_running_loop().time()
        if loop_time - self._stale_checked_at < JOBS_REFRESH_SECONDS:
            return
        self._stale_checked_at = loop_time
        lease = self._config().gateway.lease_seconds
        for run in await asyncio.to_thread(partial(self.store.take_stale, node=self._node, now=now,
                                                   older_than=now - lease)):
            if run.job_id in jobs:
                log.info("schedule.taken_over", job=run.job_id, occurrence=_clock_text(run.occurrence))
                await self._run(jobs[run.job_id], run.occurrence, attempts=2)

    async def _stored_jobs(self, now: float) -> list[Job]:
        loop_time = asyncio.get_running_loop().time()
        if loop_time - self._stored_at >= JOBS_REFRESH_SECONDS:
            self._stored = await asyncio.to_thread(self.store.jobs)
            self._stored_at = loop_time
        return self._stored

    async def _resume_cursors(self, jobs: list[Job], now: float) -> None:
        """A job seen for the first time resumes after its last run (a restart catches up), else from now."""
        new = [job for job in jobs if job.id not in self._cursors]
        if not new:
            return
        last = await asyncio.to_thread(self.store.last_runs, [job.id for job in new])
        for job in new:
            run = last.get(job.id)
            start = run.occurrence if run is not None else (job.created_at or now)
            self._cursors[job.id] = min(start, now)

    async def _skip(self, job: Job, since: float, until: float) -> None:
        """Occurrences older than catch_up_minutes: one run row and one log line, never run."""
        skipped: list[float] = []
        for occurrence in job.when.after(since):
            if occurrence >= until or len(skipped) >= SKIP_COUNT_CAP:
                break
            skipped.append(occurrence)
        if not skipped:
            return
        if await asyncio.to_thread(self.store.claim, job.id, skipped[-1], node=self._node, now=until, status="skipped"):
            log.info("schedule.skipped", job=job.id, occurrences=len(skipped), first=_clock_text(skipped[0]),
                     last=_clock_text(skipped[-1]), reason="older than scheduling.catch_up_minutes")

    async def _run(self, job: Job, occurrence: float, *, attempts: int) -> None:
        """`_run_once`, finished even when the loop is stopped meanwhile (within `STOP_GRACE_SECONDS`).

        A run cut between the hand-over and its status would be taken over and handed over again.
        """
        work = asyncio.ensure_future(self._run_once(job, occurrence, attempts=attempts))
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                async with asyncio.timeout(STOP_GRACE_SECONDS):
                    await work
            raise

    async def _run_once(self, job: Job, occurrence: float, *, attempts: int) -> None:
        """Hand the occurrence over (once across replicas); a failure is retried, then reported."""
        # A turn's key is claimed by intake (it is the scheduled message's delivery id); a text's is claimed here.
        if attempts == 1 and job.deliver_only and not await self._dedup.claim(occurrence_key(job.id, occurrence),
                                                                              ttl=DEDUP_TTL):
            log.info("schedule.duplicate", job=job.id, occurrence=int(occurrence))
            # Settled here, or a lease later this replica would take its own row over and send it after all.
            await asyncio.to_thread(self.store.finish, job.id, occurrence, "skipped", detail=DUPLICATE_DETAIL)
            return
        status: RunStatus
        try:
            status = await self._hand_over(job, occurrence)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a job's failure is retried and reported, never fatal
            log.warning("schedule.run_failed", job=job.id, attempts=attempts, error=type(exc).__name__)
            if attempts < MAX_ATTEMPTS:
                self._retries[(job.id, occurrence)] = attempts
                return
            await asyncio.to_thread(self.store.finish, job.id, occurrence, "failed", detail=type(exc).__name__,
                                    attempts=attempts)
            await self._report(job, occurrence, error=str(exc) or type(exc).__name__, attempts=attempts)
            return
        await asyncio.to_thread(self.store.finish, job.id, occurrence, status, attempts=attempts)
        log.info("schedule.fired", job=job.id, occurrence=_clock_text(occurrence), status=status)
        if job.when.at is not None and job.origin != "operator":
            await asyncio.to_thread(self.store.remove, job.id)  # a one-shot job is done

    async def _hand_over(self, job: Job, occurrence: float) -> RunStatus:
        host = self._host
        if host is None:
            raise RuntimeError("the scheduler is not bound to a gateway")
        target = target_of(job, self._config().gateway.home_channel)
        if target is None:
            raise LookupError("the job has no chat and gateway.home_channel is not set")
        if job.deliver_only:
            await host.deliver(OutboundItem(
                platform=target.platform, chat_id=target.chat_id, thread_id=target.thread_id, text=job.prompt,
                session_key=occurrence_key(job.id, occurrence),
            ))
            return "sent"
        await host.run_turn(InboundMessage(
            platform=target.platform, chat_id=target.chat_id, chat_type=job.chat_type if job.chat else "group",
            user_id=job.owner_id or OPERATOR, user_name=job.owner_name or OPERATOR,
            text=TURN_PROMPT.format(name=job.name, prompt=job.prompt), message_id=occurrence_key(job.id, occurrence),
            timestamp=occurrence, thread_id=target.thread_id, delivery_id=occurrence_key(job.id, occurrence),
            scheduled=True,
        ))
        return "queued"

    async def _report(self, job: Job, occurrence: float, *, error: str, attempts: int) -> None:
        target = target_of(job, self._config().gateway.home_channel)
        if target is None or self._host is None:
            return
        config = self._config()
        language = language_for(config, job.chat or config.gateway.home_channel or "", None)
        await self._host.notify(target, say(language, "schedule.run_failed", name=job.name, id=job.id,
                                            time=_clock_text(occurrence, job.when.timezone), error=error,
                                            attempts=attempts))


def utc_text(moment: float) -> str:
    """A listing's time (UTC)."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M UTC")


__all__ = ["JobHost", "MAX_ATTEMPTS", "Scheduler", "TICK_SECONDS", "occurrence_key", "target_of", "utc_text"]
