"""`ChatStore` on SQLite: `<home>/chats.db`, one row per chat, WAL mode.

Owns `SqliteChatStore`. One short transaction per call; usage additions are
written behind (`UsageQueue`: batched, one transaction per batch, flushed
before every read and on close). Safe for several gateway processes on one
home (SQLite's own locking, a busy timeout). Knows nothing of agents or platforms.
"""
from __future__ import annotations

from pathlib import Path

from gateway.chats.sqlite_file import SqliteFile
from gateway.chats.store._usage_queue import Batch, UsageQueue
from gateway.chats.store.base import ChatRecord, Usage

CHATS_DB_NAME = "chats.db"
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
_ADD_USAGE = (
    "INSERT INTO chats(chat, platform, prompt_tokens, completion_tokens, requests) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT(chat) DO UPDATE SET prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
    "completion_tokens = completion_tokens + excluded.completion_tokens, "
    "requests = requests + excluded.requests, platform = excluded.platform"
)


class SqliteChatStore:
    """Per-chat settings and usage in one SQLite file.

    Args:
        path: the database file (created with its directory on `open`).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = SqliteFile(path, schema=(_SCHEMA,), what="chat store")
        self._usage = UsageQueue(self._write_usage)

    def open(self) -> None:
        self._file.open()
        self._usage.start()

    def close(self) -> None:
        self._usage.stop()
        self._file.close()

    def get(self, chat: str) -> ChatRecord:
        self._usage.flush()
        with self._file.locked() as db:
            row = db.execute(
                "SELECT model, prompt_tokens, completion_tokens, requests FROM chats WHERE chat = ?", (chat,)
            ).fetchone()
        if row is None:
            return ChatRecord(chat)
        return ChatRecord(chat, row[0], Usage(int(row[1]), int(row[2]), int(row[3])))

    def set_model(self, chat: str, model: str | None) -> None:
        with self._file.locked() as db:
            db.execute(
                "INSERT INTO chats(chat, platform, model) VALUES (?, ?, ?) "
                "ON CONFLICT(chat) DO UPDATE SET model = excluded.model",
                (chat, chat.split(":", 1)[0], model),
            )

    def add_usage(self, chat: str, platform: str, usage: Usage) -> None:
        """Queued, not written here: no I/O, so the event loop may call it directly."""
        self._usage.add(chat, platform, usage)

    def _write_usage(self, batch: Batch) -> None:
        rows = [(chat, platform, u.prompt_tokens, u.completion_tokens, u.requests) for (chat, platform), u in batch.items()]
        with self._file.locked() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(_ADD_USAGE, rows)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def usage_by_platform(self) -> dict[str, Usage]:
        self._usage.flush()
        with self._file.locked() as db:
            rows = db.execute(
                "SELECT platform, sum(prompt_tokens), sum(completion_tokens), sum(requests) FROM chats GROUP BY platform"
            ).fetchall()
        return {str(row[0]): Usage(int(row[1]), int(row[2]), int(row[3])) for row in rows if row[0]}


__all__ = ["CHATS_DB_NAME", "SqliteChatStore"]
