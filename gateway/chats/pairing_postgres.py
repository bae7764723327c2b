"""`PairingStore` in PostgreSQL: codes and approved senders shared by every replica and the `chorus pairing` CLI.

Owns `PostgresPairingStore`. Same rules as the SQLite store (`gateway.chats.pairing`):
one live code per sender, at most `MAX_PENDING` per platform, codes expire. Handing out
a code takes a transaction-scoped advisory lock per platform, so two replicas asked by
the same stranger at once give one code and the cap holds. Borrows the session store's
pool (its migrations create the tables); `open`/`close` leave the pool to its owner.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from agent.store.postgres import PostgresSessionStore
from gateway.chats.pairing import CODE_TTL_SECONDS, MAX_PENDING, PairedUser, PairingCode, new_code

# First key of the two-key advisory lock space taken by pairing (the second is a hash of the platform).
PAIRING_LOCK_CLASS = 0x7061  # "pa"

_APPROVE = """
INSERT INTO pairing_approved (platform, user_id, user_name, approved_at) VALUES (%s, %s, %s, %s)
ON CONFLICT (platform, user_id) DO UPDATE SET user_name = excluded.user_name, approved_at = excluded.approved_at
"""


class PostgresPairingStore:
    """Pending codes and approved senders in the shared database.

    Args:
        shared: the session store whose pool this uses; opened by its owner.
        clock: epoch seconds.
    """

    def __init__(self, shared: PostgresSessionStore, *, clock: Callable[[], float] = time.time) -> None:
        self._shared = shared
        self._clock = clock

    @property
    def location(self) -> str:
        return f"{self._shared.location} (tables pairing_codes, pairing_approved)"

    def open(self) -> None:
        self._shared.ping()  # raises StoreError when the session store is not open

    def close(self) -> None:
        """Nothing to release: the pool closes with the session store."""

    def is_approved(self, platform: str, user_id: str) -> bool:
        with self._shared.connection() as conn:
            row = conn.execute(
                "SELECT 1 FROM pairing_approved WHERE platform = %s AND user_id = %s", (platform, user_id)
            ).fetchone()
        return row is not None

    def code_for(self, platform: str, user_id: str, user_name: str) -> PairingCode | None:
        """The sender's live code (a new one if none); None when the platform already has too many pending."""
        now = self._clock()
        with self._shared.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (PAIRING_LOCK_CLASS, platform))
            conn.execute("DELETE FROM pairing_codes WHERE expires_at <= %s", (now,))
            row = conn.execute(
                "SELECT code, expires_at FROM pairing_codes WHERE platform = %s AND user_id = %s", (platform, user_id)
            ).fetchone()
            if row is not None:
                return PairingCode(str(row["code"]), platform, user_id, user_name, float(row["expires_at"]))
            pending = conn.execute(
                "SELECT count(*) AS n FROM pairing_codes WHERE platform = %s", (platform,)
            ).fetchone()
            if pending is not None and int(pending["n"]) >= MAX_PENDING:
                return None
            code, expires = new_code(), now + CODE_TTL_SECONDS
            conn.execute(
                "INSERT INTO pairing_codes VALUES (%s, %s, %s, %s, %s, %s)",
                (code, platform, user_id, user_name, now, expires),
            )
        return PairingCode(code, platform, user_id, user_name, expires)

    def pending(self, platform: str | None = None) -> list[PairingCode]:
        with self._shared.connection() as conn:
            rows = conn.execute(
                "SELECT code, platform, user_id, user_name, expires_at FROM pairing_codes WHERE expires_at > %s "
                "AND (%s::text IS NULL OR platform = %s) ORDER BY created_at", (self._clock(), platform, platform),
            ).fetchall()
        return [PairingCode(r["code"], r["platform"], r["user_id"], r["user_name"], float(r["expires_at"]))
                for r in rows]

    def approved(self, platform: str | None = None) -> list[PairedUser]:
        with self._shared.connection() as conn:
            rows = conn.execute(
                "SELECT platform, user_id, user_name, approved_at FROM pairing_approved "
                "WHERE (%s::text IS NULL OR platform = %s) ORDER BY approved_at", (platform, platform),
            ).fetchall()
        return [PairedUser(r["platform"], r["user_id"], r["user_name"], float(r["approved_at"])) for r in rows]

    def approve(self, platform: str, code: str) -> PairedUser | None:
        """Admit the sender of a live `code` on `platform` (None: no such live code)."""
        now = self._clock()
        with self._shared.connection() as conn, conn.transaction():
            row = conn.execute(
                "DELETE FROM pairing_codes WHERE code = %s AND platform = %s AND expires_at > %s "
                "RETURNING user_id, user_name", (code.strip().upper(), platform, now),
            ).fetchone()
            if row is None:
                return None
            conn.execute(_APPROVE, (platform, row["user_id"], row["user_name"], now))
        return PairedUser(platform, str(row["user_id"]), str(row["user_name"]), now)

    def revoke(self, platform: str, user_id: str) -> bool:
        with self._shared.connection() as conn:
            cursor = conn.execute(
                "DELETE FROM pairing_approved WHERE platform = %s AND user_id = %s", (platform, user_id)
            )
            return cursor.rowcount > 0


__all__ = ["PostgresPairingStore"]
