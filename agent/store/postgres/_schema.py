"""The PostgreSQL schema of the session store as ordered migration steps, and the code that applies them.

Owns table layout and the `chorus_schema` version row. A database is at
version N when steps 1..N have run; `apply_migrations` runs the missing steps
in one transaction under an advisory lock, so replicas starting together
migrate the database exactly once. The layout mirrors the SQLite store
(`agent.store._schema`); full-text search uses a `tsvector` column built with
the `simple` configuration (no stemming, so every language works alike) over
text already folded for case and diacritics by `agent.store.postgres._text`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from agent.store._schema import Migration, StoreError

# Any constant works; it only has to be the same for every replica of this schema.
MIGRATION_LOCK_KEY = 0x63686F727573  # "chorus"

_V1 = Migration(
    version=1,
    description="sessions, messages with a full-text vector, per-chat totals",
    statements=(
        """
        CREATE TABLE sessions (
            id         TEXT PRIMARY KEY,
            key        TEXT NOT NULL,
            platform   TEXT NOT NULL,
            chat_id    TEXT NOT NULL,
            parent_id  TEXT REFERENCES sessions(id),
            created_at DOUBLE PRECISION NOT NULL,
            ended_at   DOUBLE PRECISION,
            active     BOOLEAN NOT NULL DEFAULT TRUE,
            title      TEXT,
            meta       JSONB,
            ord        BIGSERIAL NOT NULL
        )
        """,
        # At most one open session per routing key, whichever replica asks first.
        "CREATE UNIQUE INDEX sessions_one_active_per_key ON sessions(key) WHERE active",
        "CREATE INDEX sessions_by_chat ON sessions(chat_id, created_at)",
        "CREATE INDEX sessions_by_parent ON sessions(parent_id) WHERE parent_id IS NOT NULL",
        """
        CREATE TABLE messages (
            id           BIGSERIAL PRIMARY KEY,
            session_id   TEXT NOT NULL REFERENCES sessions(id),
            chat_id      TEXT NOT NULL,
            seq          INTEGER NOT NULL,
            role         TEXT NOT NULL,
            content_kind SMALLINT NOT NULL,
            text         TEXT NOT NULL,
            text_chars   INTEGER NOT NULL,
            parts        TEXT,
            tool_calls   TEXT,
            tool_call_id TEXT,
            name         TEXT,
            token_count  INTEGER,
            created_at   DOUBLE PRECISION NOT NULL,
            archived     INTEGER NOT NULL DEFAULT 0,
            tsv          TSVECTOR NOT NULL
        )
        """,
        "CREATE UNIQUE INDEX messages_by_session ON messages(session_id, seq)",
        "CREATE INDEX messages_active ON messages(session_id, archived, seq)",
        # The chat tag is a lexeme of every vector, so one GIN lookup intersects "this chat" with "this word".
        # Searches scan the GIN pending list linearly, so it is kept small (merged every 256 kB of writes);
        # compact_index() merges it at once.
        "CREATE INDEX messages_tsv ON messages USING gin (tsv) WITH (gin_pending_list_limit = 256)",
        """
        CREATE TABLE chat_stats (
            chat_id  TEXT PRIMARY KEY,
            messages BIGINT NOT NULL,
            chars    BIGINT NOT NULL
        )
        """,
    ),
)

_V2 = Migration(
    version=2,
    description="per-chat note texts (MEMORY.md, USER.md, drift state, backups, staged writes)",
    statements=(
        """
        CREATE TABLE notes_files (
            chat_id    TEXT NOT NULL,
            name       TEXT NOT NULL,
            text       TEXT NOT NULL,
            version    BIGINT NOT NULL DEFAULT 1,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (chat_id, name)
        )
        """,
        # Every change bumps the version, a hand-made UPDATE as well as the tool's own write.
        """
        CREATE FUNCTION notes_files_bump() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.version := OLD.version + 1;
            RETURN NEW;
        END $$
        """,
        """
        CREATE TRIGGER notes_files_version BEFORE UPDATE ON notes_files
        FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text) EXECUTE FUNCTION notes_files_bump()
        """,
    ),
)

_V3 = Migration(
    version=3,
    description="skills (SKILL.md and supporting files) and their trash",
    statements=(
        """
        CREATE TABLE skills_files (
            name       TEXT NOT NULL,
            relative   TEXT NOT NULL,
            content    TEXT NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (name, relative)
        )
        """,
        """
        CREATE TABLE skills_trash (
            trashed_as TEXT NOT NULL,
            name       TEXT NOT NULL,
            relative   TEXT NOT NULL,
            content    TEXT NOT NULL,
            PRIMARY KEY (trashed_as, relative)
        )
        """,
    ),
)

_V4 = Migration(
    version=4,
    description="per-chat settings and usage, pairing codes and approved senders, learned model windows",
    statements=(
        """
        CREATE TABLE chats (
            chat              TEXT PRIMARY KEY,
            platform          TEXT NOT NULL DEFAULT '',
            model             TEXT,
            prompt_tokens     BIGINT NOT NULL DEFAULT 0,
            completion_tokens BIGINT NOT NULL DEFAULT 0,
            requests          BIGINT NOT NULL DEFAULT 0
        )
        """,
        """
        CREATE TABLE pairing_codes (
            code       TEXT PRIMARY KEY,
            platform   TEXT NOT NULL,
            user_id    TEXT NOT NULL,
            user_name  TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL,
            UNIQUE (platform, user_id)
        )
        """,
        """
        CREATE TABLE pairing_approved (
            platform    TEXT NOT NULL,
            user_id     TEXT NOT NULL,
            user_name   TEXT NOT NULL,
            approved_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (platform, user_id)
        )
        """,
        """
        CREATE TABLE model_windows (
            key        TEXT PRIMARY KEY,
            tokens     INTEGER NOT NULL,
            stated     BOOLEAN NOT NULL,
            learned_at DOUBLE PRECISION NOT NULL
        )
        """,
    ),
)

MIGRATIONS: tuple[Migration, ...] = (_V1, _V2, _V3, _V4)
SCHEMA_VERSION = MIGRATIONS[-1].version


def schema_version(conn: psycopg.Connection[dict[str, Any]]) -> int:
    """The version the database is at (0: no Chorus schema yet)."""
    row = conn.execute("SELECT to_regclass('chorus_schema') IS NOT NULL AS present").fetchone()
    if not row or not row["present"]:
        return 0
    version = conn.execute("SELECT max(version) AS version FROM chorus_schema").fetchone()
    return int(version["version"]) if version and version["version"] is not None else 0


def apply_migrations(conn: psycopg.Connection[dict[str, Any]], migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Bring the database up to the last of `migrations`; return the versions applied.

    Raises:
        StoreError: the database was written by a newer Chorus (its version is above the last step).
    """
    target = migrations[-1].version if migrations else 0
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        conn.execute("CREATE TABLE IF NOT EXISTS chorus_schema (version INTEGER NOT NULL)")
        current = schema_version(conn)
        if current > target:
            raise StoreError(
                f"the PostgreSQL store is at schema version {current}, newer than this Chorus understands "
                f"({target}); upgrade Chorus or point store.url at another database"
            )
        applied = []
        for step in migrations:
            if step.version <= current:
                continue
            for statement in step.statements:
                conn.execute(statement)
            applied.append(step.version)
        if applied:
            conn.execute("DELETE FROM chorus_schema")
            conn.execute("INSERT INTO chorus_schema (version) VALUES (%s)", (applied[-1],))
    return applied
