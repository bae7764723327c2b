"""Notes in PostgreSQL: `PostgresChatFiles`, one chat's note texts as rows shared by every replica.

The notes rules stay in `ChatNotes` (scan on write and on load, limits,
approval queue, drift); this only stores its named texts in `notes_files`
(created by the session store's migrations) and locks a chat across
replicas with a transaction-scoped advisory lock. Inside `locked()` every
read and write runs on the lock's connection and transaction, so a
read-modify-write is atomic across machines. Each change bumps the row's
`version` (a trigger); an edit made outside Chorus (SQL by hand) changes the text behind
the drift guard's recorded hash and is reported and backed up like a file
edited by hand.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from agent.memory._paths import chat_dirname
from agent.store.postgres import AdvisoryLock, Conn, PostgresSessionStore

# First key of the two-key advisory lock space taken by notes (the second is a hash of the chat id).
NOTES_LOCK_CLASS = 0x6E6F  # "no"



class PostgresChatFiles:
    """One chat's note texts in the shared database (a `ChatFiles`)."""

    def __init__(self, store: PostgresSessionStore, chat_id: str, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._chat_id = chat_id
        self._clock = clock
        self._lock = AdvisoryLock(store, "%s, hashtext(%s)", (NOTES_LOCK_CLASS, chat_id))

    @property
    def label(self) -> str:
        return chat_dirname(self._chat_id)

    @property
    def location(self) -> str:
        return f"{self._store.location} (table notes_files)"

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock.held():
            yield

    def _connection(self) -> AbstractContextManager[Conn]:
        return self._lock.connection()

    def exists(self) -> bool:
        with self._connection() as conn:
            row = conn.execute("SELECT EXISTS (SELECT 1 FROM notes_files WHERE chat_id = %s) AS found",
                               (self._chat_id,)).fetchone()
        return bool(row and row["found"])

    def read(self, name: str) -> str | None:
        with self._connection() as conn:
            row = conn.execute("SELECT text FROM notes_files WHERE chat_id = %s AND name = %s",
                               (self._chat_id, name)).fetchone()
        return None if row is None else str(row["text"])

    def write(self, name: str, text: str) -> None:
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO notes_files (chat_id, name, text, updated_at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (chat_id, name) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
                (self._chat_id, name, text.replace("\x00", "\ufffd"), self._clock()),
            )

    def delete(self, name: str) -> None:
        with self._connection() as conn:
            conn.execute("DELETE FROM notes_files WHERE chat_id = %s AND name = %s", (self._chat_id, name))

    def names(self) -> list[str]:
        with self._connection() as conn:
            rows = conn.execute("SELECT name FROM notes_files WHERE chat_id = %s ORDER BY name",
                                (self._chat_id,)).fetchall()
        return [str(row["name"]) for row in rows]

    def clear(self) -> int:
        with self.locked(), self._connection() as conn:
            cursor = conn.execute("DELETE FROM notes_files WHERE chat_id = %s", (self._chat_id,))
            return cursor.rowcount


def postgres_notes(store: PostgresSessionStore) -> Callable[[str], PostgresChatFiles]:
    """The `files` factory of a `NotesStore` keeping every chat's notes in `store`'s database."""

    def files(chat_id: str) -> PostgresChatFiles:
        return PostgresChatFiles(store, chat_id)

    return files
