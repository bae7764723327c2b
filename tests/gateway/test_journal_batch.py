"""`InboundJournal.record_many`: a burst journaled in one call, each message its own entry."""
from __future__ import annotations

from pathlib import Path

from adapters.base import InboundMessage
from gateway.intake.journal import InboundJournal


def _inbound(text: str, ts: float) -> InboundMessage:
    return InboundMessage(
        platform="web", chat_id="c", chat_type="dm", user_id="u", user_name="n", text=text, message_id=text,
        timestamp=ts, delivery_id=f"web:c:{text}",
    )


def test_record_many_writes_one_entry_per_message_recovered_in_order(tmp_path: Path) -> None:
    """Every message of a burst gets its own entry; unfinished ones come back oldest first after a restart."""
    first = InboundJournal(tmp_path / "inflight", node="host:1")
    first.open()
    entries = first.record_many([_inbound("a", 1.0), _inbound("b", 2.0), _inbound("c", 3.0)])
    assert all(isinstance(entry, str) for entry in entries) and len(set(entries)) == 3
    first.done(str(entries[1]))
    first.close()
    restarted = InboundJournal(tmp_path / "inflight", node="host:2")
    restarted.open()
    assert [m for _, m in restarted.recover()] == [_inbound("a", 1.0), _inbound("c", 3.0)]
    restarted.close()


def test_record_many_reports_a_failed_write_per_message(tmp_path: Path) -> None:
    """Without the journal directory (not opened) each write fails alone, as an OSError in its slot."""
    journal = InboundJournal(tmp_path / "missing", node="n")
    outcomes = journal.record_many([_inbound("a", 1.0), _inbound("b", 2.0)])
    assert [type(o).__name__ for o in outcomes] == ["FileNotFoundError", "FileNotFoundError"]
