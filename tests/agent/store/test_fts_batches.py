"""The full-text index is filled in batches (`agent/store/_index.py`): a search still sees every committed message,
and rows deleted before they were indexed leave the index consistent."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from agent.messages import assistant, user
from agent.store import SqliteSessionStore
from agent.store._index import FTS_BATCH_ROWS


def _queued(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM fts_pending").fetchone()[0])
    finally:
        conn.close()


def _index_is_consistent(path: Path) -> None:
    """FTS5's own check against the messages table (raises 'database disk image is malformed' if not)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def test_a_search_sees_a_row_still_queued(sqlite_store: SqliteSessionStore) -> None:
    session = sqlite_store.ensure_session("web:c", platform="web", chat_id="web:c")
    sqlite_store.append(session.id, [user("the staging port is 8443"), assistant("noted")])
    assert _queued(sqlite_store.path) == 2
    hits = sqlite_store.search("web:c", "staging port")
    assert [hit.seq for hit in hits] == [0]
    assert _queued(sqlite_store.path) == 0
    _index_is_consistent(sqlite_store.path)


def test_a_batch_is_indexed_by_the_transaction_that_fills_it(sqlite_store: SqliteSessionStore) -> None:
    session = sqlite_store.ensure_session("web:c", platform="web", chat_id="web:c")
    for turn in range(FTS_BATCH_ROWS // 2 - 1):
        sqlite_store.append_many([(session.id, [user(f"question {turn}"), assistant(f"answer {turn}")])])
    assert _queued(sqlite_store.path) == FTS_BATCH_ROWS - 2
    sqlite_store.append_many([(session.id, [user("the last question"), assistant("the last answer")])])
    assert _queued(sqlite_store.path) == 0
    _index_is_consistent(sqlite_store.path)


def test_rows_deleted_before_and_after_indexing_leave_the_index_consistent(sqlite_store: SqliteSessionStore) -> None:
    session = sqlite_store.ensure_session("web:c", platform="web", chat_id="web:c")
    sqlite_store.append(session.id, [user("alpha kept"), assistant("beta indexed")])
    assert sqlite_store.search("web:c", "beta")  # both rows indexed now
    sqlite_store.append(session.id, [user("gamma queued"), assistant("delta queued")])
    assert sqlite_store.delete_last_active(session.id, 3) == 3  # two queued rows and one indexed row
    _index_is_consistent(sqlite_store.path)
    assert _queued(sqlite_store.path) == 0
    assert sqlite_store.search("web:c", "beta") == []
    assert sqlite_store.search("web:c", "gamma") == []
    assert [hit.seq for hit in sqlite_store.search("web:c", "alpha")] == [0]
    # The freed ids are used again: the new rows are queued and found like any other.
    sqlite_store.append(session.id, [user("epsilon new")])
    assert [hit.seq for hit in sqlite_store.search("web:c", "epsilon")] == [1]
    _index_is_consistent(sqlite_store.path)


def test_rows_queued_by_another_process_are_found(home: Path) -> None:
    path = home / "state.db"
    with SqliteSessionStore(path) as writer, SqliteSessionStore(path) as reader:
        session = writer.ensure_session("web:c", platform="web", chat_id="web:c")
        writer.append(session.id, [user("the door code is 4471")])
        assert [hit.seq for hit in reader.search("web:c", "door")] == [0]
        writer.append(session.id, [user("the gate code is 9902")])
        assert [hit.seq for hit in writer.search("web:c", "gate")] == [1]
    _index_is_consistent(path)
