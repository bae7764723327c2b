"""`ApprovalStore` in PostgreSQL: a pending approval answerable from any replica, surviving any restart.

Owns `PostgresApprovalStore`. Same rules as the SQLite store (`gateway.approvals.store`);
finding or creating a call's approval takes a transaction-scoped advisory lock on the
call, so two replicas replaying one turn post one prompt. Borrows the session store's
pool and creates its table on `open`.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from agent.store.postgres import PostgresSessionStore
from gateway.approvals.store import COLUMNS, Approval, ApprovalRequest, Status, approval_row, new_approval, row_to_approval

APPROVAL_LOCK_CLASS = 0x6170  # "ap": first key of the two-key advisory lock space taken here

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_approvals (
    id TEXT PRIMARY KEY, session_key TEXT NOT NULL, chat TEXT NOT NULL, thread_id TEXT, requester_id TEXT NOT NULL,
    requester_name TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL, args_hash TEXT NOT NULL,
    approvers TEXT NOT NULL, status TEXT NOT NULL, decided_by TEXT, created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS tool_approvals_call ON tool_approvals (session_key, tool, args_hash)
"""
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM tool_approvals"


class PostgresApprovalStore:
    """Approvals in the shared database (table `tool_approvals`).

    Args:
        shared: the session store whose pool this uses; opened by its owner.
        clock: epoch seconds.
    """

    def __init__(self, shared: PostgresSessionStore, *, clock: Callable[[], float] = time.time) -> None:
        self._shared = shared
        self._clock = clock

    def open(self) -> None:
        with self._shared.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (APPROVAL_LOCK_CLASS,))  # replicas starting together
            for statement in _SCHEMA.split(";"):
                conn.execute(statement)

    def close(self) -> None:
        """Nothing to release: the pool closes with the session store."""

    def request(self, request: ApprovalRequest) -> tuple[Approval, bool]:
        now = self._clock()
        with self._shared.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                         (APPROVAL_LOCK_CLASS, f"{request.session_key}|{request.tool}|{request.args_hash}"))
            found = conn.execute(
                f"{_SELECT} WHERE session_key = %s AND tool = %s AND args_hash = %s AND expires_at > %s "
                "AND status IN ('pending', 'approved') ORDER BY created_at DESC LIMIT 1",
                (request.session_key, request.tool, request.args_hash, now),
            ).fetchone()
            if found is not None:
                return _approval(found), False
            approval = new_approval(request, now)
            conn.execute(f"INSERT INTO tool_approvals ({', '.join(COLUMNS)}) VALUES ({', '.join(['%s'] * len(COLUMNS))})",
                         approval_row(approval))
        return approval, True

    def get(self, approval_id: str) -> Approval | None:
        with self._shared.connection() as conn:
            row = conn.execute(f"{_SELECT} WHERE id = %s", (approval_id.lower(),)).fetchone()
        return _approval(row) if row is not None else None

    def settle(self, approval_id: str, status: Status, *, by: str | None = None, only: Status = "pending") -> Approval | None:
        with self._shared.connection() as conn:
            row = conn.execute(
                f"UPDATE tool_approvals SET status = %s, decided_by = COALESCE(%s, decided_by) "
                f"WHERE id = %s AND status = %s AND (expires_at > %s OR %s = 'expired') RETURNING {', '.join(COLUMNS)}",
                (status, by, approval_id.lower(), only, self._clock(), status),
            ).fetchone()
        return _approval(row) if row is not None else None


def _approval(row: object) -> Approval:
    assert isinstance(row, dict)  # the pool hands out dict rows
    return row_to_approval(tuple(row[column] for column in COLUMNS))


__all__ = ["PostgresApprovalStore"]
