"""The tables of the shared journal and outbox, created if missing (idempotent, under an advisory lock).

Kept apart from the session store's numbered migrations: these rows are
transient (finished rows are pruned after a day), so a later layout can
drop and recreate them instead of migrating. All times are the database's
clock (`NOW_SQL`), so replicas with skewed clocks agree on lease expiry.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import psycopg

Conn = psycopg.Connection[dict[str, Any]]
Connect = Callable[[], AbstractContextManager[Conn]]

NOW_SQL = "extract(epoch FROM clock_timestamp())"
SCHEMA_LOCK_KEY = 0x63686F72756A  # any constant: the same in every replica
KEEP_FINISHED_SECONDS = 86_400.0  # a finished row de-duplicates redeliveries for a day, then goes

_STATEMENTS = (
    """
    CREATE TABLE IF NOT EXISTS chorus_inbound (
        entry       TEXT PRIMARY KEY,
        dedup_key   TEXT NOT NULL UNIQUE,
        message     TEXT NOT NULL,
        owner       TEXT NOT NULL,
        lease_until DOUBLE PRECISION NOT NULL,
        created_at  DOUBLE PRECISION NOT NULL,
        takeovers   INTEGER NOT NULL DEFAULT 0,
        finished_at DOUBLE PRECISION,
        draft       TEXT
    )
    """,
    # Tables made before drafts were recorded (a no-op on new ones; `_present` keeps it from running twice).
    "ALTER TABLE chorus_inbound ADD COLUMN IF NOT EXISTS draft TEXT",
    # The W3C trace context of the message's intake span: a replica taking the row over continues that trace.
    "ALTER TABLE chorus_inbound ADD COLUMN IF NOT EXISTS traceparent TEXT",
    "CREATE INDEX IF NOT EXISTS chorus_inbound_live ON chorus_inbound(lease_until) WHERE finished_at IS NULL",
    "CREATE INDEX IF NOT EXISTS chorus_inbound_owner ON chorus_inbound(owner) WHERE finished_at IS NULL",
    """
    CREATE TABLE IF NOT EXISTS chorus_outbox (
        id          TEXT PRIMARY KEY,
        answers     TEXT UNIQUE,
        item        TEXT NOT NULL,
        created_at  DOUBLE PRECISION NOT NULL,
        owner       TEXT,
        lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
        attempts    INTEGER NOT NULL DEFAULT 0,
        acked_at    DOUBLE PRECISION
    )
    """,
    "CREATE INDEX IF NOT EXISTS chorus_outbox_pending ON chorus_outbox(created_at) WHERE acked_at IS NULL",
    # One row per live replica, renewed by its heartbeat: the rows and claims it owns are its own while it lives.
    """
    CREATE TABLE IF NOT EXISTS chorus_replicas (
        node        TEXT PRIMARY KEY,
        alive_until DOUBLE PRECISION NOT NULL,
        backend     INTEGER
    )
    """,
    "ALTER TABLE chorus_replicas ADD COLUMN IF NOT EXISTS backend INTEGER",  # a table made before it had one
)

ALIVE_SQL = (
    f"SELECT node FROM chorus_replicas WHERE alive_until >= {NOW_SQL}"
    " AND (backend IS NULL OR backend IN (SELECT pid FROM pg_stat_activity))"
)
"""The replicas whose heartbeat is current and whose heartbeat connection, if they hold one, is still open (a
subquery: `owner NOT IN ({ALIVE_SQL})` is a dead or unknown owner; see `heartbeat.py`)."""


_NAMES = (
    "chorus_inbound", "chorus_inbound_live", "chorus_inbound_owner", "chorus_outbox", "chorus_outbox_pending",
    "chorus_replicas",
)


def _present(conn: Conn) -> bool:
    row = conn.execute(
        "SELECT count(*) AS n FROM pg_class WHERE relname = ANY(%s) AND relnamespace = current_schema()::regnamespace",
        (list(_NAMES),),
    ).fetchone()
    if not (row and row["n"] == len(_NAMES)):
        return False
    columns = conn.execute(
        "SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND ((table_name = 'chorus_inbound' AND column_name IN ('draft', 'traceparent'))"
        " OR (table_name = 'chorus_replicas' AND column_name = 'backend'))"
    ).fetchone()
    return columns is not None and columns["n"] == 3


def ensure_tables(connect: Connect) -> None:
    """Create the tables once; replicas starting together wait on one advisory lock instead of racing.

    Checked first without DDL: `CREATE INDEX IF NOT EXISTS` locks its table even when the index exists,
    and a replica starting while others write would deadlock with their transactions.
    """
    with connect() as conn:
        if _present(conn):
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
            if _present(conn):
                return
            for statement in _STATEMENTS:
                conn.execute(statement)


def prune_finished(connect: Connect) -> int:
    """Drop finished inbound rows and acknowledged replies older than `KEEP_FINISHED_SECONDS`."""
    with connect() as conn:
        inbound = conn.execute(
            f"DELETE FROM chorus_inbound WHERE finished_at < {NOW_SQL} - %s", (KEEP_FINISHED_SECONDS,)
        ).rowcount
        outbox = conn.execute(
            f"DELETE FROM chorus_outbox WHERE acked_at < {NOW_SQL} - %s", (KEEP_FINISHED_SECONDS,)
        ).rowcount
    return inbound + outbox
