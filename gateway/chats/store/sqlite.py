"""`ChatStore` on SQLite: `<home>/chats.db`, one row per chat, WAL mode.

Owns `SqliteChatStore`. One short transaction per call; safe for several
gateway processes on one home (SQLite's own locking, a busy timeout).
Knows nothing of agents or platforms.
"""
from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from gateway.chats.store.base import ChatRecord, Usage

CHATS_DB_NAME = "chats.db"
BUSY_TIMEOUT_SECONDS = 10.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS chats (
    chat TEXT PRIMARY KEY,
    platform TEXT NOT NULL DEFAULT '',
    model TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    requests INTEGER NOT NULL DEFAULT 0
)
"""


class SqliteChatStore:
    """Per-chat settings and usage in one SQLite file.

    Args:
        path: the database file (created with its directory on `open`).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def open(self) -> None:
        if self._conn is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_SCHEMA)
        self._conn = conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _require(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"chat store {self.path} is not open; call open() first")
        return self._conn

    def get(self, chat: str) -> ChatRecord:
        with self._lock:
            row = self._require().execute(
                "SELECT model, prompt_tokens, completion_tokens, requests FROM chats WHERE chat = ?", (chat,)
            ).fetchone()
        if row is None:
            return ChatRecord(chat)
        return ChatRecord(chat, row[0], Usage(int(row[1]), int(row[2]), int(row[3])))

    def set_model(self, chat: str, model: str | None) -> None:
        with self._lock:
            self._require().execute(
                "INSERT INTO chats(chat, platform, model) VALUES (?, ?, ?) "
                "ON CONFLICT(chat) DO UPDATE SET model = excluded.model",
                (chat, chat.split(":", 1)[0], model),
            )

    def add_usage(self, chat: str, platform: str, usage: Usage) -> None:
        with self._lock:
            self._require().execute(
                "INSERT INTO chats(chat, platform, prompt_tokens, completion_tokens, requests) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(chat) DO UPDATE SET prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
                "completion_tokens = completion_tokens + excluded.completion_tokens, "
                "requests = requests + excluded.requests, platform = excluded.platform",
                (chat, platform, usage.prompt_tokens, usage.completion_tokens, usage.requests),
            )

    def usage_by_platform(self) -> dict[str, Usage]:
        with self._lock:
            rows = self._require().execute(
                "SELECT platform, sum(prompt_tokens), sum(completion_tokens), sum(requests) FROM chats GROUP BY platform"
            ).fetchall()
        return {str(row[0]): Usage(int(row[1]), int(row[2]), int(row[3])) for row in rows if row[0]}


__all__ = ["CHATS_DB_NAME", "SqliteChatStore"]
