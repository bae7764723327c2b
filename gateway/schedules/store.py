"""Where jobs and their runs live: the `ScheduleStore` Protocol and its SQLite backend (`<home>/schedules.db`).

Owns the tables' shape and the claim rule: an occurrence `(job_id, occurrence)` is a primary key of the runs
table, and a replica runs it only if its INSERT made the row (SQLite `INSERT OR IGNORE`, PostgreSQL
`ON CONFLICT DO NOTHING` in `gateway.schedules.postgres`). Replicas sharing the store therefore fire each
occurrence once. Operator jobs (`schedules:`) are never stored; their runs are. Knows nothing of platforms.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from gateway.chats.sqlite_file import SqliteFile
from gateway.schedules.jobs import Job, Run, RunStatus, origin_of, run_status
from gateway.schedules.recurrence import When

SCHEDULES_DB_NAME = "schedules.db"
JOB_COLUMNS = ("id", "name", "cron", "at", "timezone", "chat", "chat_type", "thread", "prompt", "deliver_only",
               "origin", "owner_id", "owner_name", "created_at")
RUN_COLUMNS = ("job_id", "occurrence", "node", "status", "detail", "attempts", "claimed_at")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schedule_jobs (id TEXT PRIMARY KEY, name TEXT NOT NULL, cron TEXT, at REAL, "
    "timezone TEXT NOT NULL, chat TEXT, chat_type TEXT NOT NULL, thread TEXT, prompt TEXT NOT NULL, "
    "deliver_only INTEGER NOT NULL, origin TEXT NOT NULL, owner_id TEXT, owner_name TEXT NOT NULL, "
    "created_at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS schedule_runs (job_id TEXT NOT NULL, occurrence REAL NOT NULL, node TEXT NOT NULL, "
    "status TEXT NOT NULL, detail TEXT NOT NULL, attempts INTEGER NOT NULL, claimed_at REAL NOT NULL, "
    "PRIMARY KEY (job_id, occurrence))",
)


class ScheduleStore(Protocol):
    """Jobs added at run time (tool, CLI, API) and every job's runs, shared by the replicas that share the store."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def add(self, job: Job) -> None: ...

    def remove(self, job_id: str) -> bool:
        """True when the job was there (its runs stay, for the listings' history)."""
        ...

    def jobs(self, chat: str | None = None) -> list[Job]:
        """Every stored job, or those of one chat (PLATFORM:CHAT), oldest first."""
        ...

    def claim(self, job_id: str, occurrence: float, *, node: str, now: float, status: RunStatus = "claimed") -> bool:
        """Make the occurrence's run row; False when a replica made it first (this one must not run it)."""
        ...

    def finish(self, job_id: str, occurrence: float, status: RunStatus, *, detail: str = "", attempts: int = 1) -> None: ...

    def take_stale(self, *, node: str, now: float, older_than: float) -> list[Run]:
        """Runs still `claimed` since before `older_than` (their replica died before handing them over), now this
        node's; each is taken by one replica (a conditional update)."""
        ...

    def last_runs(self, job_ids: Sequence[str]) -> dict[str, Run]:
        """Each job's latest run (by occurrence), for the listings and for where the runner resumes."""
        ...


def job_row(job: Job) -> tuple[object, ...]:
    when = job.when
    return (job.id, job.name, when.cron, when.at, when.timezone, job.chat, job.chat_type, job.thread, job.prompt,
            int(job.deliver_only), job.origin, job.owner_id, job.owner_name, job.created_at)


def row_to_job(row: Sequence[object]) -> Job:
    v = dict(zip(JOB_COLUMNS, row))
    at = v["at"]
    when = When(cron=None if v["cron"] is None else str(v["cron"]), at=None if at is None else float(str(at)),
                timezone=str(v["timezone"]))
    return Job(
        id=str(v["id"]), name=str(v["name"]), when=when, chat=None if v["chat"] is None else str(v["chat"]),
        thread=None if v["thread"] is None else str(v["thread"]), prompt=str(v["prompt"]),
        deliver_only=bool(v["deliver_only"]), origin=origin_of(v["origin"]), created_at=float(str(v["created_at"])),
        owner_id=None if v["owner_id"] is None else str(v["owner_id"]), owner_name=str(v["owner_name"]),
        chat_type="dm" if v["chat_type"] == "dm" else "group",
    )


