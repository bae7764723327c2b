"""The inbound journal contract: `Journal` (per home, `journal.py`) and `SharedJournal` (across replicas).

Owns the Protocols, `DuplicateDelivery` (recording found the delivery
recorded already, by this replica or another) and the values a shared
journal reports (`TakenOver`, `JournalBacklog`). The gateway depends on
these, never on a backend.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from adapters.base import InboundMessage
from chorus_errors import ChorusError
from gateway.coord.base import DEFAULT_DEDUP_TTL, Deduplicator

MAX_TAKEOVERS = 10
"""A message whose replica died this many times while it held it is set aside (it may be what kills them).

Replica churn alone hands healthy messages on too: a taker waits out the dead holder's session lock, and may
die meanwhile. Under `tests/gateway/test_failover.py`'s 20 kills in 30 s a quiet run hands a cohort on 3
times, and a loaded CI machine set one aside at 5; 10 still stops a message that kills every replica."""


class DuplicateDelivery(ChorusError):
    """The platform delivered a message again that a replica recorded already; it is dropped, not quarantined."""

    def __init__(self, dedup_key: str) -> None:
        super().__init__(f"delivery {dedup_key} was recorded already")
        self.dedup_key = dedup_key


@dataclass(frozen=True, slots=True)
class TakenOver:
    """A message another replica accepted and did not finish; `takeovers` counts how often it changed hands."""

    entry: str
    message: InboundMessage
    takeovers: int


@dataclass(frozen=True, slots=True)
class JournalBacklog:
    pending: int  # unfinished messages
    claimed: int  # of them, leased by a running replica
    expired: int  # of them, past their lease: waiting to be taken over


class Journal(Protocol):
    """Accepted messages whose turn has not finished: recorded before the turn is queued, done after."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def record(self, message: InboundMessage) -> str:
        """The entry id for `done`; raises when the message could not be recorded."""
        ...

    def record_many(self, messages: list[InboundMessage]) -> list[str | Exception]:
        """Per message its entry, or the error that kept it out (`DuplicateDelivery` for a redelivery)."""
        ...

    def done(self, entry: str) -> None: ...

    def recover(self) -> list[tuple[str, InboundMessage]]:
        """At start: unfinished messages this process should re-run, oldest first."""
        ...

    def pending_count(self) -> int: ...


@runtime_checkable
class SharedJournal(Journal, Protocol):
    """A journal replicas share: each entry leased to one replica, taken over when that lease runs out."""

    lease_seconds: float

    def renew(self) -> int:
        """Extend the lease of every entry this replica holds; returns how many."""
        ...

    def take_expired(self, *, limit: int) -> list[TakenOver]:
        """Take over entries whose lease ran out (their replica died), oldest first."""
        ...

    def known(self, dedup_key: str) -> bool:
        """Whether any replica recorded this delivery (unfinished, or finished recently)."""
        ...

    def note_draft(self, entry: str, message_id: str) -> None:
        """Remember the streamed draft of this entry's reply (a taker edits it rather than send another); may
        return before it is written, never blocks the event loop for long."""
        ...

    def draft_of(self, entry: str) -> str | None: ...

    def backlog(self) -> JournalBacklog: ...

    def prune(self) -> int:
        """Forget finished entries old enough that no platform redelivers them; returns how many."""
        ...


class JournalCheckedDeduplicator:
    """A `Deduplicator` whose "seen before" a shared journal must confirm.

    The fast claim (Redis) is taken before the message is recorded; a replica that dies in
    between would make every redelivery a "duplicate" and the message would be lost. So a
    refused claim counts only when some replica did record the delivery; otherwise the
    redelivery goes ahead (recording it is idempotent by the same key, so two never both run).
    """

    def __init__(self, inner: Deduplicator, journal: SharedJournal) -> None:
        self._inner = inner
        self._journal = journal

    async def claim(self, delivery_id: str, *, ttl: float = DEFAULT_DEDUP_TTL) -> bool:
        if await self._inner.claim(delivery_id, ttl=ttl):
            return True
        return not await asyncio.to_thread(self._journal.known, delivery_id)


__all__ = [
    "MAX_TAKEOVERS", "DuplicateDelivery", "Journal", "JournalBacklog", "JournalCheckedDeduplicator", "SharedJournal",
    "TakenOver",
]
