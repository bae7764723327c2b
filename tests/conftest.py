"""Shared fixtures: a fake OpenAI server, a Redis URL, a temporary home."""
from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAI

REDIS_URL = os.environ.get("CHORUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
DATA_DIR = Path(__file__).parent / "data"


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def redis_url() -> str:
    return REDIS_URL


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix unique to one test, so tests can share the real Redis server."""
    return f"chorus-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path
