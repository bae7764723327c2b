"""The shared journal and outbox on the real PostgreSQL: leases, takeover, idempotent intake, reply + finish at once."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import psycopg
import pytest

from adapters.base import InboundMessage
from agent.store.postgres import PostgresSessionStore
from gateway.coord.base import OutboundItem
from gateway.coord.memory import MemoryDeduplicator
from gateway.intake.journals import DuplicateDelivery, JournalCheckedDeduplicator, SharedJournal, TakenOver
from gateway.shared import PostgresJournal, PostgresOutbox
from tests.postgres import fresh_database

SHORT, LONG = 0.3, 60.0
DEADLINE = 10.0


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with fresh_database("chorus_shared") as found:
        yield found


@pytest.fixture
def store(url: str) -> Iterator[PostgresSessionStore]:
    with PostgresSessionStore(url) as opened:
        yield opened
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE chorus_inbound, chorus_outbox, chorus_replicas")


def _journal(store: PostgresSessionStore, node: str, lease: float = LONG) -> PostgresJournal:
    journal = PostgresJournal(store.connection, node=node, lease_seconds=lease)
    journal.open()
    return journal


def _message(n: int, text: str = "hello") -> InboundMessage:
    return InboundMessage(
        platform="telegram", chat_id="42", chat_type="dm", user_id="7", user_name="Ada", text=f"{text} {n}",
        message_id=str(n), timestamp=1_780_000_000.0 + n, delivery_id=f"telegram:{n}",
    )


def _take_when_expired(journal: PostgresJournal) -> list[TakenOver]:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        taken = journal.take_expired(limit=100)
        if taken:
            return taken
        time.sleep(0.05)  # polling the lease's expiry with a deadline
    return []


def test_a_dead_replicas_entries_are_taken_over_once_its_lease_runs_out(store: PostgresSessionStore) -> None:
    """A live replica's rows stay its own; once its lease lapses, exactly one other replica takes them, in order."""
    dead = _journal(store, "dead", lease=SHORT)
    first, second = dead.record_many([_message(1), _message(2)])
    assert isinstance(first, str) and isinstance(second, str)
    live = _journal(store, "live")
    assert live.backlog().pending == 2
    taken = _take_when_expired(live)
    assert [(t.entry, t.message, t.takeovers) for t in taken] == [(first, _message(1), 1), (second, _message(2), 1)]
    assert isinstance(live, SharedJournal)
    assert (live.take_expired(limit=100), _journal(store, "third").take_expired(limit=100)) == ([], [])
    assert live.backlog().claimed == 2


def test_renewing_keeps_a_live_replicas_entries(store: PostgresSessionStore) -> None:
    """A heartbeat within its lease keeps every row of the replica (one row written however many it owns); without
    it, they are taken over."""
    owner = _journal(store, "owner", lease=1.0)
    owner.record_many([_message(3), _message(31), _message(32)])
    other = _journal(store, "other")
    for _ in range(4):  # four half-leases: well past the first lease
        time.sleep(0.5)  # a clock the lease is measured against, not synchronisation
        assert owner.renew() == 1  # the heartbeat: one row, not one per message
        assert other.take_expired(limit=10) == []
    assert sorted(t.message.message_id for t in _take_when_expired(other)) == ["3", "31", "32"]


def test_a_killed_replicas_entries_are_taken_over_without_waiting_for_its_heartbeat(
    store: PostgresSessionStore, url: str
) -> None:
    """A replica beating on a connection of its own is dead the moment that connection's server process ends
    (SIGKILL closes it): another takes its rows on its next poll, long before the heartbeat's lease would lapse."""
    killed = PostgresJournal(store.connection, node="killed", lease_seconds=LONG, url=url)
    killed.open()
    killed.record(_message(34))
    other = _journal(store, "other", lease=LONG)
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT backend FROM chorus_replicas WHERE node = 'killed'").fetchone()
        assert row is not None and row[0] is not None
        assert other.take_expired(limit=10) == []  # alive: its connection is open
        conn.execute("UPDATE chorus_inbound SET lease_until = 0 WHERE owner = 'killed'")  # past its first lease
        assert other.take_expired(limit=10) == []  # still alive: the heartbeat keeps it
        conn.execute("SELECT pg_terminate_backend(%s)", (row[0],))  # what the server does when the process dies
    assert [t.message.message_id for t in _take_when_expired(other)] == ["34"]


def test_a_replica_that_stops_hands_its_entries_over_at_once(store: PostgresSessionStore) -> None:
    """Closed (SIGTERM), a replica ends its heartbeat and its leases: another takes its rows without waiting."""
    stopping = _journal(store, "stopping", lease=LONG)
    stopping.record(_message(33))
    other = _journal(store, "other", lease=LONG)
    assert other.take_expired(limit=10) == []
    stopping.close()
    assert [t.message.message_id for t in other.take_expired(limit=10)] == ["33"]


