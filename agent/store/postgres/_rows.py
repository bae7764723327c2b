"""Messages as the PostgreSQL store writes them: a message's row, and the statement every writer inserts rows with.

An append, a batch of appends, a compression and a copied session all build
their rows with `message_row` (the columns of `ROW_COLUMNS`), insert any
number of them, of any sessions, in one statement that also adds them to
their chats' counters (`insert_rows`: arrays unnested server-side). Bulk
imports stream the same rows with COPY.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from agent.storable import storable
from agent.store.postgres._text import index_text
from agent.store.records import StoredMessage, encode_content, encode_tool_calls

ROW_COLUMNS = (
    "session_id", "chat_id", "seq", "role", "content_kind", "text", "text_chars", "parts", "tool_calls",
    "tool_call_id", "name", "token_count", "created_at", "archived", "words",
)

# The rows and their chats' counters in one statement: the counts come from what was inserted, chat by chat
# in chat order (replicas counting the same chats take their rows' locks in one order).
_INSERT_ROWS = """
WITH inserted AS (
    INSERT INTO messages (session_id, chat_id, seq, role, content_kind, text, text_chars, parts, tool_calls,
                          tool_call_id, name, token_count, created_at, archived, tsv)
    SELECT u.session, u.chat, u.seq, u.role, u.kind, u.text, u.chars, u.parts, u.calls, u.call_id, u.name, u.tokens,
           u.created, u.archived, to_tsvector('simple', u.words)
    FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[], %s::smallint[], %s::text[], %s::int[], %s::text[],
                %s::text[], %s::text[], %s::text[], %s::int[], %s::float8[], %s::int[], %s::text[])
         AS u(session, chat, seq, role, kind, text, chars, parts, calls, call_id, name, tokens, created, archived, words)
    RETURNING chat_id, text_chars
)
INSERT INTO chat_stats (chat_id, messages, chars)
SELECT chat_id, count(*), sum(text_chars) FROM inserted GROUP BY chat_id ORDER BY chat_id
ON CONFLICT (chat_id) DO UPDATE SET messages = chat_stats.messages + excluded.messages,
                                    chars = chat_stats.chars + excluded.chars
"""

Row = tuple[object, ...]
Conn = psycopg.Connection[dict[str, Any]]


def clean(text: str | None) -> str | None:
    """`text` without NUL and lone surrogates (as U+FFFD), which PostgreSQL's text type cannot hold."""
    return None if text is None else storable(text)


def message_row(session_id: str, chat_id: str, row: StoredMessage) -> Row:
    """One message as a row of `ROW_COLUMNS`."""
    message = row.message
    kind, text, parts = encode_content(message)
    text = clean(text) or ""
    return (
        session_id, chat_id, row.seq, message.role, kind, text, len(text), clean(parts),
        clean(encode_tool_calls(message.tool_calls)), clean(message.tool_call_id), clean(message.name),
        row.token_count, row.created_at, row.archived, index_text(text, chat_id),
    )


def insert_rows(conn: Conn, rows: Sequence[Row]) -> None:
    """Insert `rows` (any sessions) and add them to their chats' message and character counters, one statement."""
    if rows:
        conn.execute(_INSERT_ROWS, [list(column) for column in zip(*rows, strict=True)])


__all__ = ["ROW_COLUMNS", "Conn", "Row", "clean", "insert_rows", "message_row"]