def row_to_run(row: Sequence[object]) -> Run:
    v = dict(zip(RUN_COLUMNS, row))
    return Run(job_id=str(v["job_id"]), occurrence=float(str(v["occurrence"])), node=str(v["node"]),
               status=run_status(v["status"]), detail=str(v["detail"]), attempts=int(str(v["attempts"])),
               claimed_at=float(str(v["claimed_at"])))


# The latest run of each job: one row per job_id, the greatest occurrence.
LAST_RUNS_SQL = (
    f"SELECT {', '.join('r.' + c for c in RUN_COLUMNS)} FROM schedule_runs r JOIN "
    "(SELECT job_id, MAX(occurrence) AS occurrence FROM schedule_runs WHERE job_id IN ({marks}) GROUP BY job_id) m "
    "ON r.job_id = m.job_id AND r.occurrence = m.occurrence"
)


class SqliteScheduleStore:
    """Jobs and runs in one SQLite file under home (replicas sharing the home share it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = SqliteFile(path, schema=_SCHEMA, what="schedule store")

    def open(self) -> None:
        self._file.open()

    def close(self) -> None:
        self._file.close()

    def add(self, job: Job) -> None:
        with self._file.locked() as db:
            db.execute(f"INSERT INTO schedule_jobs ({', '.join(JOB_COLUMNS)}) VALUES ({', '.join('?' * len(JOB_COLUMNS))})",
                       job_row(job))

    def remove(self, job_id: str) -> bool:
        with self._file.locked() as db:
            return db.execute("DELETE FROM schedule_jobs WHERE id = ?", (job_id,)).rowcount > 0

    def jobs(self, chat: str | None = None) -> list[Job]:
        select = f"SELECT {', '.join(JOB_COLUMNS)} FROM schedule_jobs"
        with self._file.locked() as db:
            if chat is None:
                rows = db.execute(f"{select} ORDER BY created_at, id").fetchall()
            else:
                rows = db.execute(f"{select} WHERE chat = ? ORDER BY created_at, id", (chat,)).fetchall()
        return [row_to_job(row) for row in rows]

    def claim(self, job_id: str, occurrence: float, *, node: str, now: float, status: RunStatus = "claimed") -> bool:
        with self._file.locked() as db:
            try:
                made = db.execute(
                    f"INSERT OR IGNORE INTO schedule_runs ({', '.join(RUN_COLUMNS)}) VALUES (?, ?, ?, ?, '', 0, ?)",
                    (job_id, occurrence, node, status, now),
                ).rowcount
            except sqlite3.IntegrityError:
                return False
        return made > 0

    def finish(self, job_id: str, occurrence: float, status: RunStatus, *, detail: str = "", attempts: int = 1) -> None:
        with self._file.locked() as db:
            db.execute("UPDATE schedule_runs SET status = ?, detail = ?, attempts = ? WHERE job_id = ? AND occurrence = ?",
                       (status, detail, attempts, job_id, occurrence))

    def take_stale(self, *, node: str, now: float, older_than: float) -> list[Run]:
        with self._file.locked() as db:
            rows = db.execute(
                f"UPDATE schedule_runs SET node = ?, claimed_at = ? WHERE status = 'claimed' AND claimed_at < ? "
                f"RETURNING {', '.join(RUN_COLUMNS)}", (node, now, older_than),
            ).fetchall()
        return [row_to_run(row) for row in rows]

    def last_runs(self, job_ids: Sequence[str]) -> dict[str, Run]:
        if not job_ids:
            return {}
        with self._file.locked() as db:
            rows = db.execute(LAST_RUNS_SQL.format(marks=", ".join("?" * len(job_ids))), tuple(job_ids)).fetchall()
        return {run.job_id: run for run in map(row_to_run, rows)}


__all__ = ["JOB_COLUMNS", "RUN_COLUMNS", "SCHEDULES_DB_NAME", "ScheduleStore", "SqliteScheduleStore", "job_row",
           "row_to_job", "row_to_run"]
