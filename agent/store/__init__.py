"""The session store: every chat's sessions and messages, in SQLite `state.db` (WAL, FTS5) or PostgreSQL.

Public API: the `SessionStore` Protocol, `SqliteSessionStore`, `store_for` (which picks one) and the values they return. Search is always scoped
to one chat. See `agent.store.store` for the write paths and
`agent.store._schema` for the versioned schema.
"""
from __future__ import annotations

from agent.store._schema import MIGRATIONS, SCHEMA_VERSION, StoreError
from agent.store._search import MAX_SEARCH_LIMIT
from agent.store.protocol import LocalAppends, SessionStore
from agent.store.records import (
    ContextLine,
    ImportedSession,
    SearchHit,
    SessionSummary,
    StoredMessage,
    StoredSession,
    StoreStats,
)
from agent.store.select import STATE_DB_NAME, is_postgres_url, store_for
from agent.store.store import SqliteSessionStore

__all__ = [
    "MAX_SEARCH_LIMIT",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "STATE_DB_NAME",
    "ContextLine",
    "ImportedSession",
    "LocalAppends",
    "SearchHit",
    "SessionStore",
    "SessionSummary",
    "SqliteSessionStore",
    "StoreError",
    "StoreStats",
    "StoredMessage",
    "StoredSession",
    "is_postgres_url",
    "store_for",
]
