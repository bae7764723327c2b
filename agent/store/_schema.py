"""The schema of `state.db` as an ordered list of migration steps, and the code that applies them.

Owns table layout and `PRAGMA user_version`. A database is at version N when
steps 1..N have run; opening the store runs the missing steps inside one
`BEGIN IMMEDIATE` transaction, so two processes opening an old file at once
migrate it exactly once. Knows nothing of messages or search semantics.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from chorus_errors import ChorusError

# The FTS tokenizer folds case and diacritics ("Café" finds "cafe").
FTS_TOKENIZER = "unicode61 remove_diacritics 2"


class StoreError(ChorusError):
    """The session store cannot do what was asked (unknown session, database from a newer Chorus, …)."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


_V1 = Migration(
    version=1,
    description="sessions and messages",
    statements=(
        """
        CREATE TABLE sessions (
            id         TEXT PRIMARY KEY,
            key        TEXT NOT NULL,
            platform   TEXT NOT NULL,
            chat_id    TEXT NOT NULL,
            parent_id  TEXT REFERENCES sessions(id),
            created_at REAL NOT NULL,
            ended_at   REAL,
            active     INTEGER NOT NULL DEFAULT 1,
            title      TEXT,
            meta       TEXT
        )
        """,
        # At most one open session per routing key, even with several writer processes.
        "CREATE UNIQUE INDEX sessions_one_active_per_key ON sessions(key) WHERE active = 1",
        "CREATE INDEX sessions_by_chat ON sessions(chat_id, created_at)",
        """
        CREATE TABLE messages (
            id           INTEGER PRIMARY KEY,
            session_id   TEXT NOT NULL REFERENCES sessions(id),
            chat_id      TEXT NOT NULL,
            seq          INTEGER NOT NULL,
            role         TEXT NOT NULL,
            content_kind INTEGER NOT NULL,
            text         TEXT NOT NULL,
            parts        TEXT,
            tool_calls   TEXT,
            tool_call_id TEXT,
            name         TEXT,
            token_count  INTEGER,
            created_at   REAL NOT NULL,
            archived     INTEGER NOT NULL DEFAULT 0
        )
        """,
        "CREATE UNIQUE INDEX messages_by_session ON messages(session_id, seq)",
        "CREATE INDEX messages_active ON messages(session_id, archived, seq)",
    ),
)

_V2 = Migration(
    version=2,
    description="full-text index over message text, scoped by a per-chat tag",
    statements=(
        # The chat tag is one opaque token per chat, so an FTS query can be pinned to a chat
        # exactly (a raw chat id like "telegram:-100" tokenises into several words).
        "ALTER TABLE messages ADD COLUMN chat_tag TEXT NOT NULL DEFAULT ''",
        # Length and per-chat totals feed the chat-local ranking without reading message text.
        "ALTER TABLE messages ADD COLUMN text_chars INTEGER NOT NULL DEFAULT 0",
        "UPDATE messages SET text_chars = length(text)",
        """
        CREATE TABLE chat_stats (
            chat_id  TEXT PRIMARY KEY,
            messages INTEGER NOT NULL,
            chars    INTEGER NOT NULL
        ) WITHOUT ROWID
        """,
        "INSERT INTO chat_stats SELECT chat_id, count(*), CAST(total(text_chars) AS INTEGER) FROM messages GROUP BY chat_id",
        f"""
        CREATE VIRTUAL TABLE messages_fts USING fts5(
            text, chat_tag, content='messages', content_rowid='id', tokenize='{FTS_TOKENIZER}'
        )
        """,
        # No insert trigger: FTS5 flushes its pending terms at every statement savepoint, so a
        # per-row trigger writes one tiny segment per message (10x slower). The store indexes
        # each batch with one INSERT … SELECT in the same transaction instead.
        """
        CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, text, chat_tag)
            VALUES ('delete', old.id, old.text, old.chat_tag);
        END
        """,
        # Rows written by a v1 store get their tag, then the index is built from the table.
        "UPDATE messages SET chat_tag = chat_tag_of(chat_id) WHERE chat_tag = ''",
        "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')",
    ),
)

_V3 = Migration(
    version=3,
    description="full-text indexing in batches: new rows wait in fts_pending until a batch, a search or a merge",
    statements=(
        # Each commit that indexes adds an index segment: one per append cost about half of the append
        # (~70 us) and left many small segments for searches to visit. Rows now wait here instead.
        "CREATE TABLE fts_pending (id INTEGER PRIMARY KEY)",
        "DROP TRIGGER messages_fts_delete",
        # A row still waiting is not in the index: FTS5's 'delete' must only be given rows it holds
        # (one statement after the other, in this order, within the one trigger).
        """
        CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, text, chat_tag)
            SELECT 'delete', old.id, old.text, old.chat_tag WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
            DELETE FROM fts_pending WHERE id = old.id;
        END
        """,
    ),
)

MIGRATIONS: tuple[Migration, ...] = (_V1, _V2, _V3)
SCHEMA_VERSION = MIGRATIONS[-1].version


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def apply_migrations(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Bring the database up to the last of `migrations`; return the versions applied.

    The caller holds no transaction; this opens `BEGIN IMMEDIATE` itself and
    re-reads the version under the write lock, so a concurrent opener that
    already migrated makes this a no-op.

    Raises:
        StoreError: the file was written by a newer Chorus (its version is above the last step).
    """
    target = migrations[-1].version if migrations else 0
    if schema_version(conn) == target:
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(conn)
        if current > target:
            raise StoreError(
                f"state.db is at schema version {current}, newer than this Chorus understands ({target}); "
                "upgrade Chorus or point home at another directory"
            )
        applied = []
        for step in migrations:
            if step.version <= current:
                continue
            for statement in step.statements:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {int(step.version)}")
            applied.append(step.version)
        conn.execute("COMMIT")
        return applied
    except BaseException:
        conn.execute("ROLLBACK")
        raise
