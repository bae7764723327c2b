"""The SQLite store's message inserts: the rows of an append, and a group commit's appends in a few statements.

A batch of appends (`SqliteSessionStore.append_many`, one per chat whose turn
ended while the previous batch was written) used to cost six statements an
append: a savepoint, the session's chat and last seq, the insert, the
full-text queue, the chat's counters and the release. `append_batch` writes
the whole batch in four calls, whatever its size: the sessions' chats and
last seqs in one query, every row in one `executemany`, the full-text queue
in another and one counter upsert per chat in a third. What each append gets is unchanged: an unknown
session or an unreadable message keeps its own entry out (nothing of it is
written) and the rest go in; should a statement fail (a row the database
refuses), `append_entries` writes the batch again entry by entry. A lone
append goes the same way: one code path reads and writes every append.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from agent.messages import Message
from agent.store._index import queue_rows_many
from agent.store._query import chat_tag
from agent.store._schema import StoreError
from agent.store.records import encode_content, encode_tool_calls, valid_utf8

INSERT_MESSAGE = """
INSERT INTO messages (session_id, chat_id, chat_tag, seq, role, content_kind, text, text_chars, parts, tool_calls,
                      tool_call_id, name, token_count, created_at, archived)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
COUNT_CHAT = """
INSERT INTO chat_stats (chat_id, messages, chars) VALUES (?, ?, ?)
ON CONFLICT (chat_id) DO UPDATE SET messages = messages + excluded.messages, chars = chars + excluded.chars
"""
# Session ids read per query: far below SQLite's limit of host parameters (32,766 since 3.32).
_IDS_PER_QUERY = 500

Row = tuple[object, ...]


def optional_utf8(text: str | None) -> str | None:
    return None if text is None else valid_utf8(text)


def message_rows(
    session_id: str, chat_id: str, first_seq: int, messages: Sequence[Message], token_counts: Sequence[int] | None,
    now: float, archived: int = 0,
) -> tuple[list[Row], int]:
    """The `INSERT_MESSAGE` rows of `messages`, numbered from `first_seq`, and the characters of their texts."""
    tag = chat_tag(chat_id)
    rows: list[Row] = []
    chars = 0
    for offset, message in enumerate(messages):
        kind, text, parts = encode_content(message)
        chars += len(text)
        rows.append((
            session_id, chat_id, tag, first_seq + offset, message.role, kind, text, len(text), parts,
            encode_tool_calls(message.tool_calls), optional_utf8(message.tool_call_id), optional_utf8(message.name),
            token_counts[offset] if token_counts is not None else None, now, archived,
        ))
    return rows, chars


def _chats_and_last_seqs(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, tuple[str, int]]:
    """Per known session id: its chat and its last seq (-1 with no message)."""
    found: dict[str, tuple[str, int]] = {}
    for start in range(0, len(session_ids), _IDS_PER_QUERY):
        chunk = session_ids[start:start + _IDS_PER_QUERY]
        marks = ",".join("?" * len(chunk))
        for session_id, chat_id, last in conn.execute(
            f"SELECT s.id, s.chat_id, (SELECT coalesce(max(m.seq), -1) FROM messages AS m WHERE m.session_id = s.id) "
            f"FROM sessions AS s WHERE s.id IN ({marks})",
            chunk,
        ):
            found[session_id] = (chat_id, last)
    return found


def append_batch(
    conn: sqlite3.Connection, batch: Sequence[tuple[str, Sequence[Message]]], *, now: float, where: str
) -> tuple[list[Exception | None], int]:
    """The appends of `batch` inside the open transaction; per entry None or the error that kept it out,
    and the number of rows queued for the full-text index.

    An entry whose session is unknown or whose messages cannot be stored (`ValueError`) writes nothing;
    the others are numbered as if appended one after another. A failing statement raises (see
    `append_entries`, which then writes the batch entry by entry).
    """
    wanted = list(dict.fromkeys(session_id for session_id, messages in batch if messages))
    known = _chats_and_last_seqs(conn, wanted)
    outcomes: list[Exception | None] = []
    rows: list[Row] = []
    queued_after: dict[str, int] = {}  # session -> its last seq before the batch: the index queues the rows past it
    counts: dict[str, list[int]] = {}  # chat -> [messages, chars], summed over the batch
    for session_id, messages in batch:
        if not messages:
            outcomes.append(None)
            continue
        session = known.get(session_id)
        if session is None:
            outcomes.append(StoreError(f"no session {session_id!r} in {where}"))
            continue
        chat_id, last = session
        try:
            entry, chars = message_rows(session_id, chat_id, last + 1, messages, None, now)
        except ValueError as exc:
            outcomes.append(exc)
            continue
        known[session_id] = (chat_id, last + len(entry))
        rows.extend(entry)
        queued_after.setdefault(session_id, last)
        count = counts.setdefault(chat_id, [0, 0])
        count[0] += len(entry)
        count[1] += chars
        outcomes.append(None)
    if rows:
        conn.executemany(INSERT_MESSAGE, rows)
        queue_rows_many(conn, list(queued_after.items()))
        conn.executemany(COUNT_CHAT, [(chat_id, n, chars) for chat_id, (n, chars) in counts.items()])
    return outcomes, len(rows)


def append_entries(
    conn: sqlite3.Connection, batch: Sequence[tuple[str, Sequence[Message]]], *, now: float, where: str
) -> tuple[list[Exception | None], int]:
    """`append_batch` under a savepoint; if one of its statements fails, rolled back and written again entry by
    entry, each under a savepoint of its own, so the entry the database refuses leaves the others in."""
    conn.execute("SAVEPOINT append_batch")
    try:
        written = append_batch(conn, batch, now=now, where=where)
    except (ValueError, sqlite3.IntegrityError):
        conn.execute("ROLLBACK TO append_batch")
        conn.execute("RELEASE append_batch")
        return _append_each(conn, batch, now=now, where=where)
    conn.execute("RELEASE append_batch")
    return written


def _append_each(
    conn: sqlite3.Connection, batch: Sequence[tuple[str, Sequence[Message]]], *, now: float, where: str
) -> tuple[list[Exception | None], int]:
    """Each entry alone, under a savepoint rolled back when it fails."""
    outcomes: list[Exception | None] = []
    queued = 0
    for entry in batch:
        conn.execute("SAVEPOINT append_one")
        try:
            (outcome,), rows = append_batch(conn, [entry], now=now, where=where)
        except (ValueError, sqlite3.IntegrityError) as exc:
            outcome, rows = exc, 0
        if outcome is None:
            queued += rows
        else:
            conn.execute("ROLLBACK TO append_one")
        conn.execute("RELEASE append_one")
        outcomes.append(outcome)
    return outcomes, queued


__all__ = ["COUNT_CHAT", "INSERT_MESSAGE", "append_batch", "append_entries", "message_rows", "optional_utf8"]
