"""Usage written behind (`UsageQueue` in `SqliteChatStore`): batched in the background, never missed by a read."""
from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from structlog.testing import capture_logs

from gateway.chats.store import SqliteChatStore, Usage
from gateway.chats.store._usage_queue import Batch, UsageQueue


def _on_disk(path: Path, chat: str) -> tuple[int, int, int] | None:
    """The row as another process would read it (a connection of its own)."""
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT prompt_tokens, completion_tokens, requests FROM chats WHERE chat = ?", (chat,)).fetchone()
    finally:
        conn.close()
    return None if row is None else (int(row[0]), int(row[1]), int(row[2]))


def test_additions_reach_the_file_without_a_read_or_a_close(tmp_path: Path) -> None:
    """The writer thread commits on its own, shortly after the additions."""
    store = SqliteChatStore(tmp_path / "chats.db")
    store.open()
    try:
        for _ in range(50):
            store.add_usage("web:a", "web", Usage(3, 1, 1))
        deadline = time.monotonic() + 10
        while _on_disk(tmp_path / "chats.db", "web:a") != (150, 50, 50):
            assert time.monotonic() < deadline, _on_disk(tmp_path / "chats.db", "web:a")
            time.sleep(0.01)
    finally:
        store.close()


def test_concurrent_adders_are_all_counted_and_batched(tmp_path: Path) -> None:
    """Eight threads adding at once: every addition counted; far fewer transactions than additions."""
    batches: list[Batch] = []

    def write(batch: Batch) -> None:
        batches.append(dict(batch))

    queue = UsageQueue(write, delay_seconds=0.02)
    queue.start()

    def add(n: int) -> None:
        for _ in range(500):
            queue.add(f"web:{n % 2}", "web", Usage(1, 0, 1))

    threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.stop()
    totals: dict[str, int] = {}
    for batch in batches:
        for (chat, _platform), usage in batch.items():
            totals[chat] = totals.get(chat, 0) + usage.requests
    assert totals == {"web:0": 2000, "web:1": 2000}
    assert len(batches) < 4000 // 10


def test_a_read_waits_for_the_batch_in_flight(tmp_path: Path) -> None:
    """A read while the writer is mid-commit still sees the addition (flush waits for it)."""
    entered, release = threading.Event(), threading.Event()
    store = SqliteChatStore(tmp_path / "chats.db")
    inner = store._write_usage  # the real SQLite write, held open until the read has started

    def slow_write(batch: Batch) -> None:
        entered.set()
        release.wait(10)
        inner(batch)

    store._usage = UsageQueue(slow_write, delay_seconds=0.0)
    store.open()
    try:
        store.add_usage("web:a", "web", Usage(10, 2, 1))
        assert entered.wait(10)
        seen: list[Usage] = []
        reader = threading.Thread(target=lambda: seen.append(store.get("web:a").usage))
        reader.start()
        release.set()
        reader.join(10)
        assert seen == [Usage(10, 2, 1)]
    finally:
        release.set()
        store.close()


def test_a_failing_write_is_logged_not_raised() -> None:
    """A broken store costs the counts, never the caller: flush returns and says what failed."""

    def broken(_batch: Batch) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    queue = UsageQueue(broken)
    queue.add("web:a", "web", Usage(1, 1, 1))
    with capture_logs() as logs:
        queue.flush()
    queue.stop()
    assert [(e["event"], e["error"], e["chats"]) for e in logs] == [("usage.store_failed", "OperationalError", 1)]
