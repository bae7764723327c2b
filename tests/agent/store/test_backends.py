"""Contract points beyond the single-writer tests: batches, several writers at once, and the PostgreSQL specifics."""
from __future__ import annotations

import random
import sqlite3
import string
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from agent.messages import Message, assistant, tool_result, user
from agent.store import SessionStore, SqliteSessionStore, StoreError, store_for
from agent.store.postgres import SCHEMA_VERSION, PostgresSessionStore, redact_url
from agent.store.postgres._append import append_batch
from agent.store.postgres._schema import MIGRATIONS
from tests.postgres import empty_store_tables, fresh_database


def test_append_many_keeps_every_entry_but_the_failing_one(store: SessionStore) -> None:
    """Per-entry outcomes: an unknown session fails alone, an empty entry is a no-op."""
    sid = store.ensure_session("k", platform="web", chat_id="c").id
    outcomes = store.append_many([(sid, [user("a")]), ("missing", [user("b")]), (sid, []), (sid, [user("c")])])
    assert [type(o).__name__ if o else None for o in outcomes] == [None, "StoreError", None, None]
    assert store.active_messages(sid) == [user("a"), user("c")]


def _chat_counts(store: SessionStore, chat_id: str) -> tuple[int, int]:
    """The chat's message and character counters (what search ranking reads), from the database itself."""
    if isinstance(store, SqliteSessionStore):
        with sqlite3.connect(store.path) as conn:
            row = conn.execute("SELECT messages, chars FROM chat_stats WHERE chat_id = ?", (chat_id,)).fetchone()
    else:
        assert isinstance(store, PostgresSessionStore)
        with store.connection() as pg:
            found = pg.execute("SELECT messages, chars FROM chat_stats WHERE chat_id = %s", (chat_id,)).fetchone()
            row = (found["messages"], found["chars"]) if found else None
    return (int(row[0]), int(row[1])) if row else (0, 0)


def test_a_batch_numbers_each_session_on_in_order_and_counts_each_chat(store: SessionStore) -> None:
    """Entries of one session in one batch follow each other; each chat's counters grow by its own messages."""
    a = store.ensure_session("a", platform="web", chat_id="ca").id
    b = store.ensure_session("b", platform="web", chat_id="cb").id
    store.append(a, [user("zero")])
    outcomes = store.append_many([(a, [user("one"), assistant("two")]), (b, [user("b0")]), (a, [user("three")])])
    assert outcomes == [None, None, None]
    assert [(m.seq, m.message.text) for m in store.session_messages(a)] == [(0, "zero"), (1, "one"), (2, "two"), (3, "three")]
    assert [(m.seq, m.message.text) for m in store.session_messages(b)] == [(0, "b0")]
    assert (_chat_counts(store, "ca"), _chat_counts(store, "cb")) == ((4, len("zeroonetwothree")), (1, 2))


def test_a_megabyte_of_distinct_words_is_stored_and_found_by_its_first_ones(store: SessionStore) -> None:
    """A tool output of more distinct words than a PostgreSQL vector holds (base64, hashes) goes in whole,
    with the rest of its batch; its first words are searchable."""
    rng = random.Random(5)
    words = ("".join(rng.choice(string.ascii_lowercase + "éж") for _ in range(rng.randint(3, 12))) for _ in range(160_000))
    huge = "needle " + " ".join(words) + " haystack"
    sid = store.ensure_session("k", platform="web", chat_id="c").id
    assert store.append_many([(sid, [user("before")]), (sid, [tool_result("c1", huge)]), (sid, [user("after")])]) == [
        None, None, None]
    assert [m.text for m in store.active_messages(sid)] == ["before", huge, "after"]
    assert [hit.seq for hit in store.search("c", "needle")] == [1]


