"""Fresh PostgreSQL databases for tests: a unique name on the real server, dropped afterwards.

The server is the one CI starts (`.ci/run`) at 127.0.0.1:5432 with trust auth;
`CHORUS_TEST_PG_URL` points elsewhere (any database the user may CREATE DATABASE from).
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

ADMIN_URL = os.environ.get("CHORUS_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
TABLES = ("messages", "chat_stats", "sessions", "notes_files", "skills_files", "skills_trash", "chats", "pairing_codes",
          "pairing_approved", "model_windows", "schedule_jobs", "schedule_runs")


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + name))


@contextmanager
def fresh_database(prefix: str = "chorus_test", admin_url: str = ADMIN_URL) -> Iterator[str]:
    """The URL of a new, empty database on `admin_url`'s server; it is dropped (connections and all) on exit."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def empty_store_tables(url: str) -> None:
    """Remove every row the session store holds (the schema stays), so each test starts empty."""
    with psycopg.connect(url, autocommit=True) as conn:
        present = [t for t in TABLES if (row := conn.execute("SELECT to_regclass(%s) IS NOT NULL", (t,)).fetchone()) and row[0]]
        if present:
            conn.execute(f"TRUNCATE {', '.join(present)} RESTART IDENTITY CASCADE")


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """One fresh database for the test session (import this fixture into a conftest), dropped after it."""
    with fresh_database() as url:
        yield url
