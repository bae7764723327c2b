"""Adding, listing and removing jobs, with the rules every entry point shares (tool, commands, CLI, API).

Owns `ScheduleBook` and `ScheduleRefused`. A user's job (the `schedule` tool) counts against
`scheduling.max_jobs_per_chat` and may not fire more often than `scheduling.min_interval_minutes`; the
operator's (CLI, admin API) are not limited. Only a job's creator or an admin removes it; an operator's
job from `schedules:` is removed from the config. Synchronous: async callers run it in a thread.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gateway.config import ChorusConfig
from gateway.i18n import DEFAULT_LANGUAGE, Phrase, msgid, say
from gateway.schedules.jobs import Job, Origin, Run, new_id, operator_job
from gateway.schedules.recurrence import When, WhenError
from gateway.schedules.runner import utc_text
from gateway.schedules.store import ScheduleStore


class ScheduleRefused(ValueError):
    """A job that may not be made or removed: `said(language)` is the one line for the person asking; `str()` is
    its English, for the model (the `schedule` tool), the CLI and the admin API."""

    def __init__(self, key: str, **fields: object) -> None:
        self.key, self.fields = key, fields
        super().__init__(say(DEFAULT_LANGUAGE, key, **fields))

    def said(self, language: str) -> Phrase:
        return say(language, self.key, **self.fields)


@dataclass(frozen=True, slots=True)
class JobRequest:
    """A job to make: where, when, what, whose."""

    chat: str | None
    cron: str | None
    at: str | None
    prompt: str
    origin: Origin
    timezone: str = "UTC"
    thread: str | None = None
    deliver_only: bool = False
    owner_id: str | None = None
    owner_name: str = ""
    chat_type: Literal["dm", "group"] = "group"
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Listed:
    """A job with its next occurrence and its last run (what every listing shows)."""

    job: Job
    next_at: float | None
    last: Run | None

    def line(self, language: str = DEFAULT_LANGUAGE) -> Phrase:
        last = say(language, "schedule.never") if self.last is None else f"{utc_text(self.last.occurrence)} {self.last.status}"
        what = (say(language, "schedule.send_prefix") if self.job.deliver_only else "") + self.job.prompt
        upcoming = utc_text(self.next_at) if self.next_at is not None else say(language, "schedule.none")
        return say(language, "schedule.list_line", id=self.job.id, when=self.job.when.describe(), next=upcoming,
                   last=last, what=what if len(what) <= 60 else what[:59] + "…")

    def to_json(self) -> dict[str, object]:
        job = self.job
        return {
            "id": job.id, "name": job.name, "cron": job.when.cron, "at": job.when.at, "timezone": job.when.timezone,
            "chat": job.chat, "thread": job.thread, "prompt": job.prompt, "deliver_only": job.deliver_only,
            "origin": job.origin, "owner_id": job.owner_id, "next_run": self.next_at,
            "last_run": None if self.last is None else {"occurrence": self.last.occurrence, "status": self.last.status,
                                                        "node": self.last.node, "detail": self.last.detail},
        }


class ScheduleBook:
    """The jobs of one gateway (or CLI command): the config's and the store's.

    Args:
        store: the open schedule store.
        config: the running config.
        clock: epoch seconds (the scheduler's).
    """

    def __init__(self, store: ScheduleStore, *, config: Callable[[], ChorusConfig], clock: Callable[[], float]) -> None:
        self.store = store
        self.config = config
        self._clock = clock

    def jobs(self, chat: str | None = None) -> list[Job]:
        operators = [operator_job(name, job) for name, job in self.config().schedules.items()]
        return [job for job in operators if chat is None or job.chat == chat] + self.store.jobs(chat)

    def listing(self, chat: str | None = None) -> list[Listed]:
        jobs = self.jobs(chat)
        last = self.store.last_runs([job.id for job in jobs])
        now = self._clock()
        return [Listed(job, job.when.next_after(now), last.get(job.id)) for job in jobs]

    def add(self, request: JobRequest) -> Job:
        """Raises `ScheduleRefused` naming what is wrong (a bad cron, time zone or time; a limit)."""
        if not request.prompt.strip():
            raise ScheduleRefused(msgid("schedule.no_prompt"))
        try:
            when = When.parse(cron=request.cron, at=request.at, timezone=request.timezone)
        except WhenError as exc:
            raise ScheduleRefused(msgid("schedule.bad_time"), detail=str(exc)) from None
        now = self._clock()
        if when.next_after(now) is None:
            raise ScheduleRefused(msgid("schedule.in_the_past"))
        if request.origin == "user":
            self._check_user_limits(request, when, now)
        job_id = new_id()
        job = Job(id=job_id, name=request.name or job_id, when=when, chat=request.chat, thread=request.thread,
                  prompt=request.prompt, deliver_only=request.deliver_only, origin=request.origin, created_at=now,
                  owner_id=request.owner_id, owner_name=request.owner_name, chat_type=request.chat_type)
        self.store.add(job)
        return job

    def _check_user_limits(self, request: JobRequest, when: When, now: float) -> None:
        settings = self.config().scheduling
        if not settings.enabled:
            raise ScheduleRefused(msgid("schedule.disabled"))
        count = len(self.store.jobs(request.chat))
        if count >= settings.max_jobs_per_chat:
            raise ScheduleRefused(msgid("schedule.too_many"), count=count)
        gap = when.shortest_gap_minutes(now)
        if gap is not None and gap < settings.min_interval_minutes:
            raise ScheduleRefused(msgid("schedule.too_often"), gap=gap, minimum=settings.min_interval_minutes)

    def remove(self, job_id: str, *, chat: str | None = None, by: str | None = None, admin: bool = True) -> Job:
        """Remove a stored job (of `chat`, when given); `by` must be its creator unless `admin`.

        Raises `ScheduleRefused` when there is no such job, it is an operator's from the config, or it is another's.
        """
        if job_id in self.config().schedules and (chat is None or self.config().schedules[job_id].chat == chat):
            raise ScheduleRefused(msgid("schedule.operator_job"), id=job_id)
        job = next((j for j in self.store.jobs(chat) if j.id == job_id.lower()), None)
        if job is None:
            raise ScheduleRefused(msgid("schedule.not_found"), id=job_id)
        if not admin and job.owner_id != by:
            raise ScheduleRefused(msgid("schedule.not_yours"), id=job.id)
        self.store.remove(job.id)
        return job


__all__ = ["JobRequest", "Listed", "ScheduleBook", "ScheduleRefused"]
