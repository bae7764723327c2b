"""Message embeddings in PostgreSQL: a pgvector `vector` column where the extension exists, else `bytea`.

Owns the `message_vectors` table (created on first use by the `semantic`
memory provider, under the migration lock so replicas create it once) and its
SQL. With pgvector (`CREATE EXTENSION IF NOT EXISTS vector`) the ranking is
its cosine distance operator `<=>`; where the extension is not installed
(Debian 12 ships no pgvector package) the vectors are packed float32 `bytea`,
as in SQLite, ranked in this process with numpy (a cosine over `real[]` in
SQL took 0.8 s for a chat of a thousand). Either way the ranking reads only
the asking chat's rows, newest `MAX_RANKED_VECTORS` first.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import psycopg
import structlog

from agent.store._schema import StoreError
from agent.store.postgres._schema import MIGRATION_LOCK_KEY
from agent.store.vectors import (
    EMBEDDED_ROLES,
    MAX_EMBED_CHARS,
    MAX_RANKED_VECTORS,
    RECALL_CHARS,
    PendingText,
    QueryVector,
    RecalledMessage,
    best_by_cosine,
    in_order,
    pack,
    unit,
)

log = structlog.get_logger(__name__)

Conn = psycopg.Connection[dict[str, Any]]

PGVECTOR: Final = "vector"
BYTEA: Final = "bytea"
KINDS: Final = {PGVECTOR: "PostgreSQL pgvector", BYTEA: "PostgreSQL bytea (no pgvector), cosine ranked per chat with numpy"}

_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS message_vectors (
    message_id BIGINT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    chat_id    TEXT NOT NULL,
    model      TEXT NOT NULL,
    vector     {kind} NOT NULL
)
"""
_INDEX_SQL = "CREATE INDEX IF NOT EXISTS message_vectors_by_chat ON message_vectors(chat_id, model, message_id)"
_COLUMN_SQL = """
SELECT format_type(atttypid, atttypmod) AS kind FROM pg_attribute
WHERE attrelid = to_regclass('message_vectors') AND attname = 'vector'
"""
_PENDING_SQL = f"""
SELECT m.id, substr(m.text, 1, {MAX_EMBED_CHARS}) AS text FROM messages m
WHERE m.session_id IN (SELECT id FROM sessions WHERE chat_id = %(chat)s)  -- by index: messages has none on chat_id
  AND m.chat_id = %(chat)s AND m.role = ANY(%(roles)s) AND m.text_chars > 0
  AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.model = %(model)s)
ORDER BY m.id DESC LIMIT %(limit)s
"""
_ADD_SQL = """
INSERT INTO message_vectors (message_id, chat_id, model, vector)
SELECT id, chat_id, %(model)s, %(vector)s::{kind} FROM messages WHERE id = %(id)s AND chat_id = %(chat)s
ON CONFLICT (message_id) DO UPDATE SET model = excluded.model, vector = excluded.vector
"""
_PAST_ONLY = "AND NOT (m.archived = 0 AND s.active)"
_CANDIDATES_SQL = """
    SELECT v.message_id, v.vector FROM message_vectors v
    JOIN messages m ON m.id = v.message_id AND m.chat_id = v.chat_id JOIN sessions s ON s.id = m.session_id
    WHERE v.chat_id = %(chat)s AND v.model = %(model)s {past_only}
    ORDER BY v.message_id DESC LIMIT %(cap)s
"""
_NEAREST_SQL = f"""
SELECT c.message_id, 1 - (c.vector <=> %(query)s::vector) AS similarity FROM ({_CANDIDATES_SQL}) AS c
ORDER BY c.vector <=> %(query)s::vector, c.message_id DESC LIMIT %(limit)s
"""

_RECALLED_SQL = f"""
SELECT id, role, created_at, substr(text, 1, {RECALL_CHARS}) AS text FROM messages
WHERE id = ANY(%(ids)s) AND chat_id = %(chat)s
"""


def create(conn: Conn) -> str:
    """Create the table (and the extension when it can); returns the column kind in use (`PGVECTOR` or `ARRAY`)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        existing = conn.execute(_COLUMN_SQL).fetchone()
        if existing is not None:
            return PGVECTOR if existing["kind"].startswith(PGVECTOR) else BYTEA
        kind = BYTEA
        try:
            with conn.transaction():  # a savepoint: a missing extension must not end the outer transaction
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            kind = PGVECTOR
        except psycopg.Error as exc:
            log.warning("store.pgvector_unavailable", error_type=type(exc).__name__, detail=str(exc).splitlines()[0])
        conn.execute(_TABLE_SQL.format(kind=kind))
        conn.execute(_INDEX_SQL)
        return kind


def _literal(kind: str, values: Sequence[float]) -> str | bytes:
    floats = unit(values)
    return "[" + ",".join(repr(v) for v in floats) + "]" if kind == PGVECTOR else pack(floats)


def pending(conn: Conn, chat_id: str, model: str, limit: int) -> list[PendingText]:
    params = {"chat": chat_id, "roles": list(EMBEDDED_ROLES), "model": model, "limit": limit}
    return [PendingText(int(row["id"]), str(row["text"])) for row in conn.execute(_PENDING_SQL, params)]


def _require(kind: str) -> None:
    if kind not in KINDS:
        raise StoreError("message vectors are not enabled in this store; the semantic memory provider enables them")


def add(conn: Conn, kind: str, chat_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
    _require(kind)
    rows = [
        {"model": model, "vector": _literal(kind, values), "id": message_id, "chat": chat_id}
        for message_id, values in vectors
    ]
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(_ADD_SQL.format(kind=kind), rows)
        return max(0, cursor.rowcount)


def nearest(
    conn: Conn, kind: str, chat_id: str, query: QueryVector, limit: int, *, past_only: bool
) -> list[tuple[int, float]]:
    _require(kind)
    params: dict[str, object] = {"chat": chat_id, "model": query.model, "cap": MAX_RANKED_VECTORS, "limit": limit}
    where = {"past_only": _PAST_ONLY if past_only else ""}
    if kind == PGVECTOR:
        params["query"] = _literal(kind, query.values)
        rows = conn.execute(_NEAREST_SQL.format(**where), params)
        return [(int(row["message_id"]), float(row["similarity"] or 0.0)) for row in rows]
    # Binary results: a bytea in text form is hex, which doubles the bytes and costs a decode per row.
    rows = conn.execute(_CANDIDATES_SQL.format(**where), params, binary=True)
    return best_by_cosine([(int(row["message_id"]), bytes(row["vector"])) for row in rows], query.values, limit)


def recalled(conn: Conn, chat_id: str, message_ids: Sequence[int]) -> list[RecalledMessage]:
    if not message_ids:
        return []
    rows = {row["id"]: row for row in conn.execute(_RECALLED_SQL, {"ids": list(message_ids), "chat": chat_id})}
    return [RecalledMessage(int(row["id"]), str(row["role"]), float(row["created_at"]), str(row["text"]))
            for row in in_order(rows, message_ids)]
