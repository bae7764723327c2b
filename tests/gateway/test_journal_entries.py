"""A journal entry has one owner: done when its job ends or its reply is recorded, kept when the job is cancelled."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.base import InboundMessage
from gateway.intake.deadletter import DeadLetterBox
from gateway.intake.entries import JournalEntries
from gateway.intake.journal import InboundJournal
from gateway.intake.queueing import Job
from gateway.intake.routing import route
from gateway.ops.events import DeadLettered, EventBus


def _message(text: str) -> InboundMessage:
    return InboundMessage(platform="web", chat_id="c", chat_type="dm", user_id="u", user_name="U", text=text,
                          message_id=text, timestamp=1.0)


def _job(entries: JournalEntries, text: str) -> Job:
    message = _message(text)
    [entry] = entries.journal.record_many([message])
    assert isinstance(entry, str)
    return Job("turn", message, route(message, profile="p", group_sessions_per_user=False), journal_entry=entry)


def _unfinished(directory: Path) -> list[str]:
    """What the next start would replay (a fresh process's view of the files)."""
    journal = InboundJournal(directory, node="next")
    journal.open()
    try:
        return [message.text for _, message in journal.recover()]
    finally:
        journal.close()


def _entries(tmp_path: Path, bus: EventBus) -> JournalEntries:
    journal = InboundJournal(tmp_path / "inflight")
    journal.open()
    return JournalEntries(journal, DeadLetterBox(tmp_path / "deadletter"), bus)


@pytest.fixture
def entries(tmp_path: Path) -> JournalEntries:
    return _entries(tmp_path, EventBus())


async def test_an_entry_is_done_once_its_job_ends_or_its_reply_is_recorded(entries: JournalEntries, tmp_path: Path) -> None:
    ended, answered_then_cancelled, cancelled = (_job(entries, t) for t in ("ended", "answered", "cancelled"))
    with entries.running(ended):
        pass
    with pytest.raises(asyncio.CancelledError), entries.running(answered_then_cancelled):
        entries.answered(answered_then_cancelled)  # the reply is in the outbox: no re-run needed
        raise asyncio.CancelledError
    with pytest.raises(asyncio.CancelledError), entries.running(cancelled):
        raise asyncio.CancelledError  # shutdown mid-turn: re-run at the next start
    entries.journal.close()
    assert _unfinished(tmp_path / "inflight") == ["cancelled"]
    assert entries.answered_entries == set()


async def test_a_stored_dead_letter_leaves_the_journal(tmp_path: Path) -> None:
    seen: list[object] = []
    bus = EventBus()
    bus.subscribe(seen.append)
    entries = _entries(tmp_path, bus)
    job = _job(entries, "poison")
    entries.dead_letter(job.message, stage="dispatch", error=ValueError("bad"), entry=job.journal_entry)
    entries.journal.close()
    assert _unfinished(tmp_path / "inflight") == []
    assert entries.deadletters.count() == 1
    assert [type(event) for event in seen] == [DeadLettered]


async def test_messages_in_hand_and_queued_at_stop_are_kept_for_the_next_start(
    entries: JournalEntries, tmp_path: Path
) -> None:
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    entries.take([_message("in hand"), _message("ignored")])
    queue.put_nowait(_message("queued"))

    async def joins_lane(message: InboundMessage) -> bool:
        return message.text != "ignored"

    await entries.keep_unfinished(queue, joins_lane)
    entries.journal.close()
    assert sorted(_unfinished(tmp_path / "inflight")) == ["in hand", "queued"]
    assert entries.in_hand == [] and queue.empty()
