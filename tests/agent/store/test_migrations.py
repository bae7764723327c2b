"""Versioned schema: upgrading a v1 database, refusing a newer one, migrating once under concurrent opens."""
from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from agent.messages import user
from agent.store import MIGRATIONS, SCHEMA_VERSION, SessionStore, SqliteSessionStore, StoreError
from agent.store._schema import apply_migrations, schema_version


def _make_v1_database(path: Path) -> None:
    """A database as the first Chorus release wrote it, with one session of two messages."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert apply_migrations(conn, MIGRATIONS[:1]) == [1]
        conn.execute(
            "INSERT INTO sessions (id, key, platform, chat_id, created_at, active) VALUES ('s1', 'web:c', 'web', 'c', 1, 1)"
        )
        for seq, text in enumerate(["the router password is hunter2", "ok"]):
            conn.execute(
                "INSERT INTO messages (session_id, chat_id, seq, role, content_kind, text, created_at)"
                " VALUES ('s1', 'c', ?, 'user', 1, ?, 1)",
                (seq, text),
            )
    finally:
        conn.close()


def test_v1_database_is_upgraded_and_its_messages_become_searchable(home: Path) -> None:
    """Opening a v1 file runs the later steps: old rows are indexed and appends continue the sequence."""
    path = home / "state.db"
    _make_v1_database(path)
    with SqliteSessionStore(path) as store:
        hits = store.search("c", "router password")
        store.append("s1", [user("third")])
        texts = [(s.seq, s.message.text) for s in store.session_messages("s1")]
        assert [h.snippet for h in hits] == ["the **router** **password** is hunter2"]
        assert texts == [(0, "the router password is hunter2"), (1, "ok"), (2, "third")]
        assert store.search("c", "third")[0].seq == 2
    conn = sqlite3.connect(path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION == MIGRATIONS[-1].version
    finally:
        conn.close()


def test_a_database_from_a_newer_chorus_is_refused(home: Path) -> None:
    """A schema version above the known steps fails with a message saying what to do, and nothing changes."""
    path = home / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    store = SqliteSessionStore(path)
    with pytest.raises(StoreError, match=rf"schema version {SCHEMA_VERSION + 1}, newer than .*upgrade Chorus"):
        store.open()
    conn = sqlite3.connect(path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION + 1
    finally:
        conn.close()


def test_reopening_a_current_database_applies_nothing(home: Path) -> None:
    """Migration is a no-op on an up-to-date file."""
    path = home / "state.db"
    with SqliteSessionStore(path):
        pass
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert apply_migrations(conn) == []
    finally:
        conn.close()


def test_concurrent_first_opens_migrate_exactly_once(home: Path) -> None:
    """Several stores opening a fresh file at the same time all succeed on one migrated schema."""
    path = home / "state.db"
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []
    stores = [SqliteSessionStore(path) for _ in range(4)]

    def opener(store: SessionStore) -> None:
        barrier.wait(timeout=10)
        try:
            store.open()
            store.ensure_session("k", platform="web", chat_id="c")
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=opener, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    ids = {s.active_session("k").id for s in stores if s.active_session("k") is not None}  # type: ignore[union-attr]
    for store in stores:
        store.close()
    assert (errors, len(ids)) == ([], 1)
