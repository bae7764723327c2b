"""Fixtures for the per-chat stores: each contract test runs on SQLite under a temporary home and on PostgreSQL."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.store.postgres import PostgresSessionStore
from tests.postgres import empty_store_tables, pg_url  # noqa: F401 - the fixture


class Clock:
    """A settable clock (epoch seconds)."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def shared(backend: str, request: pytest.FixtureRequest) -> Iterator[PostgresSessionStore | None]:
    """The open PostgreSQL session store the shared stores borrow (None on SQLite); tables emptied first."""
    if backend == "sqlite":
        yield None
        return
    url: str = request.getfixturevalue("pg_url")
    empty_store_tables(url)
    with PostgresSessionStore(url) as store:
        yield store


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"
