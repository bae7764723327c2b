"""`ScheduleStore` in PostgreSQL: every replica sees every job, and claims each occurrence with one INSERT.

Owns `PostgresScheduleStore`. Same rules as the SQLite store (`gateway.schedules.store`): the claim is
`INSERT … ON CONFLICT DO NOTHING` on the runs table's primary key `(job_id, occurrence)`, so of replicas
racing for one occurrence exactly one gets the row. Borrows the session store's pool; creates its tables on `open`.
"""
from __future__ import annotations

from collections.abc import Sequence

from agent.store.postgres import PostgresSessionStore
from gateway.schedules.jobs import Job, Run, RunStatus
from gateway.schedules.store import JOB_COLUMNS, LAST_RUNS_SQL, RUN_COLUMNS, job_row, row_to_job, row_to_run

SCHEDULE_LOCK_CLASS = 0x7363  # "sc": the advisory lock replicas creating the tables together take

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedule_jobs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, cron TEXT, at DOUBLE PRECISION, timezone TEXT NOT NULL, chat TEXT,
    chat_type TEXT NOT NULL, thread TEXT, prompt TEXT NOT NULL, deliver_only BOOLEAN NOT NULL, origin TEXT NOT NULL,
    owner_id TEXT, owner_name TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS schedule_runs (
    job_id TEXT NOT NULL, occurrence DOUBLE PRECISION NOT NULL, node TEXT NOT NULL, status TEXT NOT NULL,
    detail TEXT NOT NULL, attempts INTEGER NOT NULL, claimed_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (job_id, occurrence))
"""


def _values(row: object, columns: Sequence[str]) -> tuple[object, ...]:
    assert isinstance(row, dict)  # the pool hands out dict rows
    return tuple(row[column] for column in columns)


class PostgresScheduleStore:
    """Jobs and runs in the shared database (tables `schedule_jobs`, `schedule_runs`).

    Args:
        shared: the session store whose pool this uses; opened by its owner.
    """

    def __init__(self, shared: PostgresSessionStore) -> None:
        self._shared = shared

    def open(self) -> None:
        with self._shared.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (SCHEDULE_LOCK_CLASS,))  # replicas starting together
            for statement in _SCHEMA.split(";"):
                conn.execute(statement)

    def close(self) -> None:
        """Nothing to release: the pool closes with the session store."""

    def add(self, job: Job) -> None:
        row = list(job_row(job))
        row[JOB_COLUMNS.index("deliver_only")] = job.deliver_only
        with self._shared.connection() as conn:
            conn.execute(f"INSERT INTO schedule_jobs ({', '.join(JOB_COLUMNS)}) "
                         f"VALUES ({', '.join(['%s'] * len(JOB_COLUMNS))})", tuple(row))

    def remove(self, job_id: str) -> bool:
        with self._shared.connection() as conn:
            return conn.execute("DELETE FROM schedule_jobs WHERE id = %s", (job_id,)).rowcount > 0

    def jobs(self, chat: str | None = None) -> list[Job]:
        select = f"SELECT {', '.join(JOB_COLUMNS)} FROM schedule_jobs"
        with self._shared.connection() as conn:
            if chat is None:
                rows = conn.execute(f"{select} ORDER BY created_at, id").fetchall()
            else:
                rows = conn.execute(f"{select} WHERE chat = %s ORDER BY created_at, id", (chat,)).fetchall()
        return [row_to_job(_values(row, JOB_COLUMNS)) for row in rows]

    def claim(self, job_id: str, occurrence: float, *, node: str, now: float, status: RunStatus = "claimed") -> bool:
        with self._shared.connection() as conn:
            made = conn.execute(
                f"INSERT INTO schedule_runs ({', '.join(RUN_COLUMNS)}) VALUES (%s, %s, %s, %s, '', 0, %s) "
                "ON CONFLICT (job_id, occurrence) DO NOTHING",
                (job_id, occurrence, node, status, now),
            ).rowcount
        return made > 0

    def finish(self, job_id: str, occurrence: float, status: RunStatus, *, detail: str = "", attempts: int = 1) -> None:
        with self._shared.connection() as conn:
            conn.execute("UPDATE schedule_runs SET status = %s, detail = %s, attempts = %s "
                         "WHERE job_id = %s AND occurrence = %s", (status, detail, attempts, job_id, occurrence))

    def take_stale(self, *, node: str, now: float, older_than: float) -> list[Run]:
        with self._shared.connection() as conn:
            rows = conn.execute(
                f"UPDATE schedule_runs SET node = %s, claimed_at = %s WHERE status = 'claimed' AND claimed_at < %s "
                f"RETURNING {', '.join(RUN_COLUMNS)}", (node, now, older_than),
            ).fetchall()
        return [row_to_run(_values(row, RUN_COLUMNS)) for row in rows]

    def last_runs(self, job_ids: Sequence[str]) -> dict[str, Run]:
        if not job_ids:
            return {}
        with self._shared.connection() as conn:
            rows = conn.execute(LAST_RUNS_SQL.format(marks=", ".join(["%s"] * len(job_ids))), tuple(job_ids)).fetchall()
        return {run.job_id: run for run in (row_to_run(_values(row, RUN_COLUMNS)) for row in rows)}


__all__ = ["PostgresScheduleStore"]
