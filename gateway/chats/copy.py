"""Copy the per-chat files under a home into the shared PostgreSQL store (part of `chorus sessions migrate`).

Owns `copy_chat_files` and `ChatFilesCopy`: `<home>/chats.db` (each chat's `/model` and usage),
`<home>/pairing.db` (approved senders and live codes) and `<home>/model_windows.json`.
A row already in the target is kept as it is, so a re-run copies nothing twice and
never doubles a chat's usage; afterwards every source row must be in the target.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.model_windows import WINDOWS_FILE, FileWindowStore
from agent.store import StoreError
from agent.store.postgres import PostgresSessionStore
from gateway.chats.pairing import PAIRING_DB_NAME
from gateway.chats.store import CHATS_DB_NAME

_COPIES = (
    (CHATS_DB_NAME, "chats", "chats", ("chat", "platform", "model", "prompt_tokens", "completion_tokens", "requests"),
     ("chat",)),
    (PAIRING_DB_NAME, "approved", "pairing_approved", ("platform", "user_id", "user_name", "approved_at"),
     ("platform", "user_id")),
    # A sender's code is keyed by the sender: one live code each, whichever store handed it out.
    (PAIRING_DB_NAME, "codes", "pairing_codes",
     ("platform", "user_id", "code", "user_name", "created_at", "expires_at"), ("platform", "user_id")),
)


@dataclass(frozen=True, slots=True)
class ChatFilesCopy:
    """Rows seen in the home and rows written to the target, per kind."""

    chats: tuple[int, int]
    approved: tuple[int, int]
    codes: tuple[int, int]
    windows: tuple[int, int]


@contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection | None]:
    if not path.exists():
        yield None
        return
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        yield conn


def _copy_table(home: Path, target: PostgresSessionStore, spec: tuple[Any, ...]) -> tuple[int, int]:
    file, table, into, columns, key = spec
    with _read_only(home / file) as source:
        present = source is not None and source.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        rows = source.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall() if source and present else []
    marks = ", ".join(["%s"] * len(columns))
    written = 0
    with target.connection() as conn, conn.transaction():
        for row in rows:
            cursor = conn.execute(
                f"INSERT INTO {into} ({', '.join(columns)}) VALUES ({marks}) ON CONFLICT DO NOTHING", row)
            written += cursor.rowcount
        where = " AND ".join(f"{k} = %s" for k in key)
        missing = [row for row in rows
                   if conn.execute(f"SELECT 1 FROM {into} WHERE {where}", row[: len(key)]).fetchone() is None]
    if missing:
        raise StoreError(f"{len(missing)} rows of {home / file} ({table}) are not in {target.location} after the copy")
    return len(rows), written


def copy_chat_files(home: Path, target: PostgresSessionStore) -> ChatFilesCopy:
    """Copy chats, pairing and learned windows under `home` into `target` (see the module docstring).

    Raises:
        StoreError: a copied row is missing from the target afterwards.
    """
    chats, approved, codes = (_copy_table(home, target, spec) for spec in _COPIES)
    learned = FileWindowStore(home / WINDOWS_FILE).load()
    written = 0
    with target.connection() as conn:
        for key, window in learned.items():
            written += conn.execute(
                "INSERT INTO model_windows (key, tokens, stated, learned_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING", (key, window.tokens, window.stated, window.learned_at),
            ).rowcount
    return ChatFilesCopy(chats, approved, codes, (len(learned), written))


__all__ = ["ChatFilesCopy", "copy_chat_files"]
