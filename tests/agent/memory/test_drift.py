"""Drift: notes changed outside the tool are detected on the next load or write, backed up and reported."""
from __future__ import annotations

from agent.memory.notes import NotesStore


def test_shell_append_is_detected_backed_up_and_reported_once(store: NotesStore) -> None:
    """A shell append shows up as drift with a timestamped .bak copy of the changed file."""
    notes = store.chat("c")
    notes.add("memory", "Tool wrote this.")
    path = notes.directory / "MEMORY.md"
    with path.open("a", encoding="utf-8") as handle:
        handle.write("§\nAppended by a shell.\n")
    first = notes.snapshot()
    assert [(report.filename, report.backup) for report in first.drift] == [("MEMORY.md", "MEMORY.md.20260528T202640Z.bak")]
    assert first.drift[0].describe() == (
        "MEMORY.md was changed outside the memory tool; the changed file was backed up to MEMORY.md.20260528T202640Z.bak"
    )
    backup = notes.directory / "MEMORY.md.20260528T202640Z.bak"
    assert backup.read_text(encoding="utf-8") == "Tool wrote this.\n§\nAppended by a shell.\n"
    assert [entry.text for entry in first.memory] == ["Tool wrote this.", "Appended by a shell."]
    assert notes.snapshot().drift == ()


def test_drift_is_reported_by_the_next_write(store: NotesStore) -> None:
    """A write after an outside edit reports the drift and keeps the outside text."""
    notes = store.chat("c")
    notes.add("user", "Name: Bob.")
    (notes.directory / "USER.md").write_text("Name: Robert.\n", encoding="utf-8")
    result = notes.add("user", "Timezone: UTC.")
    assert (result.outcome, [report.filename for report in result.drift]) == ("written", ["USER.md"])
    assert [entry.text for entry in notes.snapshot().user] == ["Name: Robert.", "Timezone: UTC."]


def test_second_drift_in_the_same_second_gets_its_own_backup(store: NotesStore) -> None:
    """Two outside edits noticed at the same clock second never overwrite each other's backup."""
    notes = store.chat("c")
    notes.add("memory", "v1")
    path = notes.directory / "MEMORY.md"
    path.write_text("v2\n", encoding="utf-8")
    notes.snapshot()
    path.write_text("v3\n", encoding="utf-8")
    assert [report.backup for report in notes.snapshot().drift] == ["MEMORY.md.20260528T202640Z-2.bak"]
    assert sorted(p.name for p in notes.directory.glob("*.bak")) == [
        "MEMORY.md.20260528T202640Z-2.bak", "MEMORY.md.20260528T202640Z.bak",
    ]


def test_deleted_file_is_reported(store: NotesStore) -> None:
    """Deleting a notes file behind the tool's back is reported as drift without a backup."""
    notes = store.chat("c")
    notes.add("memory", "gone soon")
    (notes.directory / "MEMORY.md").unlink()
    assert [report.describe() for report in notes.snapshot().drift] == ["MEMORY.md was deleted outside the memory tool"]


def test_files_written_by_the_tool_are_not_drift(store: NotesStore) -> None:
    """The tool's own writes never count as drift."""
    notes = store.chat("c")
    notes.add("memory", "a")
    notes.replace("memory", "a", "b")
    notes.remove("memory", "b")
    assert notes.snapshot().drift == ()