def test_a_name_with_a_lone_surrogate_is_stored_cleaned(store: SessionStore) -> None:
    """A sender name no UTF-8 can carry (a broken emoji from a platform's JSON) never keeps its message out."""
    sid = store.ensure_session("k", platform="web", chat_id="c").id
    assert store.append_many([(sid, [user("hi", name="ann \ud83d")]), (sid, [user("ok")])]) == [None, None]
    assert [(m.text, m.name) for m in store.active_messages(sid)] == [("hi", "ann \ufffd"), ("ok", None)]


def test_a_postgres_batch_goes_in_by_its_own_statements(pg_url: str) -> None:
    """The batch path itself (no entry-by-entry retry behind it): numbered on per session, an unknown one left out."""
    empty_store_tables(pg_url)
    with PostgresSessionStore(pg_url) as store:
        a = store.ensure_session("a", platform="web", chat_id="ca").id
        b = store.ensure_session("b", platform="web", chat_id="cb").id
        batch = [(a, [user("one"), assistant("two")]), ("missing", [user("x")]), (b, [user("b0")]), (a, [user("three")])]
        with store.connection() as conn, conn.transaction():
            outcomes = append_batch(conn, batch, now=1.0, where=store.location)
        assert [type(o).__name__ if o else None for o in outcomes] == [None, "StoreError", None, None]
        assert [(m.seq, m.message.text) for m in store.session_messages(a)] == [(0, "one"), (1, "two"), (2, "three")]
        assert [m.message.text for m in store.session_messages(b)] == ["b0"]


def test_a_row_the_database_refuses_keeps_only_its_own_entry_out() -> None:
    """PostgreSQL refusing one row (here a trigger's check) fails the batch's statement; the batch is written
    again entry by entry and every other entry goes in, numbered densely."""
    with fresh_database() as url:
        with PostgresSessionStore(url) as store:
            sid = store.ensure_session("k", platform="web", chat_id="c").id
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(
                    "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    " IF NEW.text = 'refused' THEN RAISE EXCEPTION 'no' USING ERRCODE = 'check_violation'; END IF;"
                    " RETURN NEW; END $$"
                )
                admin.execute("CREATE TRIGGER refuse BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse()")
            outcomes = store.append_many([(sid, [user("a")]), (sid, [user("refused")]), (sid, [user("b")])])
            assert [type(o).__name__ if o else None for o in outcomes] == [None, "CheckViolation", None]
            assert [(m.seq, m.message.text) for m in store.session_messages(sid)] == [(0, "a"), (1, "b")]


def test_ensure_sessions_opens_each_key_once(store: SessionStore) -> None:
    """A batch with a repeated key gets one session for it, and existing sessions are returned as they are."""
    existing = store.ensure_session("a", platform="web", chat_id="ca")
    out = store.ensure_sessions([("a", "web", "ca"), ("b", "web", "cb"), ("b", "web", "cb")])
    ids = [o.id for o in out if not isinstance(o, Exception)]
    assert (ids[0], ids[1] == ids[2], len(store.list_sessions())) == (existing.id, True, 2)


def test_a_rotation_chain_keeps_parents_and_history(store: SessionStore) -> None:
    """Parent/child sessions: each rotation closes the parent and links the child to it."""
    first = store.ensure_session("k", platform="web", chat_id="c")
    store.append(first.id, [user("one")])
    second = store.rotate(first.id, [user("[summary] one")])
    third = store.rotate(second.id, [user("[summary] two")])
    chain = [store.get_session(s.id) for s in (first, second, third)]
    assert [(s.parent_id, s.active) for s in chain if s] == [(None, False), (first.id, False), (second.id, True)]
    assert {h.session_id for h in store.search("c", "summary")} == {second.id, third.id}


def test_text_with_nul_and_every_script_is_stored_and_found(store: SessionStore) -> None:
    """Russian, Japanese and Greek words are found (no stemming, any language); NUL never breaks a write."""
    sid = store.ensure_session("k", platform="web", chat_id="c").id
    store.append(sid, [user("привет мир"), user("東京 タワー"), user("Ωμέγα"), user("bad\x00byte here")])
    found = {q: [h.seq for h in store.search("c", q)] for q in ("мир", "タワー", "ωμέγα", "here")}
    assert found == {"мир": [0], "タワー": [1], "ωμέγα": [2], "here": [3]}