async def test_a_dead_senders_claim_is_freed_with_its_heartbeat(store: PostgresSessionStore) -> None:
    """A reply claimed for a long send stays its sender's while the sender's heartbeat goes on; once the heartbeat
    lapses (the replica died), another claims it long before the claim's own lease would end."""
    sender = _journal(store, "sender", lease=2.0)
    outbox = PostgresOutbox(store.connection)
    item_id = await outbox.put(OutboundItem("telegram", "42", None, "reply", "key"))
    assert await outbox.claim(item_id, owner=f"sender:{item_id}", ttl=LONG)
    for _ in range(3):  # three heartbeats, each within the last one's lease
        assert sender.renew() == 1
        assert not await outbox.claim(item_id, owner=f"other:{item_id}", ttl=LONG)
        await asyncio.sleep(0.5)  # a clock the heartbeat is measured against, not synchronisation
    deadline = time.monotonic() + DEADLINE  # well short of the claim's LONG lease
    while not await outbox.claim(item_id, owner=f"other:{item_id}", ttl=LONG):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)  # polling the heartbeat's expiry with a deadline


def test_a_redelivery_records_nothing_on_any_replica(store: PostgresSessionStore) -> None:
    """The platform key is unique: a second record (this replica or another, before or after done) is a duplicate."""
    one, two = _journal(store, "one"), _journal(store, "two")
    entry = one.record(_message(4))
    outcomes = two.record_many([_message(4), _message(5), _message(5)])
    assert isinstance(outcomes[0], DuplicateDelivery) and isinstance(outcomes[2], DuplicateDelivery)
    assert isinstance(outcomes[1], str)
    one.done(entry)
    one.close()  # applies the queued `done`
    assert two.known("telegram:4") and not two.known("telegram:6")
    with pytest.raises(DuplicateDelivery, match="telegram:4"):
        two.record(_message(4))
    assert one.backlog().pending == 1


async def test_a_refused_fast_claim_counts_only_when_the_journal_knows_the_delivery(store: PostgresSessionStore) -> None:
    """A replica that claimed a delivery and died before recording it does not make its redelivery a duplicate."""
    journal = _journal(store, "one")
    dedup = JournalCheckedDeduplicator(MemoryDeduplicator(now=time.time), journal)
    assert await dedup.claim("telegram:7")  # first claim, then the claimer died before recording
    assert await dedup.claim("telegram:7")  # the redelivery goes ahead
    journal.record(_message(7))
    assert not await dedup.claim("telegram:7")


async def test_recording_a_reply_finishes_its_message_in_the_same_transaction(store: PostgresSessionStore) -> None:
    """After `put`, the message is never re-run; a second reply to it returns the first, unclaimable by another."""
    journal, outbox = _journal(store, "one", lease=SHORT), PostgresOutbox(store.connection)
    entry = journal.record(_message(8))
    item = OutboundItem("telegram", "42", None, "echo: hello 8", "key", answers=entry)
    item_id = await outbox.put(item)
    assert journal.backlog().pending == 0
    assert _journal(store, "two").take_expired(limit=10) == []
    assert await outbox.claim(item_id, owner="one", ttl=LONG)
    again = await outbox.put(OutboundItem("telegram", "42", None, "echo: hello 8 (rerun)", "key", answers=entry))
    assert again == item_id
    assert not await outbox.claim(again, owner="two", ttl=LONG)
    assert [p.item.text for p in await outbox.pending()] == ["echo: hello 8"]


async def test_a_reply_whose_sender_died_is_claimed_by_another_after_the_claim_lapses(store: PostgresSessionStore) -> None:
    """Claims are leases: the dead sender's lapses, one other sender gets it, and after ack nobody."""
    _journal(store, "tables")
    outbox = PostgresOutbox(store.connection)
    item_id = await outbox.put(OutboundItem("telegram", "42", None, "reply", "key"))
    assert await outbox.claim(item_id, owner="dead", ttl=SHORT)
    assert not await outbox.claim(item_id, owner="two", ttl=LONG)
    deadline = time.monotonic() + DEADLINE
    while not await outbox.claim(item_id, owner="two", ttl=LONG):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)  # polling the claim's expiry with a deadline
    assert not await outbox.claim(item_id, owner="three", ttl=LONG)
    [pending] = await outbox.pending()
    assert (pending.id, pending.attempts) == (item_id, 2)
    await outbox.ack(item_id)
    assert (await outbox.pending(), await outbox.claim(item_id, owner="two", ttl=LONG)) == ([], False)
    assert outbox.backlog() == 0


def test_an_unreadable_row_is_finished_not_retried_forever(store: PostgresSessionStore, url: str) -> None:
    journal = _journal(store, "dead", lease=SHORT)
    entry = journal.record(_message(9))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE chorus_inbound SET message = 'not json' WHERE entry = %s", (entry,))
    other = _journal(store, "other")
    deadline = time.monotonic() + DEADLINE
    while other.backlog().pending and time.monotonic() < deadline:
        assert other.take_expired(limit=10) == []
        time.sleep(0.05)  # polling the lease's expiry with a deadline
    assert other.backlog().pending == 0
