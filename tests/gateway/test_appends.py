"""Group commit of session-store appends (`AppendBatcher`, `SessionStore.append_many`)."""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from agent.messages import Message, assistant, user
from agent.store import SqliteSessionStore, StoreError
from gateway.sessions.appends import AppendBatcher, GroupCommit


class CountingStore(SqliteSessionStore):
    """A real store that remembers the size of every `append_many` batch."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[int] = []

    def append_many(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None]:
        self.batches.append(len(batch))
        return super().append_many(batch)


async def test_appends_queued_together_share_one_transaction(tmp_path: Path) -> None:
    """Appends made in the same loop turn go in one transaction; a lone later append goes alone."""
    store = CountingStore(tmp_path / "state.db")
    store.open()
    try:
        ids = [store.ensure_session(f"k{n}", platform="web", chat_id=f"c{n}").id for n in range(5)]
        batcher = AppendBatcher(store)
        await asyncio.gather(*(batcher.append(sid, [user(f"q{n}"), assistant(f"a{n}")]) for n, sid in enumerate(ids)))
        await batcher.append(ids[0], [user("again")])
        assert store.batches == [5, 1]
        assert [store.active_messages(sid) for sid in ids[1:]] == [
            [user(f"q{n}"), assistant(f"a{n}")] for n in range(1, 5)
        ]
        assert store.active_messages(ids[0]) == [user("q0"), assistant("a0"), user("again")]
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
