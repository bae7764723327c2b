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
sent" is unchanged.

No task runs a batch: a callback on the loop hands it to one writer thread of
the `GroupCommit`'s own (`_Writer`: a queue, the answer posted back to the
loop), and the answer's callback settles the callers and starts the next
batch. That is about half a default-executor hop and two loop turns fewer per
write than a draining task around `asyncio.to_thread`; the thread ends after
a second idle. A batch of at most `MAX_INLINE_BATCH` requests to a local
store (`LocalAppends`: SQLite) is committed by that callback on the loop
instead, when the store can take it at once (no thread holding it, no process
writing the file, no checkpoint due): the round trip to the thread cost ~70 us
of CPU beside a lone commit's ~150 us, and with a hundred chats the writer
thread's turns at the GIL cost the loop more than the commits it carried
(side by side at 100 chats: CPU a message x0.79 and messages a second x1.27
with 6 messages a chat, x0.97 and x1.04 with 20; see docs/design.md 4.2).
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
from agent.store import LocalAppends, SessionStore

MAX_BATCH = 256
# The most appends a batch run on the event loop carries (`inline`): ~60 us of SQLite each, so the loop is
# held ~2 ms at most; a bigger batch goes to the writer thread.
MAX_INLINE_BATCH = 32
WRITER_IDLE_SECONDS = 1.0  # a writer thread with nothing to do for this long ends (the next call starts one)

Request = TypeVar("Request")
Result = TypeVar("Result")
Answer = Callable[[Any, BaseException | None], None]  # (result, error): called on the loop


@dataclass(frozen=True, slots=True)
class _Pending(Generic[Request, Result]):
    request: Request
    done: asyncio.Future[Result]
    # Set for a request written even when `done` is cancelled: it then hears the outcome instead.
    kept: asyncio.Future[Result] | None = None


