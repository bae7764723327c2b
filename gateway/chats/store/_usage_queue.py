"""Write-behind for usage counters: turns add to memory, one thread commits them in batches.

Owns `UsageQueue`. A turn's usage used to cost a worker-thread hop and a
transaction of its own; now `add` sums it into a pending map (no I/O, safe
on the event loop) and a writer thread commits everything pending in one
call, shortly after the first addition. Reads flush first (`flush` waits for
a batch in flight), so nobody reads a total that misses a finished turn; a
process crash loses at most the last `delay_seconds` of counts, which only
feed statistics. Knows nothing of SQLite: `write` is given.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from gateway.chats.store.base import Usage

log = structlog.get_logger(__name__)

FLUSH_DELAY_SECONDS = 0.05
Batch = dict[tuple[str, str], Usage]  # (chat, platform) -> usage to add


class UsageQueue:
    """Pending usage additions and the thread that writes them.

    Args:
        write: commits a batch (one transaction); runs in the writer thread or a reader's.
        delay_seconds: how long the writer gathers additions before committing.
    """

    def __init__(self, write: Callable[[Batch], None], *, delay_seconds: float = FLUSH_DELAY_SECONDS) -> None:
        self._write = write
        self._delay = delay_seconds
        self._pending: Batch = {}
        self._wake = threading.Condition()
        self._flushing = threading.Lock()  # taken across take-and-write: a flush waits for one in flight
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name="chat-usage-writer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the writer and commit what is pending (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            with self._wake:
                self._wake.notify()
            thread.join()
        self.flush()

    def add(self, chat: str, platform: str, usage: Usage) -> None:
        with self._wake:
            key = (chat, platform)
            before = self._pending.get(key)
            self._pending[key] = usage if before is None else before.plus(usage)
            if len(self._pending) == 1 and before is None:
                self._wake.notify()

    def flush(self) -> None:
        """Commit everything added so far (and wait for a batch being written)."""
        with self._flushing:
            with self._wake:
                batch, self._pending = self._pending, {}
            if not batch:
                return
            try:
                self._write(batch)
            except Exception as exc:  # noqa: BLE001 - usage figures must never fail a turn or a read
                log.warning("usage.store_failed", error=type(exc).__name__, chats=len(batch))

    def _run(self) -> None:
        while not self._stopping.is_set():
            with self._wake:
                while not self._pending and not self._stopping.is_set():
                    self._wake.wait()
            self._stopping.wait(self._delay)  # gather the turns finishing meanwhile into this batch
            self.flush()


__all__ = ["FLUSH_DELAY_SECONDS", "UsageQueue"]
