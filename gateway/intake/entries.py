"""The one owner of an inbound message's journal entry: taken → recorded → done, or dead-lettered.

Owns `JournalEntries`. A message taken from the adapters' queue is "in hand"
until intake decides it; one that becomes a lane job is recorded in the
journal first (a burst in one call), and its entry is done when its reply is
recorded (or the chat was told of a failure), when the user stops it, or when
it is set aside as a dead letter (only once the letter is stored). A job
cancelled by a shutdown leaves its entry for the next start; what is still in
hand or queued at shutdown is recorded then. The gateway's intake loop and
the turn runner both go through here, so an entry has one life in one place.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from types import TracebackType

import structlog

from adapters.base import InboundMessage
from adapters.normalize import normalize_inbound
from gateway.intake.deadletter import DeadLetterBox, Stage
from gateway.intake.journals import Journal, SharedJournal
from gateway.intake.queueing import Job
from gateway.ops.events import DeadLettered, EventBus

log = structlog.get_logger(__name__)

Decide = Callable[[InboundMessage], Awaitable[bool]]  # whether a message becomes a lane job (so it is journaled)


class JobEntry:
    """`JournalEntries.running`'s `with`: the job's entry is done when it ends, left for a re-run when cancelled.

    A class, not a `contextmanager`: entered by every job, a generator costs more than what it wraps.
    """

    __slots__ = ("_entries", "_journal_entries")

    def __init__(self, entries: JournalEntries, journal_entries: tuple[str, ...]) -> None:
        self._entries = entries
        self._journal_entries = journal_entries  # the job's own, and those of messages collected or merged into it

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        answered = self._entries.answered_entries
        for entry in self._journal_entries:
            if exc_type is not None:
                answered.discard(entry)  # cancelled (stop, interrupt, shutdown): re-run after a restart unless answered
            elif entry in answered:
                answered.discard(entry)  # done already, when its reply was recorded
            else:
                self._entries.journal.done(entry)


class JournalEntries:
    """Journal entries from the moment a message is taken until it is done or dead-lettered.

    Args:
        journal: the inbound journal (per home, or shared by replicas).
        deadletters: where a message that cannot be handled is set aside.
        bus: where a dead letter is published (metrics, the admin event list).
    """

    def __init__(self, journal: Journal, deadletters: DeadLetterBox, bus: EventBus) -> None:
        self.journal = journal
        self.deadletters = deadletters
        self._bus = bus
        # Decided once: a runtime Protocol check costs more than the rest of recording a lone message.
        self.shared: SharedJournal | None = journal if isinstance(journal, SharedJournal) else None
        self.in_hand: list[InboundMessage] = []  # taken from the queue, not yet decided
        self.answered_entries: set[str] = set()  # done when their reply was recorded; their job still runs
        self._writing: asyncio.Future[list[str | Exception]] | None = None

    def take(self, messages: list[InboundMessage]) -> None:
        """`messages` are in hand (the intake loop removes each from the list once decided)."""
        self.in_hand = messages

    def set_aside_in_hand(self) -> None:
        """Messages left in hand by an intake loop that died are dead-lettered, not retried.

        One of them may be what killed it, and retrying would stop every chat again.
        """
        left, self.in_hand = self.in_hand, []
        for message in left:
            self.dead_letter(message, stage="intake", error=RuntimeError("intake loop died while handling it"))

    async def record(self, accepted: list[InboundMessage]) -> list[str | Exception]:
        """Journal entries for `accepted` (per message its entry or the error that kept it out)."""
        try:
            if self.shared is None:
                # The home's journal takes a burst in one append to a file it holds open: a few
                # microseconds a message, less than the worker-thread hop that would carry it.
                return self.journal.record_many(accepted)
            writing = asyncio.ensure_future(asyncio.to_thread(self.journal.record_many, accepted))
            try:
                return await asyncio.shield(writing)
            except asyncio.CancelledError:
                self._writing = writing  # `keep_unfinished` waits for it: the thread finishes the rows
                raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - each message is dead-lettered with this error
            return [exc for _ in accepted]

    def record_decided(self, messages: list[InboundMessage]) -> None:
        """Record at once (stopping: the intake loop is cancelled between deciding and recording)."""
        self.journal.record_many(messages)

    def record_one(self, message: InboundMessage) -> str:
        return self.journal.record(message)

    def done(self, entry: str | None) -> None:
        """The entry's message needs no re-run: refused, answered at once, or stopped by the user."""
        if entry is not None:
            self.journal.done(entry)

    def forget(self, job: Job | None) -> None:
        """A job the user stopped is not re-run after a restart."""
        if job is not None:
            for entry in job.entries:
                self.done(entry)

    def running(self, job: Job) -> JobEntry:
        """`with entries.running(job):` around a job's run: done at its end, kept when it is cancelled."""
        return JobEntry(self, job.entries)

    def answered(self, job: Job) -> None:
        """The job's reply is recorded (durable): its messages need not be re-run, even if the job is cancelled now."""
        for entry in job.entries:
            self.journal.done(entry)
            self.answered_entries.add(entry)

    def dead_letter(self, message: InboundMessage, *, stage: Stage, error: BaseException,
                    entry: str | None = None) -> None:
        """Set `message` aside (one error line); its entry is done only once the letter is stored."""
        letter = self.deadletters.put(message, stage=stage, error=error)
        log.error("intake.dead_lettered", stage=stage, error=letter.error, deadletter=letter.id,
                  platform=message.platform, stored=letter.stored, exc_info=error)
        self._bus.publish(DeadLettered(stage, message.platform, letter.error))
        if letter.stored and entry is not None:
            self.journal.done(entry)

    async def keep_unfinished(self, queue: asyncio.Queue[InboundMessage], joins_lane: Decide) -> None:
        """Stopping: messages in hand or still queued that would become lane jobs are recorded for the next start."""
        writing, self._writing = self._writing, None
        if writing is not None:
            with contextlib.suppress(Exception):
                await writing
        in_hand, self.in_hand = self.in_hand, []
        while in_hand or not queue.empty():
            message = normalize_inbound(in_hand.pop(0) if in_hand else queue.get_nowait())
            try:
                if await joins_lane(message):
                    self.journal.record(message)
            except Exception as exc:  # noqa: BLE001 - stopping goes on; the message is kept as a dead letter
                self.dead_letter(message, stage="journal", error=exc)


__all__ = ["JobEntry", "JournalEntries"]