def _hammer(stores: list[SessionStore], work: int) -> list[BaseException]:
    """Every store appends `work` pairs to the one shared session at once; errors are collected."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(stores))

    def run(store: SessionStore, name: int) -> None:
        try:
            start.wait(timeout=10)
            sid = store.ensure_session("shared", platform="web", chat_id="shared").id
            for n in range(work):
                store.append(sid, [user(f"w{name} q{n}"), assistant(f"w{name} a{n}")])
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s, i)) for i, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


@pytest.fixture
def replicas(pg_url: str) -> Iterator[list[SessionStore]]:
    """Three PostgreSQL stores on one database, as three replicas would open it."""
    empty_store_tables(pg_url)
    stores: list[SessionStore] = [PostgresSessionStore(pg_url) for _ in range(3)]
    for s in stores:
        s.open()
    yield stores
    for s in stores:
        s.close()


def test_replicas_share_one_session_and_dense_sequence(replicas: list[SessionStore]) -> None:
    """Three replicas opening and appending to one key at once: one session, no lost or doubled message."""
    assert _hammer(replicas, work=15) == []
    (summary,) = replicas[0].list_sessions()
    stored = replicas[1].session_messages(summary.session.id)
    texts = [s.message.text for s in stored]
    assert [s.seq for s in stored] == list(range(90))
    assert sorted(texts) == sorted(f"w{w} {k}{n}" for w in range(3) for n in range(15) for k in "qa")
    # Each writer's pairs stay adjacent: an append is atomic and ordered.
    assert all(texts[i].replace(" q", " a") == texts[i + 1] for i in range(0, 90, 2))


def test_migrations_run_once_and_a_newer_database_is_refused() -> None:
    """A fresh database gets the schema; one stamped by a newer Chorus is refused with what to do."""
    with fresh_database() as url:
        with PostgresSessionStore(url) as store:
            store.append(store.ensure_session("k", platform="web", chat_id="c").id, [Message(role="user", content="x")])
        with PostgresSessionStore(url) as again:  # already migrated: opens without re-running a step
            assert len(again.active_messages(again.list_sessions()[0].session.id)) == 1
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT version FROM chorus_schema").fetchall() == [(SCHEMA_VERSION,)]
            conn.execute("UPDATE chorus_schema SET version = %s", (MIGRATIONS[-1].version + 1,))
        with pytest.raises(StoreError, match=rf"schema version {SCHEMA_VERSION + 1}, newer than .*upgrade Chorus"):
            PostgresSessionStore(url).open()


def test_an_unreachable_server_is_a_clear_error_without_the_password() -> None:
    """No server at the URL: StoreError names the store, says what to check, never shows the password."""
    store = PostgresSessionStore("postgresql://chorus:s3cret-pw@127.0.0.1:1/chorus", connect_timeout=1.0)
    with pytest.raises(StoreError, match=r"cannot reach the PostgreSQL store .*check store.url") as caught:
        store.open()
    assert "s3cret-pw" not in str(caught.value) and "***" in str(caught.value)
    assert redact_url("postgresql://u:pw@h:5/d") == "postgresql://u:***@h:5/d"


def test_store_url_selects_the_backend(home: Path, pg_url: str) -> None:
    """null -> SQLite under home; postgresql:// -> PostgreSQL; anything else is refused naming the key."""
    assert store_for(None, home).location == str(home / "state.db")
    assert isinstance(store_for(pg_url, home), PostgresSessionStore)
    with pytest.raises(StoreError, match=r"store.url must be a postgresql://.*scheme 'mysql'"):
        store_for("mysql://x@h/db", home)
