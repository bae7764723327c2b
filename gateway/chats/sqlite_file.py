"""One small SQLite file under `home` (the chat store, the pairing store): open, close, one connection behind a lock.

Owns `SqliteFile`. WAL mode (synchronous NORMAL), autocommit (callers open their own transactions), one connection shared by the
worker threads the stores are called from, serialised by a lock.
"""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

BUSY_TIMEOUT_SECONDS = 10.0


class SqliteFile:
    """`path` opened with `schema` applied; `locked()` hands over the connection to one thread at a time."""

    def __init__(self, path: Path, *, schema: Sequence[str], what: str) -> None:
        self.path = path
        self._schema = tuple(schema)
        self._what = what
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def open(self) -> None:
        if self._conn is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a commit survives a process crash and skips the fsync per write (as the session store does).
        conn.execute("PRAGMA synchronous=NORMAL")
        for statement in self._schema:
            conn.execute(statement)
        self._conn = conn

    def close(self) -> None:
        # Under the lock: a worker thread may still be inside `locked()`, and closing a connection another
        # thread is using crashes the interpreter (seen when a cancelled call's thread outlived its task).
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise RuntimeError(f"{self._what} {self.path} is not open; call open() first")
            yield self._conn


__all__ = ["BUSY_TIMEOUT_SECONDS", "SqliteFile"]
