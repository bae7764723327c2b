"""Group commit of session-store appends: turns that finish together share one transaction.

Owns `AppendBatcher`. Every turn appends its new messages before its reply is
recorded; one SQLite transaction per turn costs a COMMIT (WAL page writes,
a new full-text index segment, and now and then a checkpoint with an fsync)
plus a hop to a worker thread. Here, appends that arrive while a write is in
flight wait for it and then go together in one `SessionStore.append_many`
transaction. Nothing waits for company: a lone append is written at once, so
a quiet gateway sees no added latency. Each caller still returns only after
its own messages are committed (or gets its own error), so the order "stored,
then reply recorded, then sent" is unchanged. Knows only the store.
"""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from agent.messages import Message
from agent.store import SessionStore

MAX_BATCH = 256


@dataclass(frozen=True, slots=True)
class _Pending:
    session_id: str
    messages: tuple[Message, ...]
    done: asyncio.Future[None]


class AppendBatcher:
    """`append` with group commit over one `SessionStore`.

    Args:
        store: the session store (sync; its writes run in a worker thread).
        max_batch: the most appends one transaction carries.
    """

    def __init__(self, store: SessionStore, *, max_batch: int = MAX_BATCH) -> None:
        self._store = store
        self._max_batch = max_batch
        self._queue: list[_Pending] = []
        self._writer: asyncio.Task[None] | None = None

    async def append(self, session_id: str, messages: Sequence[Message]) -> None:
        """Add `messages` to the session, in order; returns once they are committed.

        Raises:
            Whatever `SessionStore.append` would raise for this session (others in the batch are unaffected).
        """
        if not messages:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(session_id, tuple(messages), done))
        if self._writer is None:
            self._writer = asyncio.create_task(self._drain())
        await done

    async def _drain(self) -> None:
        batch: list[_Pending] = []
        try:
            while self._queue:
                batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
                # A caller cancelled before its write started is dropped, as a not-yet-started
                # `to_thread` call would be.
                batch = [entry for entry in batch if not entry.done.cancelled()]
                if not batch:
                    continue
                try:
                    outcomes = await asyncio.to_thread(
                        self._store.append_many, [(entry.session_id, entry.messages) for entry in batch]
                    )
                except Exception as exc:  # noqa: BLE001 - the whole transaction failed: every caller hears it
                    for entry in batch:
                        if not entry.done.done():
                            entry.done.set_exception(exc)
                    continue
                for entry, outcome in zip(batch, outcomes):
                    if entry.done.done():
                        continue
                    if outcome is None:
                        entry.done.set_result(None)
                    else:
                        entry.done.set_exception(outcome)
                batch = []
        except BaseException:
            # Cancelled (shutdown) mid-write: nobody may wait forever for an answer.
            for entry in [*batch, *self._queue]:
                entry.done.cancel()
            self._queue = []
            raise
        finally:
            self._writer = None


__all__ = ["AppendBatcher", "MAX_BATCH"]
