"""`InboundJournal` as one append-only file per process: bursts, old-format entries, torn lines, starting over."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.base import InboundMessage
from gateway.intake import journal as journal_module
from gateway.intake.journal import InboundJournal


def _inbound(text: str, ts: float) -> InboundMessage:
    return InboundMessage(
        platform="web", chat_id="c", chat_type="dm", user_id="u", user_name="n", text=text, message_id=text,
        timestamp=ts, delivery_id=f"web:c:{text}",
    )


def _files(directory: Path) -> list[str]:
    return sorted(path.suffix for path in directory.rglob("*") if path.is_file() and path.suffix != ".lock")


def test_a_burst_and_its_completions_go_to_one_file(tmp_path: Path) -> None:
    """Many messages recorded and finished leave one file in the node's directory, not one per message."""
    journal = InboundJournal(tmp_path / "inflight", node="n")
    journal.open()
    entries = journal.record_many([_inbound(str(n), float(n)) for n in range(50)])
    journal.record(_inbound("lone", 99.0))
    for entry in entries[:-1]:
        journal.done(str(entry))
    assert (_files(tmp_path / "inflight" / "n"), journal.pending_count()) == ([".log"], 2)
    journal.close()


def test_entries_of_the_one_file_per_message_format_are_recovered(tmp_path: Path) -> None:
    """A home written by an earlier version (a .json file per message) still replays after the upgrade."""
    node_dir = tmp_path / "inflight" / "old"
    node_dir.mkdir(parents=True)
    fields = {"platform": "web", "chat_id": "c", "chat_type": "dm", "user_id": "u", "user_name": "n", "text": "legacy",
              "message_id": "legacy", "timestamp": 5.0, "delivery_id": "web:c:legacy", "attachments": []}
    (node_dir / "00000000000005.000000-abc00000000.json").write_text(json.dumps(fields), encoding="utf-8")
    journal = InboundJournal(tmp_path / "inflight", node="new")
    journal.open()
    recovered = journal.recover()
    assert [m.text for _, m in recovered] == ["legacy"]
    journal.done(recovered[0][0])
    assert (journal.recover(), journal.pending_count()) == ([], 0)
    journal.close()


def test_a_torn_last_line_is_dropped_and_the_rest_replays(tmp_path: Path) -> None:
    """A crash mid-write tears only the message being written (never queued); the others come back."""
    first = InboundJournal(tmp_path / "inflight", node="a")
    first.open()
    first.record_many([_inbound("kept", 1.0), _inbound("also kept", 2.0)])
    first.close()
    (log,) = (tmp_path / "inflight" / "a").glob("*.log")
    with log.open("ab") as handle:
        handle.write(b'+00000000000003.000000-x00000000 {"platform": "we')
    second = InboundJournal(tmp_path / "inflight", node="b")
    second.open()
    assert [m.text for _, m in second.recover()] == ["kept", "also kept"]
    second.close()


def test_the_file_starts_over_once_nothing_is_unfinished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the size bound, finishing the last open entry empties the file, so it never grows without bound."""
    monkeypatch.setattr(journal_module, "COMPACT_AFTER_BYTES", 2_000)
    journal = InboundJournal(tmp_path / "inflight", node="n")
    journal.open()
    for n in range(20):
        journal.done(journal.record(_inbound(f"message {n}", float(n))))
    (log,) = (tmp_path / "inflight" / "n").glob("*.log")
    assert log.stat().st_size < 2_000
    open_entry = journal.record(_inbound("still open", 50.0))
    journal.close()
    restarted = InboundJournal(tmp_path / "inflight", node="n")
    restarted.open()
    assert [(e, m.text) for e, m in restarted.recover()] == [(open_entry, "still open")]
    restarted.close()
