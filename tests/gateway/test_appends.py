"""Group commit of session-store appends (`AppendBatcher`, `SessionStore.append_many`)."""
from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from agent.messages import Message, assistant, user
from agent.store import SqliteSessionStore, StoreError
from gateway.sessions.appends import MAX_INLINE_BATCH, AppendBatcher, GroupCommit


class CountingStore(SqliteSessionStore):
    """A real store that remembers every batch: its size, and whether it ran on the writer thread or at once."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[tuple[str, int]] = []
        self.decline = False  # `append_many_now` answers None, as when the store is in use elsewhere

    def append_many(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None]:
        self.batches.append((threading.current_thread().name, len(batch)))
        return super().append_many(batch)

    def append_many_now(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None] | None:
        if self.decline:
            return None
        self.batches.append(("now:" + threading.current_thread().name, len(batch)))
        return super().append_many_now(batch)


async def test_appends_queued_together_share_one_transaction(tmp_path: Path) -> None:
    """Appends made in the same loop turn go in one transaction, run on the loop (a small batch); a lone later one too."""
    store = CountingStore(tmp_path / "state.db")
    store.open()
    try:
        ids = [store.ensure_session(f"k{n}", platform="web", chat_id=f"c{n}").id for n in range(5)]
        batcher = AppendBatcher(store)
        await asyncio.gather(*(batcher.append(sid, [user(f"q{n}"), assistant(f"a{n}")]) for n, sid in enumerate(ids)))
        await batcher.append(ids[0], [user("again")])
        loop_thread = "now:" + threading.current_thread().name
        assert store.batches == [(loop_thread, 5), (loop_thread, 1)]
        assert [store.active_messages(sid) for sid in ids[1:]] == [
            [user(f"q{n}"), assistant(f"a{n}")] for n in range(1, 5)
        ]
        assert store.active_messages(ids[0]) == [user("q0"), assistant("a0"), user("again")]
    finally:
        store.close()


async def test_a_batch_over_the_inline_limit_goes_to_the_writer_thread(tmp_path: Path) -> None:
    """More appends in one loop turn than `MAX_INLINE_BATCH` are one transaction on the writer thread, not the loop."""
    store = CountingStore(tmp_path / "state.db")
    store.open()
    try:
        ids = [store.ensure_session(f"k{n}", platform="web", chat_id=f"c{n}").id for n in range(MAX_INLINE_BATCH + 1)]
        batcher = AppendBatcher(store)
        await asyncio.gather(*(batcher.append(sid, [user(f"q{n}")]) for n, sid in enumerate(ids)))
        assert store.batches == [("store-appends", MAX_INLINE_BATCH + 1)]
        assert [store.active_messages(sid) for sid in ids] == [[user(f"q{n}")] for n in range(len(ids))]
    finally:
        store.close()

async def test_a_failing_append_fails_alone(tmp_path: Path) -> None:
    """An append to an unknown session raises for its caller; the others in its batch are stored."""
    with SqliteSessionStore(tmp_path / "state.db") as store:
        good = store.ensure_session("k", platform="web", chat_id="c").id
        batcher = AppendBatcher(store)
        results = await asyncio.gather(
            batcher.append(good, [user("first")]),
            batcher.append("no-such-session", [user("lost")]),
            batcher.append(good, [user("second")]),
            return_exceptions=True,
        )
        assert results[0] is None and results[2] is None
        assert isinstance(results[1], StoreError)
        assert store.active_messages(good) == [user("first"), user("second")]


def test_append_many_rolls_back_only_the_failing_entry(tmp_path: Path) -> None:
    """`append_many` reports per entry and keeps every entry that succeeded."""
    with SqliteSessionStore(tmp_path / "state.db") as store:
        sid = store.ensure_session("k", platform="web", chat_id="c").id
        outcomes = store.append_many([(sid, [user("a")]), ("missing", [user("b")]), (sid, []), (sid, [user("c")])])
        assert [type(o).__name__ if o else None for o in outcomes] == [None, "StoreError", None, None]
        assert store.active_messages(sid) == [user("a"), user("c")]




def _chat_counters(path: Path, chat_id: str) -> tuple[int, int]:
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT messages, chars FROM chat_stats WHERE chat_id = ?", (chat_id,)).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def test_append_many_numbers_a_sessions_entries_in_order_and_counts_and_indexes_every_row(tmp_path: Path) -> None:
    """A batch holding one session twice and two chats: what one append after another would have written."""
    with SqliteSessionStore(tmp_path / "state.db") as store:
        one = store.ensure_session("k1", platform="web", chat_id="c1").id
        two = store.ensure_session("k2", platform="web", chat_id="c2").id
        store.append(one, [user("before")])
        outcomes = store.append_many([
            (one, [user("walrus alpha"), assistant("ok")]), (two, [user("walrus beta")]), (one, [user("walrus gamma")]),
        ])
        assert outcomes == [None, None, None]
        assert [m.seq for m in store.session_messages(one)] == [0, 1, 2, 3]
        assert store.active_messages(one) == [user("before"), user("walrus alpha"), assistant("ok"), user("walrus gamma")]
        assert store.active_messages(two) == [user("walrus beta")]
        assert {hit.snippet.replace("*", "") for hit in store.search("c1", "walrus")} == {"walrus alpha", "walrus gamma"}
        assert [hit.snippet.replace("*", "") for hit in store.search("c2", "walrus")] == ["walrus beta"]
    chars = len("before") + len("walrus alpha") + len("ok") + len("walrus gamma")
    assert _chat_counters(tmp_path / "state.db", "c1") == (4, chars)
    assert _chat_counters(tmp_path / "state.db", "c2") == (1, len("walrus beta"))


def test_append_many_keeps_the_other_entries_when_the_database_refuses_one_row(tmp_path: Path) -> None:
    """A constraint failing on one entry's row (here a trigger) rolls back that entry alone, as its own append would."""
    with SqliteSessionStore(tmp_path / "state.db") as store:
        one = store.ensure_session("k1", platform="web", chat_id="c1").id
        two = store.ensure_session("k2", platform="web", chat_id="c2").id
    with sqlite3.connect(tmp_path / "state.db") as db:
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.text = 'boom' "
                   "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with SqliteSessionStore(tmp_path / "state.db") as store:
        outcomes = store.append_many([(one, [user("a")]), (two, [user("fine"), user("boom")]), (one, [user("c")])])
        assert [type(o).__name__ if o else None for o in outcomes] == [None, "IntegrityError", None]
        assert store.active_messages(one) == [user("a"), user("c")]
        assert store.active_messages(two) == []
        assert [hit.snippet.replace("*", "") for hit in store.search("c1", "c")] == ["c"]
    assert _chat_counters(tmp_path / "state.db", "c2") == (0, 0)


