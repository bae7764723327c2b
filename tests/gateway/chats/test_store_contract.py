"""One contract for the chat store, the pairing store and the learned-window store, on SQLite and on PostgreSQL."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.model_windows import FileWindowStore, LearnedWindow, WindowStore
from agent.model_windows_postgres import PostgresWindowStore
from agent.store import StoreError
from agent.store.postgres import PostgresSessionStore
from gateway.chats.pairing import CODE_TTL_SECONDS, MAX_PENDING, PairingStore, SqlitePairingStore
from gateway.chats.pairing_postgres import PostgresPairingStore
from gateway.chats.store import ChatStore, SqliteChatStore, Usage
from gateway.chats.store.postgres import PostgresChatStore
from tests.gateway.chats.conftest import Clock


@pytest.fixture
def chats(shared: PostgresSessionStore | None, home: Path) -> Iterator[ChatStore]:
    store: ChatStore = PostgresChatStore(shared) if shared is not None else SqliteChatStore(home / "chats.db")
    store.open()
    yield store
    store.close()


@pytest.fixture
def pairing(shared: PostgresSessionStore | None, home: Path, clock: Clock) -> Iterator[PairingStore]:
    store: PairingStore = (
        PostgresPairingStore(shared, clock=clock) if shared is not None else SqlitePairingStore(home / "p.db", clock=clock)
    )
    store.open()
    yield store
    store.close()


@pytest.fixture
def windows(shared: PostgresSessionStore | None, home: Path) -> WindowStore:
    return PostgresWindowStore(shared.url) if shared is not None else FileWindowStore(home / "model_windows.json")


def test_a_chat_remembers_its_model_and_sums_usage(chats: ChatStore) -> None:
    """An unseen chat is empty; /model is kept and cleared; usage adds up per chat and per platform."""
    assert chats.get("telegram:1").model is None and chats.get("telegram:1").usage == Usage()
    chats.set_model("telegram:1", "big-model")
    chats.add_usage("telegram:1", "telegram", Usage(10, 5, 1))
    chats.add_usage("telegram:1", "telegram", Usage(1, 2, 1))
    chats.add_usage("slack:C1", "slack", Usage(7, 0, 1))
    record = chats.get("telegram:1")
    assert record.model == "big-model" and record.usage == Usage(11, 7, 2)
    assert chats.usage_by_platform() == {"telegram": Usage(11, 7, 2), "slack": Usage(7, 0, 1)}
    chats.set_model("telegram:1", None)
    assert chats.get("telegram:1").model is None and chats.get("telegram:1").usage == Usage(11, 7, 2)


def test_concurrent_usage_is_not_lost(chats: ChatStore) -> None:
    """Four writers adding to one chat at once: every request counted (the upsert is atomic)."""
    def add() -> None:
        for _ in range(25):
            chats.add_usage("web:x", "web", Usage(1, 1, 1))

    threads = [threading.Thread(target=add) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert chats.get("web:x").usage == Usage(100, 100, 100)


def test_codes_expire_repeat_and_are_bounded(pairing: PairingStore, clock: Clock) -> None:
    """One live code per sender, gone after its TTL; at most MAX_PENDING per platform; revoke undoes approve."""
    first = pairing.code_for("telegram", "1", "a")
    assert first is not None
    assert pairing.code_for("telegram", "1", "a") == first
    assert [c.code for c in pairing.pending("telegram")] == [first.code] and pairing.pending("slack") == []
    clock.now += CODE_TTL_SECONDS + 1
    assert pairing.approve("telegram", first.code) is None
    for user_id in range(MAX_PENDING):
        assert pairing.code_for("telegram", str(user_id), "x") is not None
    assert pairing.code_for("telegram", "overflow", "x") is None
    assert pairing.code_for("slack", "overflow", "x") is not None  # the cap is per platform
    live = pairing.code_for("telegram", "7", "x")
    assert live is not None and pairing.approve("slack", live.code) is None
    approved = pairing.approve("telegram", f" {live.code.lower()} ")
    assert approved is not None and (approved.platform, approved.user_id, approved.user_name) == ("telegram", "7", "x")
    assert pairing.is_approved("telegram", "7") and not pairing.is_approved("slack", "7")
    assert [u.user_id for u in pairing.approved()] == ["7"] and pairing.approved("slack") == []
    assert all(c.user_id != "7" for c in pairing.pending())
    assert pairing.revoke("telegram", "7") and not pairing.is_approved("telegram", "7")
    assert not pairing.revoke("telegram", "7")


def test_windows_survive_a_new_store_object(windows: WindowStore, shared: PostgresSessionStore | None, home: Path) -> None:
    """Saved windows load again from a second store object (another process, another replica)."""
    assert windows.load() == {}
    windows.save("m@default", LearnedWindow(tokens=8000, stated=True, learned_at=5.0))
    windows.save("n@http://x", LearnedWindow(tokens=2048, stated=False, learned_at=6.0))
    again = PostgresWindowStore(shared.url) if shared is not None else FileWindowStore(home / "model_windows.json")
    assert again.load() == {
        "m@default": LearnedWindow(8000, True, 5.0), "n@http://x": LearnedWindow(2048, False, 6.0),
    }


def test_the_shared_stores_need_the_session_store_open(pg_url: str) -> None:
    """Opening a PostgreSQL chat or pairing store before the session store is a clear error, not a hang."""
    closed = PostgresSessionStore(pg_url)
    for store in (PostgresChatStore(closed), PostgresPairingStore(closed)):
        with pytest.raises(StoreError, match="is not open"):
            store.open()


def test_an_unreachable_window_table_loads_as_nothing_learned() -> None:
    """The gateway still starts on its configured windows when the database is down."""
    assert PostgresWindowStore("postgresql://postgres@127.0.0.1:1/none").load() == {}
