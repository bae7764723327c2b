"""The SQLite store's full-text index, filled in batches (table `fts_pending`, schema migration 3).

An insert queues its rows' ids instead of indexing them; the transaction that
brings this process's queued rows to `FTS_BATCH_ROWS` indexes the whole queue,
and whatever reads the index (a search, a merge) first indexes what waits, so
it sees every committed message. Each indexing commit adds an index segment:
one per append cost about half of the append (~70 of ~150 us of CPU) and left
many small segments for searches to visit; one per batch costs a fraction.
"""
from __future__ import annotations

import sqlite3

# About one segment per 128 turns of two messages (fewer rows left CPU on the table, more gained little).
FTS_BATCH_ROWS = 256

_QUEUE = "INSERT INTO fts_pending (id) SELECT id FROM messages WHERE session_id = ? AND seq > ?"
_INDEX = """
INSERT INTO messages_fts(rowid, text, chat_tag)
SELECT m.id, m.text, m.chat_tag FROM fts_pending AS p JOIN messages AS m ON m.id = p.id ORDER BY p.id
"""


def queue_rows(conn: sqlite3.Connection, session_id: str, after_seq: int) -> None:
    """Queue the session's rows past `after_seq` (just inserted) for the index."""
    conn.execute(_QUEUE, (session_id, after_seq))


def queue_rows_many(conn: sqlite3.Connection, appended: list[tuple[str, int]]) -> None:
    """`queue_rows` for several (session id, seq before its rows) in one call."""
    conn.executemany(_QUEUE, appended)


def index_queued(conn: sqlite3.Connection) -> None:
    """Index every queued row, any process's, in the open transaction, and empty the queue."""
    conn.execute(_INDEX)
    conn.execute("DELETE FROM fts_pending")


def rows_wait(conn: sqlite3.Connection) -> bool:
    """Whether any row waits to be indexed."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM fts_pending)").fetchone()[0])
