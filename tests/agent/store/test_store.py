"""SessionStore write paths: sessions, append, soft-archive, rotation, import, lifecycle."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent.messages import ImagePart, Message, TextPart, ToolCall, assistant, tool_result, user
from agent.store import SessionStore, SqliteSessionStore, StoreError


def test_ensure_session_returns_the_open_session_of_a_key(store: SessionStore) -> None:
    """The same key gets the same open session; another key gets its own."""
    first = store.ensure_session("web:1", platform="web", chat_id="1")
    again = store.ensure_session("web:1", platform="web", chat_id="1")
    other = store.ensure_session("web:2", platform="web", chat_id="2")
    assert (again.id, other.id != first.id, store.active_session("web:1")) == (first.id, True, first)


def test_messages_round_trip_with_every_field(store: SessionStore) -> None:
    """Text, multimodal parts, tool calls, tool results, names and null content read back equal."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    messages = [
        Message(role="system", content="be brief"),
        user("hello", name="ann"),
        Message(role="user", content=(TextPart("look at this"), ImagePart("https://x/y.png", detail="low"))),
        assistant(None, tool_calls=[ToolCall(id="call_1", name="bash", arguments='{"command": "ls"}')]),
        tool_result("call_1", "a.txt\nb.txt", name="bash"),
    ]
    store.append(session.id, messages, token_counts=[3, 2, 9, 12, 5])
    stored = store.session_messages(session.id)
    assert (store.active_messages(session.id), [m.token_count for m in stored]) == (messages, [3, 2, 9, 12, 5])


def test_appends_keep_order_across_calls(store: SessionStore) -> None:
    """Each append lands after the previous one, with consecutive sequence numbers."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    for index in range(5):
        store.append(session.id, [user(f"m{index}a"), assistant(f"m{index}b")])
    stored = store.session_messages(session.id)
    assert ([s.seq for s in stored], stored[-1].message.text) == (list(range(10)), "m4b")


def test_end_session_makes_the_next_ensure_start_fresh(store: SessionStore) -> None:
    """/new closes the session; the key then has no open session until ensure creates one."""
    old = store.ensure_session("k", platform="web", chat_id="c")
    store.append(old.id, [user("before")])
    store.end_session(old.id)
    closed = store.get_session(old.id)
    assert (store.active_session("k"), closed is not None and closed.active) == (None, False)
    fresh = store.ensure_session("k", platform="web", chat_id="c")
    assert (fresh.id != old.id, store.active_messages(fresh.id), store.active_messages(old.id)) == (
        True, [], [user("before")]
    )


def test_replace_active_archives_the_old_messages(store: SessionStore) -> None:
    """In-place compression: new messages become active; the replaced ones stay, marked with a generation."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [user("the database is postgres"), assistant("noted")])
    first = store.replace_active(session.id, [user("[summary] db chosen")])
    store.append(session.id, [user("next question")])
    second = store.replace_active(session.id, [user("[summary 2]")])
    stored = store.session_messages(session.id)
    assert (first, second) == (1, 2)
    assert store.active_messages(session.id) == [user("[summary 2]")]
    assert [(s.message.text, s.archived) for s in stored] == [
        ("the database is postgres", 1), ("noted", 1), ("[summary] db chosen", 2), ("next question", 2),
        ("[summary 2]", 0),
    ]
    assert [s.message.text for s in store.session_messages(session.id, include_archived=False)] == ["[summary 2]"]


def test_replace_active_keeps_archived_rows_searchable(store: SessionStore) -> None:
    """A fact compressed away is still found by search, flagged archived."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [user("the staging port is 8443")])
    store.replace_active(session.id, [user("[summary] ports discussed")])
    hits = store.search("c", "staging port")
    assert [(h.snippet, h.archived) for h in hits] == [("the **staging** **port** is 8443", True)]


def test_rotate_closes_the_parent_and_opens_a_child(store: SessionStore) -> None:
    """Rotation: the parent keeps its transcript and is closed; the child points at it and is the key's session."""
    parent = store.ensure_session("k", platform="telegram", chat_id="c", title="t")
    store.append(parent.id, [user("one"), assistant("two")])
    child = store.rotate(parent.id, [user("[summary] one two")])
    closed = store.get_session(parent.id)
    assert (child.parent_id, child.key, child.platform, child.chat_id, child.title) == (parent.id, "k", "telegram", "c", "t")
    assert (closed is not None and closed.active, closed is not None and closed.ended_at is not None) == (False, True)
    assert store.active_session("k") == child
    assert (store.active_messages(parent.id), store.active_messages(child.id)) == (
        [user("one"), assistant("two")], [user("[summary] one two")]
    )


