"""Pending tool approvals that outlive a process: the `ApprovalStore` Protocol and its SQLite backend.

Owns `Approval`, `ApprovalRequest` and `SqliteApprovalStore` (`<home>/approvals.db`); the
PostgreSQL backend (`gateway.approvals.postgres`) shares every replica's approvals. An
approval is found again by its session, tool and arguments, so a turn replayed after a
restart waits on the prompt already posted instead of posting another. A decision is a
conditional update (only a pending, unexpired approval changes), so two clicks on two
replicas decide once. Knows nothing of platforms or agents.
"""
from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeAlias

from gateway.chats.sqlite_file import SqliteFile

APPROVALS_DB_NAME = "approvals.db"
ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: typed by hand in `/approve ID`
ID_LENGTH = 6

Status: TypeAlias = Literal["pending", "approved", "denied", "expired", "used"]

COLUMNS = ("id", "session_key", "chat", "thread_id", "requester_id", "requester_name", "tool", "arguments",
           "args_hash", "approvers", "status", "decided_by", "created_at", "expires_at")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS approvals (id TEXT PRIMARY KEY, session_key TEXT NOT NULL, chat TEXT NOT NULL, "
    "thread_id TEXT, requester_id TEXT NOT NULL, requester_name TEXT NOT NULL, tool TEXT NOT NULL, "
    "arguments TEXT NOT NULL, args_hash TEXT NOT NULL, approvers TEXT NOT NULL, status TEXT NOT NULL, "
    "decided_by TEXT, created_at REAL NOT NULL, expires_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS approvals_call ON approvals (session_key, tool, args_hash)",
)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One tool call waiting for a person: who asked, in which chat, what it would run (arguments shown redacted)."""

    session_key: str
    chat: str  # PLATFORM:CHAT_ID
    thread_id: str | None
    requester_id: str
    requester_name: str
    tool: str
    arguments: str  # as shown to approvers: secrets masked
    args_hash: str  # of the real arguments: the same call finds the same approval
    approvers: str  # requester | admins | requester_or_admins
    timeout_seconds: float


@dataclass(frozen=True, slots=True)
class Approval:
    id: str
    session_key: str
    chat: str
    thread_id: str | None
    requester_id: str
    requester_name: str
    tool: str
    arguments: str
    args_hash: str
    approvers: str
    status: Status
    decided_by: str | None
    created_at: float
    expires_at: float


class ApprovalStore(Protocol):
    """Approvals shared by everything that can answer them (every replica, with a shared backend)."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def request(self, request: ApprovalRequest) -> tuple[Approval, bool]:
        """The live approval of this call (pending, or approved and not yet used), else a new one; True if new."""
        ...

    def get(self, approval_id: str) -> Approval | None: ...

    def settle(self, approval_id: str, status: Status, *, by: str | None = None, only: Status = "pending") -> Approval | None:
        """Move an approval from `only` to `status` (None: it was not in `only`, or it expired first)."""
        ...


def new_id() -> str:
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


def row_to_approval(row: tuple[object, ...]) -> Approval:
    values = dict(zip(COLUMNS, row))
    return Approval(
        id=str(values["id"]), session_key=str(values["session_key"]), chat=str(values["chat"]),
        thread_id=None if values["thread_id"] is None else str(values["thread_id"]),
        requester_id=str(values["requester_id"]), requester_name=str(values["requester_name"]),
        tool=str(values["tool"]), arguments=str(values["arguments"]), args_hash=str(values["args_hash"]),
        approvers=str(values["approvers"]), status=_status(values["status"]),
        decided_by=None if values["decided_by"] is None else str(values["decided_by"]),
        created_at=float(str(values["created_at"])), expires_at=float(str(values["expires_at"])),
    )


def _status(value: object) -> Status:
    for status in ("pending", "approved", "denied", "expired", "used"):
        if value == status:
            return status
    raise ValueError(f"unknown approval status {value!r}")


_SELECT = f"SELECT {', '.join(COLUMNS)} FROM approvals"


class SqliteApprovalStore:
    """Approvals in one SQLite file under home.

    Args:
        path: the database file (created on `open`).
        clock: epoch seconds.
    """

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._file = SqliteFile(path, schema=_SCHEMA, what="approval store")

    def open(self) -> None:
        self._file.open()

    def close(self) -> None:
        self._file.close()

    def request(self, request: ApprovalRequest) -> tuple[Approval, bool]:
        now = self._clock()
        with self._file.locked() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                found = db.execute(
                    f"{_SELECT} WHERE session_key = ? AND tool = ? AND args_hash = ? AND expires_at > ? "
                    "AND status IN ('pending', 'approved') ORDER BY created_at DESC LIMIT 1",
                    (request.session_key, request.tool, request.args_hash, now),
                ).fetchone()
                if found is not None:
                    db.execute("COMMIT")
                    return row_to_approval(found), False
                approval = new_approval(request, now)
                db.execute(f"INSERT INTO approvals ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                           approval_row(approval))
                db.execute("COMMIT")
            except sqlite3.Error:
                db.execute("ROLLBACK")
                raise
        return approval, True

    def get(self, approval_id: str) -> Approval | None:
        with self._file.locked() as db:
            row = db.execute(f"{_SELECT} WHERE id = ?", (approval_id.lower(),)).fetchone()
        return row_to_approval(row) if row is not None else None

    def settle(self, approval_id: str, status: Status, *, by: str | None = None, only: Status = "pending") -> Approval | None:
        now = self._clock()
        with self._file.locked() as db:
            changed = db.execute(
                "UPDATE approvals SET status = ?, decided_by = COALESCE(?, decided_by) "
                "WHERE id = ? AND status = ? AND (expires_at > ? OR ? = 'expired')",
                (status, by, approval_id.lower(), only, now, status),
            ).rowcount
            row = db.execute(f"{_SELECT} WHERE id = ?", (approval_id.lower(),)).fetchone() if changed else None
        return row_to_approval(row) if row is not None else None


def new_approval(request: ApprovalRequest, now: float) -> Approval:
    return Approval(
        id=new_id(), session_key=request.session_key, chat=request.chat, thread_id=request.thread_id,
        requester_id=request.requester_id, requester_name=request.requester_name, tool=request.tool,
        arguments=request.arguments, args_hash=request.args_hash, approvers=request.approvers, status="pending",
        decided_by=None, created_at=now, expires_at=now + request.timeout_seconds,
    )


def approval_row(approval: Approval) -> tuple[object, ...]:
    return tuple(getattr(approval, column) for column in COLUMNS)


__all__ = ["APPROVALS_DB_NAME", "Approval", "ApprovalRequest", "ApprovalStore", "SqliteApprovalStore", "Status"]
