"""Skills in PostgreSQL: `PostgresSkills`, the `SkillStorage` replicas share (tables from the store's migrations).

`SkillLibrary` keeps its rules (names, limits, the scan before every write);
this stores each skill's texts as rows of `skills_files` and locks the
library across replicas with a transaction-scoped advisory lock, so a
check-then-write (create refuses an existing skill) is atomic across
machines. A delete moves the rows to `skills_trash`, recoverable like the
directory layout's `.trash/`.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from agent.skills._storage import SKILL_FILE
from agent.store.postgres import AdvisoryLock, Conn, PostgresSessionStore

# The advisory lock key of the skill library (one library per database).
SKILLS_LOCK_KEY = 0x736B696C6C73  # "skills"



class PostgresSkills:
    """Every skill's texts in the shared database."""

    def __init__(self, store: PostgresSessionStore, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock
        self._lock = AdvisoryLock(store, "%s", (SKILLS_LOCK_KEY,))

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock.held():
            yield

    def _connection(self) -> AbstractContextManager[Conn]:
        return self._lock.connection()

    def read(self, name: str, relative: str) -> str | None:
        with self._connection() as conn:
            row = conn.execute("SELECT content FROM skills_files WHERE name = %s AND relative = %s",
                               (name, relative)).fetchone()
        return None if row is None else str(row["content"])

    def write(self, name: str, relative: str, content: str) -> None:
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO skills_files (name, relative, content, updated_at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (name, relative) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
                (name, relative, content.replace("\x00", "\ufffd"), self._clock()),
            )

    def skill_names(self) -> list[str]:
        with self._connection() as conn:
            rows = conn.execute("SELECT name FROM skills_files WHERE relative = %s ORDER BY name", (SKILL_FILE,))
            return [str(row["name"]) for row in rows]

    def files(self, name: str) -> tuple[str, ...]:
        with self._connection() as conn:
            rows = conn.execute("SELECT relative FROM skills_files WHERE name = %s AND relative <> %s ORDER BY relative",
                                (name, SKILL_FILE))
            return tuple(str(row["relative"]) for row in rows)

    def trash(self, name: str, stamp: int) -> str:
        trashed_as = f"{name}-{stamp}"
        with self._connection() as conn:
            conn.execute(
                "WITH gone AS (DELETE FROM skills_files WHERE name = %s RETURNING name, relative, content)"
                " INSERT INTO skills_trash (trashed_as, name, relative, content)"
                " SELECT %s, name, relative, content FROM gone",
                (name, trashed_as),
            )
        return f"{self._store.location} skills_trash/{trashed_as}"
