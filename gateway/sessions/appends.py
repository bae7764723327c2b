"""Group commit of session-store writes: requests that arrive together share one transaction.

Owns `GroupCommit` and `AppendBatcher`. Every turn appends its new messages
before its reply is recorded, and every new chat creates its session; one
SQLite transaction each costs a COMMIT (WAL page writes, a new full-text
index segment, and now and then a checkpoint with an fsync) plus a hop to a
worker thread, all serialised on the store's one connection. Here, requests
that arrive while a write is in flight wait for it and then go together in one
call of a batch function (one transaction, one hop). Nothing waits for
company: a lone request is written at once, so a quiet gateway sees no added
latency. Each caller still returns only after its own request is committed
(or gets its own error), so the order "stored, then reply recorded, then
sent" is unchanged. Each `GroupCommit` hands its calls to one writer thread of
its own (`_Writer`: a queue, and the answer posted back to the loop), which
costs about half a default-executor hop; the thread ends after a second idle.
Knows only the store.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from agent.messages import Message
from agent.store import SessionStore

MAX_BATCH = 256
WRITER_IDLE_SECONDS = 1.0  # a writer thread with nothing to do for this long ends (the next call starts one)

Request = TypeVar("Request")
Result = TypeVar("Result")


@dataclass(frozen=True, slots=True)
class _Pending(Generic[Request, Result]):
    request: Request
    done: asyncio.Future[Result]


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


class _Writer:
    """One thread running the calls handed to it, in order; each answer is posted back to the caller's loop."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()  # guards `_alive` against a thread ending as a call arrives
        self._alive = False

    def call(self, function: Callable[[], Any]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        context = contextvars.copy_context()  # log lines from the thread carry the caller's fields, as with to_thread
        self._calls.put((lambda: context.run(function), loop, done))
        with self._lock:
            if not self._alive:
                self._alive = True
                threading.Thread(target=self._run, name=self._name, daemon=True).start()
        return done

    def _run(self) -> None:
        while True:
            try:
                function, loop, done = self._calls.get(timeout=WRITER_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._calls.empty():
                        self._alive = False
                        return
                continue
            result: Any = None
            error: BaseException | None = None
            try:
                result = function()
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller, as to_thread would
                error = exc
            try:
                loop.call_soon_threadsafe(_settle, done, result, error)
            except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
                pass


class GroupCommit(Generic[Request, Result]):
    """Runs `batch` (sync, in its writer thread) over the requests queued while the previous call ran.

    Args:
        batch: takes requests, returns per request (same order) its result or the exception for its caller.
            Raising fails every request of that call.
        max_batch: the most requests one call carries.
        name: the writer thread's name.
    """

    def __init__(
        self,
        batch: Callable[[list[Request]], Sequence[Result | Exception]],
        *,
        max_batch: int = MAX_BATCH,
        name: str = "group-commit",
    ) -> None:
        self._batch = batch
        self._max_batch = max_batch
        self._queue: list[_Pending[Request, Result]] = []
        self._writer: asyncio.Task[None] | None = None
        self._thread = _Writer(name)

    async def submit(self, request: Request) -> Result:
        """Queue `request`; returns its result once its batch is committed (raises its own error)."""
        done: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(request, done))
        if self._writer is None:
            self._writer = asyncio.create_task(self._drain())
        return await done

    async def _drain(self) -> None:
        batch: list[_Pending[Request, Result]] = []
        try:
            while self._queue:
                batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
                # A caller cancelled before its write started is dropped, as a not-yet-started
                # `to_thread` call would be.
                batch = [entry for entry in batch if not entry.done.cancelled()]
                if not batch:
                    continue
                try:
                    outcomes = await self._thread.call(functools.partial(self._batch, [e.request for e in batch]))
                except Exception as exc:  # noqa: BLE001 - the whole call failed: every caller hears it
                    for entry in batch:
                        if not entry.done.done():
                            entry.done.set_exception(exc)
                    continue
                for entry, outcome in zip(batch, outcomes):
                    if entry.done.done():
                        continue
                    if isinstance(outcome, Exception):
                        entry.done.set_exception(outcome)
                    else:
                        entry.done.set_result(outcome)
                batch = []
        except BaseException:
            # Cancelled (shutdown) mid-write: nobody may wait forever for an answer.
            for entry in [*batch, *self._queue]:
                entry.done.cancel()
            self._queue = []
            raise
        finally:
            self._writer = None


class AppendBatcher:
    """`SessionStore.append` with group commit (`SessionStore.append_many`).

    Args:
        store: the session store (sync; its writes run in a worker thread).
        max_batch: the most appends one transaction carries.
    """

    def __init__(self, store: SessionStore, *, max_batch: int = MAX_BATCH) -> None:
        self._group: GroupCommit[tuple[str, tuple[Message, ...]], None] = GroupCommit(
            store.append_many, max_batch=max_batch, name="store-appends"
        )

    async def append(self, session_id: str, messages: Sequence[Message]) -> None:
        """Add `messages` to the session, in order; returns once they are committed.

        Raises:
            Whatever `SessionStore.append` would raise for this session (others in the batch are unaffected).
        """
        if messages:
            await self._group.submit((session_id, tuple(messages)))


__all__ = ["AppendBatcher", "GroupCommit", "MAX_BATCH"]
