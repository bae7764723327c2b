"""A scheduled job and one of its runs: the values the store, the runner, the tool and the listings share.

Owns `Job`, `Run`, `Origin` and `RunStatus`, the job ids users type (`/unschedule ID`), and how an
operator's `schedules:` entry becomes a `Job`. Knows nothing of storage or platforms.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal, TypeAlias

from gateway.config import ScheduleSettings
from gateway.schedules.recurrence import When

Origin: TypeAlias = Literal["operator", "cli", "api", "user"]
# claimed: this replica owns the occurrence; queued: the turn is in the chat's journal and lane (its reply is the
# outbox's from there); sent: a deliver_only text is in the outbox; failed: handing over failed after every retry;
# skipped: missed beyond scheduling.catch_up_minutes. Delivery status is the outbox's, never kept here.
RunStatus: TypeAlias = Literal["claimed", "queued", "sent", "failed", "skipped"]
ORIGINS: tuple[Origin, ...] = ("operator", "cli", "api", "user")
RUN_STATUSES: tuple[RunStatus, ...] = ("claimed", "queued", "sent", "failed", "skipped")
ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: typed by hand in `/unschedule ID`
ID_LENGTH = 6
OPERATOR = "operator"  # the author of an operator's job's turns


@dataclass(frozen=True, slots=True)
class Job:
    """One job: when it fires, where (PLATFORM:CHAT and thread; None: the home channel), what it runs, whose it is."""

    id: str
    name: str
    when: When
    chat: str | None
    thread: str | None
    prompt: str
    deliver_only: bool
    origin: Origin
    created_at: float
    owner_id: str | None = None  # the platform user id of a user's job (who may remove it)
    owner_name: str = ""
    chat_type: Literal["dm", "group"] = "group"  # the session a turn runs in: the DM's, or the chat's shared one

    @property
    def platform(self) -> str | None:
        return self.chat.partition(":")[0] if self.chat else None

    @property
    def chat_id(self) -> str | None:
        return self.chat.partition(":")[2] if self.chat else None


@dataclass(frozen=True, slots=True)
class Run:
    """One occurrence of a job, claimed by one replica."""

    job_id: str
    occurrence: float
    node: str
    status: RunStatus
    detail: str
    attempts: int
    claimed_at: float


def new_id() -> str:
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


def operator_job(name: str, settings: ScheduleSettings) -> Job:
    """`schedules.NAME` as a job; its id is its name (validated at load, so parsing cannot fail here)."""
    when = When.parse(cron=settings.cron, at=settings.at, timezone=settings.timezone)
    return Job(id=name, name=name, when=when, chat=settings.chat, thread=settings.thread, prompt=settings.prompt,
               deliver_only=settings.deliver_only, origin="operator", created_at=0.0)


def run_status(value: object) -> RunStatus:
    for status in RUN_STATUSES:
        if value == status:
            return status
    raise ValueError(f"unknown run status {value!r}")


def origin_of(value: object) -> Origin:
    for origin in ORIGINS:
        if value == origin:
            return origin
    raise ValueError(f"unknown job origin {value!r}")


__all__ = ["ID_LENGTH", "OPERATOR", "Job", "Origin", "Run", "RunStatus", "new_id", "operator_job", "origin_of",
           "run_status"]
