"""The session store: SQLite `state.db` (WAL, FTS5) holding every chat's sessions and messages.

Public API: `SessionStore` and the values it returns. Search is always scoped
to one chat. See `agent.store.store` for the write paths and
`agent.store._schema` for the versioned schema.
"""
from __future__ import annotations

from agent.store._schema import MIGRATIONS, SCHEMA_VERSION, StoreError
from agent.store._search import MAX_SEARCH_LIMIT
from agent.store.records import (
    ContextLine,
    ImportedSession,
    SearchHit,
    SessionSummary,
    StoredMessage,
    StoredSession,
    StoreStats,
)
from agent.store.store import SessionStore

STATE_DB_NAME = "state.db"

__all__ = [
    "MAX_SEARCH_LIMIT",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "STATE_DB_NAME",
    "ContextLine",
    "ImportedSession",
    "SearchHit",
    "SessionStore",
    "SessionSummary",
    "StoreError",
    "StoreStats",
    "StoredMessage",
    "StoredSession",
]
