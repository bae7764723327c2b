"""Fixtures for the session store tests: each contract test runs on SQLite and on PostgreSQL, with a fixed clock."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent.store import SessionStore, SqliteSessionStore
from agent.store.postgres import PostgresSessionStore
from tests.postgres import empty_store_tables, pg_url  # noqa: F401 - the fixture


class StepClock:
    """A clock that moves one second per reading, so timestamps are distinct and predictable."""

    def __init__(self) -> None:
        self._ticks = itertools.count(1_700_000_000)

    def __call__(self) -> float:
        return float(next(self._ticks))


URL_FIXTURES = {"postgres": "pg_url", "pgvector": "pgvector_url"}  # the database of each PostgreSQL backend


@contextmanager
def opened_store(request: pytest.FixtureRequest, home: Path) -> Iterator[SessionStore]:
    """An open, empty store of the backend `request.param` names (sqlite, or a key of URL_FIXTURES)."""
    opened: SessionStore
    if request.param == "sqlite":
        opened = SqliteSessionStore(home / "state.db", clock=StepClock())
    else:
        url: str = request.getfixturevalue(URL_FIXTURES[request.param])
        empty_store_tables(url)
        opened = PostgresSessionStore(url, clock=StepClock())
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, home: Path) -> Iterator[SessionStore]:
    """An open, empty store of each backend."""
    with opened_store(request, home) as opened:
        yield opened


@pytest.fixture
def sqlite_store(home: Path) -> Iterator[SqliteSessionStore]:
    with SqliteSessionStore(home / "state.db", clock=StepClock()) as opened:
        yield opened