def test_list_sessions_counts_active_and_archived(store: SessionStore) -> None:
    """The listing is newest first, filterable by chat, with message counts."""
    a = store.ensure_session("a", platform="web", chat_id="c1")
    store.append(a.id, [user("x"), user("y")])
    store.replace_active(a.id, [user("z")])
    b = store.ensure_session("b", platform="web", chat_id="c2")
    listed = [(s.session.id, s.messages, s.archived) for s in store.list_sessions()]
    assert listed == [(b.id, 0, 0), (a.id, 1, 2)]
    assert [s.session.id for s in store.list_sessions(chat_id="c1")] == [a.id]


def test_stats_count_everything(store: SessionStore) -> None:
    """Stats report sessions, open sessions, messages, archived messages and chats."""
    a = store.ensure_session("a", platform="web", chat_id="c1")
    store.append(a.id, [user("x"), user("y")])
    store.replace_active(a.id, [user("z")])
    store.end_session(store.ensure_session("b", platform="web", chat_id="c2").id)
    stats = store.stats()
    assert (stats.sessions, stats.active_sessions, stats.messages, stats.archived_messages, stats.chats) == (2, 1, 3, 2, 2)
    assert stats.db_bytes > 0


def test_import_session_is_closed_and_refuses_duplicates(store: SessionStore) -> None:
    """An imported session is closed, keeps its id and meta; importing the id again writes nothing."""
    session = store.import_session(
        "s-1", key="import:s-1", platform="import", chat_id="c", messages=[user("hi")],
        archived_messages=[user("old")], meta={"source": "irc"},
    )
    with pytest.raises(StoreError, match="already exists"):
        store.import_session("s-1", key="import:s-1", platform="import", chat_id="c", messages=[user("again")])
    assert (session.active, store.session_meta("s-1"), store.active_messages("s-1")) == (False, {"source": "irc"}, [user("hi")])
    assert [(s.message.text, s.archived) for s in store.session_messages("s-1")] == [("old", 1), ("hi", 0)]


def test_unknown_session_and_bad_token_counts_are_refused(store: SessionStore) -> None:
    """Writes to a missing session raise StoreError; mismatched token counts raise ValueError and write nothing."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    with pytest.raises(StoreError, match="no session 'nope'"):
        store.append("nope", [user("x")])
    with pytest.raises(ValueError, match="token_counts has 1 entries for 2 messages"):
        store.append(session.id, [user("a"), user("b")], token_counts=[1])
    assert store.active_messages(session.id) == []


def test_store_lifecycle_misuse_names_the_fix(home: Path) -> None:
    """Using a store before open() or opening it twice fails with the fix in the message."""
    store = SqliteSessionStore(home / "state.db")
    with pytest.raises(StoreError, match=r"call open\(\) first"):
        store.active_session("k")
    store.open()
    with pytest.raises(StoreError, match=r"already open; call close\(\) first"):
        store.open()
    store.close()
    store.open()  # reopening after close works
    assert store.active_session("k") is None
    store.close()


def test_constructor_does_no_io(home: Path) -> None:
    """Building a store touches no file."""
    SqliteSessionStore(home / "sub" / "state.db")
    assert list(home.iterdir()) == []


def test_database_is_in_wal_mode(sqlite_store: SqliteSessionStore) -> None:
    """state.db is switched to WAL so readers do not block the writer."""
    conn = sqlite3.connect(sqlite_store.path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_a_file_that_is_not_a_database_is_a_store_error(home: Path) -> None:
    """Opening garbage as state.db fails with StoreError naming the file, not a raw sqlite3 error."""
    path = home / "state.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=f"{path} is not a usable session store"):
        SqliteSessionStore(path).open()
