"""Gateway test fixtures: every test starts from structlog's defaults.

CLI handlers run in-process by other tests call `configure_logging` (e.g. at
level "error"), which is process-global; without this reset a later test that
captures info lines (`structlog.testing.capture_logs`) would see none.
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _fresh_structlog() -> Iterator[None]:
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()
