"""The journal writes any message it is given as valid UTF-8 and gives the same message back after a restart."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings

from adapters.base import Attachment, InboundMessage
from adapters.normalize import normalize_inbound
from gateway.intake.journal import InboundJournal
from tests.adapters.strategies import hostile_text


def _inbound(text: str, name: str) -> InboundMessage:
    return InboundMessage(
        platform="web", chat_id="c", chat_type="dm", user_id="u", user_name=name, text=text, message_id="m",
        timestamp=5.0, delivery_id="web:c:m", attachments=(Attachment(kind="file", name=name),),
    )


@settings(max_examples=60, deadline=None)
@given(text=hostile_text, name=hostile_text)
def test_any_message_is_journaled_as_utf8_and_recovered_unchanged(text: str, name: str) -> None:
    """Even a message that skipped normalisation (lone surrogates, NUL) is written, and read back as the same text."""
    message = _inbound(text, name)
    with tempfile.TemporaryDirectory() as folder:
        journal = InboundJournal(Path(folder) / "inflight", node="a")
        journal.open()
        [entry] = journal.record_many([message])
        journal.close()
        assert isinstance(entry, str)
        files = [path for path in (Path(folder) / "inflight").rglob("*") if path.is_file() and path.suffix != ".lock"]
        assert files
        for path in files:
            path.read_bytes().decode("utf-8")  # strict: raises if the journal is not valid UTF-8
        restarted = InboundJournal(Path(folder) / "inflight", node="b")
        restarted.open()
        # The same text: only a surrogate pair left split in two code points comes back joined.
        assert [normalize_inbound(m) for _, m in restarted.recover()] == [normalize_inbound(message)]
        restarted.close()


def test_a_deeply_nested_entry_is_set_aside_not_fatal(tmp_path: Path) -> None:
    """A journal file nested past the JSON parser's limit is renamed .bad; recovery goes on with the others."""
    journal = InboundJournal(tmp_path / "inflight", node="a")
    journal.open()
    journal.record(_inbound("kept", "n"))
    (tmp_path / "inflight" / "a" / "00000000000001.000000-bad.json").write_text("[" * 100_000, encoding="utf-8")
    assert [m.text for _, m in journal.recover()] == ["kept"]
    assert len(list((tmp_path / "inflight" / "a").glob("*.bad"))) == 1
    journal.close()
