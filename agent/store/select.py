"""Which session store a gateway uses: SQLite under home by default, PostgreSQL when `store.url` names one."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from agent.store._schema import StoreError
from agent.store.protocol import SessionStore
from agent.store.store import SqliteSessionStore

STATE_DB_NAME = "state.db"
POSTGRES_SCHEMES = ("postgresql", "postgres")


def is_postgres_url(url: str | None) -> bool:
    return url is not None and urlsplit(url).scheme in POSTGRES_SCHEMES


def store_for(url: str | None, home: Path) -> SessionStore:
    """The (unopened) store `store.url` selects; None means `<home>/state.db`.

    Raises:
        StoreError: `url` is set but is not a postgresql:// URL.
    """
    if url is None:
        return SqliteSessionStore(home / STATE_DB_NAME)
    if not is_postgres_url(url):
        scheme = urlsplit(url).scheme or "none"
        raise StoreError(f"store.url must be a postgresql://user@host:port/db URL (scheme {scheme!r} given), or null for SQLite")
    from agent.store.postgres import PostgresSessionStore  # here: a SQLite home never loads the PostgreSQL driver

    return PostgresSessionStore(url)
