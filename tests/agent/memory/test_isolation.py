"""Isolation: a chat id can never reach another chat's notes or anything outside home."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.memory._paths import ChatIdError, chat_dirname
from agent.memory.notes import NotesStore
from agent.settings import MemorySettings

TRICKY_IDS = [
    "..", ".", "../other", "../../etc/passwd", "/etc/passwd", "a/b", "a\\b", "..\\..\\x", "nul\x00byte",
    "\u2024\u2024/x", "\uff0e\uff0e\uff0fx", "C:\\Windows", "~", "~root", "x" * 5000, "chat\n..", " ", "-rf",
    "\ud800lone-surrogate", "Ｃｈａｔ", "Chat", "chat", "chat ", "\u0441hat",  # Cyrillic с
]


@pytest.mark.parametrize("chat_id", TRICKY_IDS)
def test_tricky_ids_stay_inside_memories(store: NotesStore, home: Path, chat_id: str) -> None:
    """Whatever the id holds, its files are written directly under <home>/memories/."""
    notes = store.chat(chat_id)
    assert notes.add("memory", "fact").outcome == "written"
    memories = (home / "memories").resolve()
    assert notes.directory.resolve().parent == memories
    written = {path.resolve() for path in home.rglob("*") if path.is_file()}
    assert all(memories in path.parents for path in written)


def test_tricky_ids_never_share_a_store(store: NotesStore) -> None:
    """Each distinct id gets its own directory, and its notes are invisible to every other id."""
    for number, chat_id in enumerate(TRICKY_IDS):
        store.chat(chat_id).add("memory", f"secret of chat {number}")
    directories = {store.chat(chat_id).directory for chat_id in TRICKY_IDS}
    assert len(directories) == len(TRICKY_IDS)
    for number, chat_id in enumerate(TRICKY_IDS):
        assert [entry.text for entry in store.chat(chat_id).snapshot().memory] == [f"secret of chat {number}"]


def test_empty_chat_id_is_refused(store: NotesStore) -> None:
    """An empty id names no chat."""
    with pytest.raises(ChatIdError, match="chat id must not be empty"):
        store.chat("")


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
def test_dirname_is_safe_and_injective(first: str, second: str) -> None:
    """Directory names are short, ASCII-safe, never dot names, and differ whenever ids differ."""
    name = chat_dirname(first)
    assert name not in {".", ".."} and "/" not in name and "\\" not in name and "\x00" not in name
    assert name.isascii() and len(name) <= 61 and not name.startswith(".")
    assert (chat_dirname(first) == chat_dirname(second)) == (first == second)


def test_directory_of_another_id_is_refused(store: NotesStore, home: Path) -> None:
    """If a directory records a different exact id (a hash collision), the store refuses to use it."""
    notes = store.chat("alpha")
    notes.add("memory", "alpha's fact")
    (notes.directory / ".chat_id").write_bytes(b"beta")
    with pytest.raises(ChatIdError, match="belongs to another chat"):
        NotesStore(home, MemorySettings()).chat("alpha").snapshot()
