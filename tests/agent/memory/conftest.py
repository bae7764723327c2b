"""Fixtures of the memory tests: a notes store under the shared `home` fixture, with a fixed clock."""
from __future__ import annotations

from pathlib import Path

import pytest

from agent.memory.notes import NotesStore
from agent.settings import MemorySettings

FIXED_NOW = 1_780_000_000.0  # 2026-05-28T20:26:40Z


@pytest.fixture
def settings() -> MemorySettings:
    return MemorySettings()


@pytest.fixture
def store(home: Path, settings: MemorySettings) -> NotesStore:
    return NotesStore(home, settings, clock=lambda: FIXED_NOW)
