"""Fixtures for the session store tests: an open store in a temporary home, with a fixed clock."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.store import SessionStore


class StepClock:
    """A clock that moves one second per reading, so timestamps are distinct and predictable."""

    def __init__(self) -> None:
        self._ticks = itertools.count(1_700_000_000)

    def __call__(self) -> float:
        return float(next(self._ticks))


@pytest.fixture
def store(home: Path) -> Iterator[SessionStore]:
    with SessionStore(home / "state.db", clock=StepClock()) as opened:
        yield opened
