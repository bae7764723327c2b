"""The PostgreSQL store's batch of appends (`PostgresSessionStore.append_many`) in three statements, whatever its size.

A group commit hands the store the appends of every chat whose turn ended
while the previous batch was written. Each used to cost six round trips of its
own (a savepoint, its session's row locked, its last seq, the insert, its
chat's counters and the release), so a batch saved only its BEGIN and
COMMIT: at a hundred chats a message cost nearly what it did alone. `append_batch`
locks the batch's sessions in one statement (in id order: replicas batching
the same sessions queue behind each other, never deadlock), reads their last
seqs in a second (after the locks, so it sees every append committed before),
and inserts every row and counts it for its chat in a third. What each
append gets is unchanged: an unknown session or an unreadable message keeps
its own entry out and the rest go in; a statement the database refuses fails
the batch, which the store then writes again entry by entry.
"""
from __future__ import annotations

from collections.abc import Sequence

from agent.messages import Message
from agent.store._schema import StoreError
from agent.store.postgres._rows import Conn, Row, insert_rows, message_row
from agent.store.records import StoredMessage

_LOCK_SESSIONS = "SELECT id, chat_id FROM sessions WHERE id = ANY(%s) ORDER BY id FOR UPDATE"
# One index probe a session (max over its (session_id, seq) index), not a scan of its messages.
_LAST_SEQS = """
SELECT u.id, (SELECT max(m.seq) FROM messages AS m WHERE m.session_id = u.id) AS last FROM unnest(%s::text[]) AS u(id)
"""


def append_batch(
    conn: Conn, batch: Sequence[tuple[str, Sequence[Message]]], *, now: float, where: str
) -> list[Exception | None]:
    """The appends of `batch` in the open transaction; per entry None or the error that kept it out.

    Entries of one session are numbered as if appended one after another. A statement that fails raises
    (nothing of the batch is then kept: the caller's transaction rolls back).
    """
    wanted = sorted({session_id for session_id, messages in batch if messages})
    chats: dict[str, str] = {}
    last: dict[str, int] = {}
    if wanted:
        chats = {row["id"]: row["chat_id"] for row in conn.execute(_LOCK_SESSIONS, (wanted,))}
    if chats:
        found = conn.execute(_LAST_SEQS, (list(chats),))
        last = {row["id"]: -1 if row["last"] is None else int(row["last"]) for row in found}
    outcomes: list[Exception | None] = []
    rows: list[Row] = []
    for session_id, messages in batch:
        chat_id = chats.get(session_id)
        if not messages:
            outcomes.append(None)
        elif chat_id is None:
            outcomes.append(StoreError(f"no session {session_id!r} in {where}"))
        else:
            first = last[session_id] + 1
            try:
                entry = [message_row(session_id, chat_id, StoredMessage(first + offset, message, 0, None, now))
                         for offset, message in enumerate(messages)]
            except ValueError as exc:
                outcomes.append(exc)
                continue
            last[session_id] = first + len(entry) - 1
            rows.extend(entry)
            outcomes.append(None)
    insert_rows(conn, rows)
    return outcomes


__all__ = ["append_batch"]
