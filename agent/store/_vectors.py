"""Message embeddings in SQLite `state.db`: float32 BLOBs, ranked by cosine (numpy) within one chat.

Owns the `message_vectors` table (created on first use by the `semantic`
memory provider, so a store without it never carries it) and its SQL.
sqlite-vec is not used: this Python's `sqlite3` cannot load extensions, and
loading it through a second SQLite library (apsw) on the same file in one
process risks corrupting it (POSIX locks are per process; sqlite.org,
"How To Corrupt", 2.2.1). Ranking reads one chat's newest
`MAX_RANKED_VECTORS` vectors and multiplies them as one numpy matrix.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

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

KIND: Final = "SQLite BLOB, cosine ranked per chat with numpy"

SCHEMA: Final = (
    """
    CREATE TABLE IF NOT EXISTS message_vectors (
        message_id INTEGER PRIMARY KEY,
        chat_id    TEXT NOT NULL,
        model      TEXT NOT NULL,
        vector     BLOB NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS message_vectors_by_chat ON message_vectors(chat_id, model, message_id)",
    # SQLite may reuse the id of a deleted newest message (/undo): its vector must go with it.
    """
    CREATE TRIGGER IF NOT EXISTS message_vectors_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_vectors WHERE message_id = old.id;
    END
    """,
)

_ROLES = ",".join(f"'{role}'" for role in EMBEDDED_ROLES)
_PENDING_SQL = f"""
SELECT m.id, substr(m.text, 1, {MAX_EMBED_CHARS}) AS text FROM messages m
WHERE m.session_id IN (SELECT id FROM sessions WHERE chat_id = ?) AND m.chat_id = ?
  AND m.role IN ({_ROLES}) AND m.text_chars > 0
  AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.model = ?)
ORDER BY m.id DESC LIMIT ?
"""
_ADD_SQL = """
INSERT OR REPLACE INTO message_vectors (message_id, chat_id, model, vector)
SELECT id, chat_id, ?, ? FROM messages WHERE id = ? AND chat_id = ?
"""
# The unarchived messages of an open session are in the model's context already.
_PAST_ONLY = "AND NOT (m.archived = 0 AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = m.session_id AND s.active = 1))"
_CANDIDATES_SQL = """
SELECT v.message_id, v.vector FROM message_vectors v JOIN messages m ON m.id = v.message_id AND m.chat_id = v.chat_id
WHERE v.chat_id = ? AND v.model = ? {past_only} ORDER BY v.message_id DESC LIMIT ?
"""

_RECALLED_SQL = "SELECT id, role, created_at, substr(text, 1, {chars}) AS text FROM messages WHERE id IN ({marks}) AND chat_id = ?"


def create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def pending(conn: sqlite3.Connection, chat_id: str, model: str, limit: int) -> list[PendingText]:
    rows = conn.execute(_PENDING_SQL, (chat_id, chat_id, model, limit)).fetchall()
    return [PendingText(int(row[0]), str(row[1])) for row in rows]


def add(conn: sqlite3.Connection, chat_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
    before = conn.total_changes
    conn.executemany(_ADD_SQL, [(model, pack(unit(values)), message_id, chat_id) for message_id, values in vectors])
    return conn.total_changes - before


def nearest(
    conn: sqlite3.Connection, chat_id: str, query: QueryVector, limit: int, *, past_only: bool
) -> list[tuple[int, float]]:
    sql = _CANDIDATES_SQL.format(past_only=_PAST_ONLY if past_only else "")
    rows = conn.execute(sql, (chat_id, query.model, MAX_RANKED_VECTORS)).fetchall()
    return best_by_cosine([(int(row[0]), bytes(row[1])) for row in rows], query.values, limit)


def recalled(conn: sqlite3.Connection, chat_id: str, message_ids: Sequence[int]) -> list[RecalledMessage]:
    if not message_ids:
        return []
    sql = _RECALLED_SQL.format(chars=RECALL_CHARS, marks=",".join("?" * len(message_ids)))
    rows = {row[0]: row for row in conn.execute(sql, (*message_ids, chat_id))}
    return [RecalledMessage(int(row[0]), str(row[1]), float(row[2]), str(row[3])) for row in in_order(rows, message_ids)]