class _Writer:
    """One thread running the calls handed to it, in order; each answer is posted back to the caller's loop."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.AbstractEventLoop, Answer]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()  # guards `_alive` against a thread ending just as a call arrives
        self._alive = False

    def call(self, function: Callable[[], Any], answer: Answer) -> None:
        """Run `function` in the thread; `answer(result, error)` is then called on the running loop."""
        context = contextvars.copy_context()  # log lines from the thread carry the caller's fields, as with to_thread
        self._calls.put((functools.partial(context.run, function), asyncio.get_running_loop(), answer))
        with self._lock:
            if not self._alive:
                self._alive = True
                threading.Thread(target=self._run, name=self._name, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                function, loop, answer = self._calls.get(timeout=WRITER_IDLE_SECONDS)
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
            except BaseException as exc:  # noqa: BLE001 - handed to the loop's callers, as to_thread would
                error = exc
            try:
                loop.call_soon_threadsafe(answer, result, error)
            except RuntimeError:  # the loop closed meanwhile: nobody waits for this answer any more
                pass


class GroupCommit(Generic[Request, Result]):
    """Runs `batch` (sync, in its writer thread) over the requests queued while the previous call ran.

    Args:
        batch: takes requests, returns per request (same order) its result or the exception for its caller.
            Raising fails every request of that call.
        max_batch: the most requests one call carries.
        name: the writer thread's name.
        inline: runs a batch at once on the loop, or declines (None) and the writer thread runs it.
        max_inline: the most requests `inline` is offered; a bigger batch goes to the writer thread.
    """

    def __init__(
        self,
        batch: Callable[[list[Request]], Sequence[Result | Exception]],
        *,
        max_batch: int = MAX_BATCH,
        name: str = "group-commit",
        inline: Callable[[list[Request]], Sequence[Result | Exception] | None] | None = None,
        max_inline: int = MAX_INLINE_BATCH,
    ) -> None:
        self._batch = batch
        self._inline = inline
        self._max_inline = max_inline
        self._max_batch = max_batch
        self._queue: list[_Pending[Request, Result]] = []
        self._busy = False  # a batch is being written, or the start of one is scheduled
        self._writer = _Writer(name)

    def submit(self, request: Request) -> asyncio.Future[Result]:
        """Queue `request`; the future holds its result once its batch is committed (or its own error).

        Cancelling the future before its batch starts drops the request, as a
        not-yet-started `to_thread` call would be; once started, it is written.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Result] = loop.create_future()
        self._queue.append(_Pending(request, done))
        self._wake(loop)
        return done

    def submit_kept(self, request: Request) -> tuple[asyncio.Future[Result], asyncio.Future[Result]]:
        """Queue `request` to be written even if its caller is cancelled meanwhile (as under `asyncio.shield`).

        Returns `(done, kept)`: await `done`; once `done` is cancelled, `kept` holds the outcome (before
        that it stays pending, so an outcome nobody asked for is never left unretrieved). One future
        more than `submit`, but no shield's future, callback and loop turn between the write and its caller.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Result] = loop.create_future()
        kept: asyncio.Future[Result] = loop.create_future()
        self._queue.append(_Pending(request, done, kept))
        self._wake(loop)
        return done, kept

    def _wake(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._busy:
            self._busy = True
            loop.call_soon(self._start)  # after this loop turn: the requests made in it go together

    def _start(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
            batch = [entry for entry in batch if entry.kept is not None or not entry.done.cancelled()]
            if not batch:
                continue
            requests = [entry.request for entry in batch]
            if len(batch) <= self._max_inline and self._inline is not None and self._ran_inline(batch, requests):
                continue
            self._writer.call(functools.partial(self._batch, requests), functools.partial(self._settle, batch))
            return
        self._busy = False

    def _ran_inline(self, batch: list[_Pending[Request, Result]], requests: list[Request]) -> bool:
        """A small batch run by `inline` here on the loop; False when it declined (the writer thread runs it)."""
        assert self._inline is not None
        try:
            outcomes = self._inline(requests)
        except Exception as exc:  # noqa: BLE001 - handed to its caller, as from the writer thread
            self._settle_each(batch, None, exc)
            return True
        if outcomes is None:
            return False
        self._settle_each(batch, outcomes, None)
        return True

    def _settle(self, batch: list[_Pending[Request, Result]], outcomes: Any, error: BaseException | None) -> None:
        self._settle_each(batch, outcomes, error)
        self._start()

    @staticmethod
    def _settle_each(batch: list[_Pending[Request, Result]], outcomes: Any, error: BaseException | None) -> None:
        for index, entry in enumerate(batch):
            target: asyncio.Future[Result] | None = entry.done
            if entry.done.done():
                target = entry.kept  # cancelled meanwhile: whoever carried the request on hears of it here
            if target is None or target.done():
                continue
            outcome = error if error is not None else outcomes[index]  # the whole call failing fails each caller
            if isinstance(outcome, BaseException):
                target.set_exception(outcome)
            else:
                target.set_result(outcome)


class AppendBatcher:
    """`SessionStore.append` with group commit (`SessionStore.append_many`).

    Args:
        store: the session store (sync; its writes run in the batcher's writer thread).
        max_batch: the most appends one transaction carries.
    """

    def __init__(self, store: SessionStore, *, max_batch: int = MAX_BATCH) -> None:
        # A local store commits a small batch on the loop (unless that would wait): the writer-thread
        # round trip (~70 us of CPU and two wake-ups) cost about as much as the commit it carried.
        inline = store.append_many_now if isinstance(store, LocalAppends) else None
        self._group: GroupCommit[tuple[str, tuple[Message, ...]], None] = GroupCommit(
            store.append_many, max_batch=max_batch, name="store-appends", inline=inline
        )

    async def append(self, session_id: str, messages: Sequence[Message]) -> None:
        """Add `messages` to the session, in order; returns once they are committed.

        Raises:
            Whatever `SessionStore.append` would raise for this session (others in the batch are unaffected).
        """
        if messages:
            await self._group.submit((session_id, tuple(messages)))

    def append_soon(self, session_id: str, messages: Sequence[Message]) -> asyncio.Future[None]:
        """Queue the append; the future is done once it is committed. Cancel it only to drop the append."""
        return self._group.submit((session_id, tuple(messages)))

    def append_kept(self, session_id: str, messages: Sequence[Message]) -> tuple[asyncio.Future[None], asyncio.Future[None]]:
        """Queue an append that is committed even if its caller is cancelled (`GroupCommit.submit_kept`)."""
        return self._group.submit_kept((session_id, tuple(messages)))


__all__ = ["AppendBatcher", "GroupCommit", "MAX_BATCH"]
