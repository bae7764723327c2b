"""Fixtures for the session store tests: each contract test runs on SQLite and on PostgreSQL, with a fixed clock."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
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


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, home: Path) -> Iterator[SessionStore]:
    """An open, empty store of each backend."""
    opened: SessionStore
    if request.param == "sqlite":
        opened = SqliteSessionStore(home / "state.db", clock=StepClock())
    else:
        url: str = request.getfixturevalue("pg_url")
        empty_store_tables(url)
        opened = PostgresSessionStore(url, clock=StepClock())
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def sqlite_store(home: Path) -> Iterator[SqliteSessionStore]:
    with SqliteSessionStore(home / "state.db", clock=StepClock()) as opened:
        yield opened
