"""A re-entrant, transaction-scoped PostgreSQL advisory lock whose connection the holder's reads and writes reuse.

Owns `AdvisoryLock`. Notes and skills keep their files as rows; a writer takes the lock for a read-modify-write,
and a call made while it holds the lock (approve() writing under its own lock) runs on the same connection.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from agent.store.postgres.store import PostgresSessionStore

Conn = psycopg.Connection[dict[str, Any]]


class AdvisoryLock:
    """`pg_advisory_xact_lock(*key)` held for the length of `held()`; `connection()` is the held one when inside."""

    def __init__(self, store: PostgresSessionStore, key_sql: str, params: tuple[object, ...]) -> None:
        self._store = store
        self._sql = f"SELECT pg_advisory_xact_lock({key_sql})"
        self._params = params
        self._conn: Conn | None = None

    @contextmanager
    def held(self) -> Iterator[None]:
        if self._conn is not None:  # re-entrant: the lock is this object's already
            yield
            return
        with self._store.connection() as conn, conn.transaction():
            conn.execute(self._sql, self._params)
            self._conn = conn
            try:
                yield
            finally:
                self._conn = None

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        if self._conn is not None:
            yield self._conn
        else:
            with self._store.connection() as conn:
                yield conn


__all__ = ["AdvisoryLock", "Conn"]
