"""`ChatStore` in PostgreSQL: the `chats` table of the shared store, so every replica sees one chat's `/model` and usage.

Owns `PostgresChatStore`. It borrows the session store's pool (the table is one of its
migrations), so `open`/`close` only check that the pool is there: the gateway opens and
closes the session store itself. Usage is written behind (`UsageQueue`: one thread,
one transaction a batch, flushed before every read) with atomic upserts, so replicas
counting the same chat at once lose nothing and a turn never waits on the database. Knows nothing of agents or platforms.
"""
from __future__ import annotations

from agent.store.postgres import PostgresSessionStore
from gateway.chats.store._usage_queue import Batch, UsageQueue
from gateway.chats.store.base import ChatRecord, Usage

_SET_MODEL = """
INSERT INTO chats (chat, platform, model) VALUES (%s, %s, %s)
ON CONFLICT (chat) DO UPDATE SET model = excluded.model
"""
_ADD_USAGE = """
INSERT INTO chats (chat, platform, prompt_tokens, completion_tokens, requests) VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (chat) DO UPDATE SET prompt_tokens = chats.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = chats.completion_tokens + excluded.completion_tokens,
    requests = chats.requests + excluded.requests, platform = excluded.platform
"""


class PostgresChatStore:
    """Per-chat settings and usage in the shared database.

    Args:
        shared: the session store whose pool (and migrations) this uses; opened by its owner.
    """

    def __init__(self, shared: PostgresSessionStore) -> None:
        self._shared = shared
        self._usage = UsageQueue(self._write_usage)

    @property
    def location(self) -> str:
        return f"{self._shared.location} (table chats)"

    def open(self) -> None:
        self._shared.ping()  # the pool is the session store's: raises StoreError when it is not open
        self._usage.start()

    def close(self) -> None:
        """Commit pending usage; the pool itself closes with the session store."""
        self._usage.stop()

    def get(self, chat: str) -> ChatRecord:
        self._usage.flush()
        with self._shared.connection() as conn:
            row = conn.execute(
                "SELECT model, prompt_tokens, completion_tokens, requests FROM chats WHERE chat = %s", (chat,)
            ).fetchone()
        if row is None:
            return ChatRecord(chat)
        usage = Usage(int(row["prompt_tokens"]), int(row["completion_tokens"]), int(row["requests"]))
        return ChatRecord(chat, row["model"], usage)

    def set_model(self, chat: str, model: str | None) -> None:
        with self._shared.connection() as conn:
            conn.execute(_SET_MODEL, (chat, chat.split(":", 1)[0], model))

    def add_usage(self, chat: str, platform: str, usage: Usage) -> None:
        """Queued: no I/O on the caller's thread (turns call this on the event loop)."""
        self._usage.add(chat, platform, usage)

    def _write_usage(self, batch: Batch) -> None:
        rows = [(chat, platform, u.prompt_tokens, u.completion_tokens, u.requests) for (chat, platform), u in batch.items()]
        with self._shared.connection() as conn, conn.transaction():
            conn.cursor().executemany(_ADD_USAGE, rows)

    def usage_by_platform(self) -> dict[str, Usage]:
        self._usage.flush()
        with self._shared.connection() as conn:
            rows = conn.execute(
                "SELECT platform, sum(prompt_tokens) AS p, sum(completion_tokens) AS c, sum(requests) AS r "
                "FROM chats WHERE platform <> '' GROUP BY platform"
            ).fetchall()
        return {str(row["platform"]): Usage(int(row["p"]), int(row["c"]), int(row["r"])) for row in rows}


__all__ = ["PostgresChatStore"]
