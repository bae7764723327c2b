"""Pairing: an unknown DM sender gets a one-time code; an operator approves it and the sender is admitted.

Owns the `PairingStore` Protocol, its SQLite backend `SqlitePairingStore`
(`<home>/pairing.db`, shared by the gateway and the `chorus pairing` CLI, so an
approval takes effect without a restart; the PostgreSQL one shared by replicas
is `gateway.chats.pairing_postgres`), `new_code` and `PairingCode`. Codes are 8 characters from an unambiguous alphabet, expire
after `CODE_TTL_SECONDS`, one live code per sender (asking again returns the
same code), and at most `MAX_PENDING` live codes per platform, so a flood of
strangers cannot fill the table. The clock is injected. Knows nothing of
platforms beyond their names.
"""
from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gateway.chats.sqlite_file import SqliteFile

PAIRING_DB_NAME = "pairing.db"
CODE_TTL_SECONDS = 3600.0
MAX_PENDING = 50
CODE_LENGTH = 8
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS codes (code TEXT PRIMARY KEY, platform TEXT NOT NULL, user_id TEXT NOT NULL, "
    "user_name TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS approved (platform TEXT NOT NULL, user_id TEXT NOT NULL, user_name TEXT NOT NULL, "
    "approved_at REAL NOT NULL, PRIMARY KEY (platform, user_id))",
)


@dataclass(frozen=True, slots=True)
class PairingCode:
    code: str
    platform: str
    user_id: str
    user_name: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class PairedUser:
    platform: str
    user_id: str
    user_name: str
    approved_at: float


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


class PairingStore(Protocol):
    """Pending codes and approved senders. `open` before use, `close` after."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def is_approved(self, platform: str, user_id: str) -> bool: ...

    def code_for(self, platform: str, user_id: str, user_name: str) -> PairingCode | None:
        """The sender's live code (a new one if none); None when the platform already has too many pending."""
        ...

    def pending(self, platform: str | None = None) -> list[PairingCode]: ...

    def approved(self, platform: str | None = None) -> list[PairedUser]: ...

    def approve(self, platform: str, code: str) -> PairedUser | None:
        """Admit the sender of a live `code` on `platform` (None: no such live code)."""
        ...

    def revoke(self, platform: str, user_id: str) -> bool: ...


class SqlitePairingStore:
    """Pending codes and approved senders in one SQLite file.

    Args:
        path: the database file (created on `open`).
        clock: epoch seconds.
    """

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._file = SqliteFile(path, schema=_SCHEMA, what="pairing store")

    def open(self) -> None:
        self._file.open()

    def close(self) -> None:
        self._file.close()

    def is_approved(self, platform: str, user_id: str) -> bool:
        with self._file.locked() as db:
            row = db.execute(
                "SELECT 1 FROM approved WHERE platform = ? AND user_id = ?", (platform, user_id)
            ).fetchone()
        return row is not None

    def code_for(self, platform: str, user_id: str, user_name: str) -> PairingCode | None:
        """The sender's live code (a new one if none); None when the platform already has too many pending."""
        now = self._clock()
        with self._file.locked() as db:
            db.execute("DELETE FROM codes WHERE expires_at <= ?", (now,))
            row = db.execute(
                "SELECT code, expires_at FROM codes WHERE platform = ? AND user_id = ?", (platform, user_id)
            ).fetchone()
            if row is not None:
                return PairingCode(str(row[0]), platform, user_id, user_name, float(row[1]))
            (pending,) = db.execute("SELECT count(*) FROM codes WHERE platform = ?", (platform,)).fetchone()
            if int(pending) >= MAX_PENDING:
                return None
            code = new_code()
            expires = now + CODE_TTL_SECONDS
            db.execute("INSERT INTO codes VALUES (?, ?, ?, ?, ?, ?)", (code, platform, user_id, user_name, now, expires))
        return PairingCode(code, platform, user_id, user_name, expires)

    def pending(self, platform: str | None = None) -> list[PairingCode]:
        now = self._clock()
        with self._file.locked() as db:
            rows = db.execute(
                "SELECT code, platform, user_id, user_name, expires_at FROM codes WHERE expires_at > ? "
                "AND (? IS NULL OR platform = ?) ORDER BY created_at", (now, platform, platform),
            ).fetchall()
        return [PairingCode(str(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4])) for r in rows]

    def approved(self, platform: str | None = None) -> list[PairedUser]:
        with self._file.locked() as db:
            rows = db.execute(
                "SELECT platform, user_id, user_name, approved_at FROM approved WHERE (? IS NULL OR platform = ?) "
                "ORDER BY approved_at", (platform, platform),
            ).fetchall()
        return [PairedUser(str(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in rows]

    def approve(self, platform: str, code: str) -> PairedUser | None:
        """Admit the sender of a live `code` on `platform` (None: no such live code)."""
        now = self._clock()
        with self._file.locked() as db:
            row = db.execute(
                "SELECT user_id, user_name FROM codes WHERE code = ? AND platform = ? AND expires_at > ?",
                (code.strip().upper(), platform, now),
            ).fetchone()
            if row is None:
                return None
            db.execute("INSERT OR REPLACE INTO approved VALUES (?, ?, ?, ?)", (platform, row[0], row[1], now))
            db.execute("DELETE FROM codes WHERE platform = ? AND user_id = ?", (platform, row[0]))
        return PairedUser(platform, str(row[0]), str(row[1]), now)

    def revoke(self, platform: str, user_id: str) -> bool:
        with self._file.locked() as db:
            cursor = db.execute(
                "DELETE FROM approved WHERE platform = ? AND user_id = ?", (platform, user_id)
            )
        return cursor.rowcount > 0


__all__ = [
    "CODE_TTL_SECONDS", "PAIRING_DB_NAME", "PairedUser", "PairingCode", "PairingStore",
    "SqlitePairingStore", "new_code",
]
