"""`probe_store`: is the session store `store.url` selects reachable, migrated and writable? (for `chorus doctor`).

Reads and rolls back only: a probe never migrates or changes a store.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from agent.store._schema import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from agent.store._schema import schema_version as sqlite_schema_version
from agent.store.postgres import SCHEMA_VERSION as PG_SCHEMA_VERSION
from agent.store.postgres import redact_url
from agent.store.postgres import schema_version as pg_schema_version
from agent.store.select import STATE_DB_NAME, is_postgres_url

PROBE_CONNECT_SECONDS = 5


@dataclass(frozen=True, slots=True)
class StoreProbe:
    ok: bool
    mode: str
    detail: str
    fix: str = ""


def _version_problem(current: int, known: int) -> tuple[str, str] | None:
    if current > known:
        return f"schema version {current} is newer than this Chorus ({known})", "upgrade Chorus on this machine"
    return None


def probe_store(url: str | None, home: Path) -> StoreProbe:
    """Check the store without changing it; never raises."""
    if url is not None and is_postgres_url(url):
        return _probe_postgres(url)
    if url is not None:
        return StoreProbe(False, "unknown", "store.url is not a postgresql:// URL", "set store.url to postgresql://… or null")
    return _probe_sqlite(home / STATE_DB_NAME)


def _probe_postgres(url: str) -> StoreProbe:
    mode, where = "postgresql (shared by replicas)", redact_url(url)
    try:
        with psycopg.connect(url, connect_timeout=PROBE_CONNECT_SECONDS, row_factory=dict_row) as conn:
            current = pg_schema_version(conn)
            problem = _version_problem(current, PG_SCHEMA_VERSION)
            if problem:
                return StoreProbe(False, mode, f"{where}: {problem[0]}", problem[1])
            # A write that is rolled back: proves the role may write without leaving a trace.
            conn.execute("CREATE TEMP TABLE chorus_doctor_probe (x int)")
            conn.execute("INSERT INTO chorus_doctor_probe VALUES (1)")
            read_only = conn.execute("SELECT pg_is_in_recovery() AS standby").fetchone()
            conn.rollback()
    except psycopg.Error as exc:
        return StoreProbe(False, mode, f"cannot use {where} ({type(exc).__name__}: {exc.sqlstate or 'no connection'})",
                          "check store.url, the server, and that the role may connect and write")
    if read_only and read_only["standby"]:
        return StoreProbe(False, mode, f"{where} is a read-only standby", "point store.url at the primary")
    pending = PG_SCHEMA_VERSION - current
    state = "migrated" if pending == 0 else f"{pending} migration(s) will run at start"
    return StoreProbe(True, mode, f"{where} reachable, {state} (schema {current}/{PG_SCHEMA_VERSION}), writable")


def _probe_sqlite(path: Path) -> StoreProbe:
    mode = "sqlite under home (one machine)"
    if not path.exists():
        return StoreProbe(True, mode, f"{path} will be created at first start")
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=2)
        try:
            current = sqlite_schema_version(conn)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return StoreProbe(False, mode, f"{path} is not usable ({exc})", "check home's permissions, or move the file away")
    problem = _version_problem(current, SQLITE_SCHEMA_VERSION)
    if problem:
        return StoreProbe(False, mode, f"{path}: {problem[0]}", problem[1])
    return StoreProbe(True, mode, f"{path} migrated (schema {current}/{SQLITE_SCHEMA_VERSION}), writable")