async def test_a_batch_that_raises_fails_each_of_its_callers_and_the_writer_goes_on() -> None:
    """The whole call failing reaches every caller of that batch; the writer thread then runs the next batch."""
    calls: list[list[int]] = []

    def batch(requests: list[int]) -> list[int | Exception]:
        calls.append(requests)
        if len(calls) == 1:
            raise OSError("disk full")
        return [r * 10 for r in requests]

    group: GroupCommit[int, int] = GroupCommit(batch, name="test-writer")
    results = await asyncio.gather(group.submit(1), group.submit(2), return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["OSError", "OSError"]
    assert list(await asyncio.gather(group.submit(3), group.submit(4))) == [30, 40]
    assert calls == [[1, 2], [3, 4]]


async def test_a_lone_append_the_store_declines_goes_to_the_writer_thread(tmp_path: Path) -> None:
    """When the store cannot take it at once, the lone append is committed by the writer thread instead."""
    store = CountingStore(tmp_path / "state.db")
    store.open()
    try:
        sid = store.ensure_session("k", platform="web", chat_id="c").id
        store.decline = True
        await AppendBatcher(store).append(sid, [user("q")])
        assert store.batches == [("store-appends", 1)]
        assert store.active_messages(sid) == [user("q")]
    finally:
        store.close()


async def test_an_inline_run_that_raises_fails_its_caller_and_the_next_request_runs() -> None:
    """An error from the inline path reaches its caller, as one from the writer thread would."""
    ran: list[int] = []

    def inline(requests: list[int]) -> list[int | Exception] | None:
        ran.extend(requests)
        if requests == [1]:
            raise OSError("disk full")
        return [r * 10 for r in requests]

    group: GroupCommit[int, int] = GroupCommit(lambda requests: [r * 100 for r in requests], inline=inline)
    results = await asyncio.gather(group.submit(1), return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["OSError"]
    assert await group.submit(2) == 20
    assert ran == [1, 2]


def test_append_many_now_declines_without_waiting_while_another_process_writes(tmp_path: Path) -> None:
    """Another connection holding the write lock: None at once, nothing written, the busy timeout restored."""
    with SqliteSessionStore(tmp_path / "state.db") as store:
        sid = store.ensure_session("k", platform="web", chat_id="c").id
        other = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            assert store.append_many_now([(sid, [user("q")])]) is None
            other.execute("ROLLBACK")
        finally:
            other.close()
        assert store.active_messages(sid) == []
        assert store.append_many_now([(sid, [user("q")])]) == [None]
        assert store.active_messages(sid) == [user("q")]
        assert store._read("PRAGMA busy_timeout")[0][0] > 0


def test_append_many_now_declines_while_another_thread_uses_the_store(tmp_path: Path) -> None:
    """The store's lock held by another thread (a search, an index merge): None at once, nothing written."""
    with SqliteSessionStore(tmp_path / "state.db") as store:
        sid = store.ensure_session("k", platform="web", chat_id="c").id
        held, release = threading.Event(), threading.Event()

        def hold_the_store() -> None:
            with store._lock:
                held.set()
                release.wait(10)

        thread = threading.Thread(target=hold_the_store)
        thread.start()
        try:
            held.wait(10)
            assert store.append_many_now([(sid, [user("q")])]) is None
        finally:
            release.set()
            thread.join()
        assert store.active_messages(sid) == []


def test_append_many_now_leaves_checkpoints_to_a_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its commits never checkpoint; every Nth call declines, so that append commits (and checkpoints) on a thread."""
    import agent.store.store as module
    from agent.store._connection import WAL_AUTOCHECKPOINT_PAGES

    monkeypatch.setattr(module, "NOW_COMMITS_PER_CHECKPOINT", 2)
    with SqliteSessionStore(tmp_path / "state.db") as store:
        sid = store.ensure_session("k", platform="web", chat_id="c").id
        outcomes = [store.append_many_now([(sid, [user(str(n))])]) for n in range(5)]
        assert outcomes == [[None], [None], None, [None], [None]]
        assert store.active_messages(sid) == [user("0"), user("1"), user("3"), user("4")]
        assert store._read("PRAGMA wal_autocheckpoint")[0][0] == WAL_AUTOCHECKPOINT_PAGES


def test_append_many_now_alone_to_an_unknown_session_returns_its_error_and_writes_nothing(tmp_path: Path) -> None:
    """A lone on-loop append runs without a savepoint: its failure rolls its transaction back and is returned."""
    with SqliteSessionStore(tmp_path / "state.db") as store:
        sid = store.ensure_session("k", platform="web", chat_id="c").id
        (outcome,) = store.append_many_now([("nope", [user("q")])]) or [None]
        assert isinstance(outcome, StoreError)
        assert store.append_many_now([(sid, [user("a"), assistant("b")])]) == [None]
        assert store.append_many_now([(sid, [user("c")])]) == [None]
        assert [m.text for m in store.active_messages(sid)] == ["a", "b", "c"]
        assert [r.seq for r in store.session_messages(sid)] == [0, 1, 2]
        # Any other use of the connection first leaves the no-wait mode of the on-loop appends.
        assert store._read("PRAGMA busy_timeout")[0][0] > 0
        assert store._read("PRAGMA wal_autocheckpoint")[0][0] > 0


async def test_a_kept_request_is_written_after_its_caller_is_cancelled_and_its_outcome_reaches_kept() -> None:
    """`submit_kept`: cancelling `done` (its caller was cancelled) drops nothing; `kept` hears the outcome, `done`
    stays as the caller left it; a plain `submit` cancelled before its batch is dropped."""
    calls: list[list[int]] = []

    def batch(requests: list[int]) -> list[int | Exception]:
        calls.append(requests)
        return [r * 10 if r != 3 else OSError("disk full") for r in requests]

    group: GroupCommit[int, int] = GroupCommit(batch, name="test-kept")
    done, kept = group.submit_kept(1)
    dropped = group.submit(2)
    failing_done, failing_kept = group.submit_kept(3)
    done.cancel()
    dropped.cancel()
    failing_done.cancel()
    assert await kept == 10
    with pytest.raises(OSError):
        await failing_kept
    assert calls == [[1, 3]]
    answered, never_needed = group.submit_kept(4)
    assert await answered == 40
    assert not never_needed.done()  # nobody was cancelled: nothing is left unretrieved
