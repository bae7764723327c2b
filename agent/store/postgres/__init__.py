"""The PostgreSQL session store (`store.url: postgresql://…`): one database shared by every replica."""
from __future__ import annotations

from agent.store.postgres._schema import MIGRATIONS, SCHEMA_VERSION, schema_version
from agent.store.postgres.locking import AdvisoryLock, Conn
from agent.store.postgres.store import PostgresSessionStore, redact_url

__all__ = ["AdvisoryLock", "Conn", "MIGRATIONS", "SCHEMA_VERSION", "PostgresSessionStore", "redact_url", "schema_version"]
