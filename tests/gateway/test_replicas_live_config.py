"""Live configuration across two `chorus run` replicas with separate homes and config files on one Redis.

A PATCH through one replica's admin API applies on the other (and on a replica that
starts later, from the stored overrides); a reload makes every replica re-read its own file.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog
import yaml

from tests.fakes.openai_server import FakeOpenAI
from tests.gateway.replicas import admin_port, replica, replica_config

TOKEN = "admin-token-for-tests"
DEADLINE = 20.0


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


async def _call(method: str, port: int, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with http.request(method, f"http://127.0.0.1:{port}{path}", json=body) as response:
            assert response.status == 200, await response.text()
            result: dict[str, Any] = await response.json()
            return result


async def _threshold_becomes(port: int, value: float) -> float:
    """Poll the replica's `GET /api/config` until compression.threshold is `value` (or the deadline passes)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        current = float((await _call("GET", port, "/api/config"))["values"]["compression.threshold"])
        if current == value or time.monotonic() > deadline:
            return current
        await asyncio.sleep(0.05)


def _set_file_threshold(path: Path, value: float) -> None:
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["compression"] = {"threshold": value}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")


async def test_patch_and_reload_reach_every_replica(
    fake_openai: FakeOpenAI, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    """PATCH on A: B (started after) has it; PATCH on B: A has it; reload on A: both re-read their own file."""
    configs = {name: replica_config(
        tmp_path, name, redis={"url": redis_url, "key_prefix": redis_prefix},
        admin={"host": "127.0.0.1", "port": 0, "token": TOKEN},
        model={"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test-not-real"},
        platforms={"web": {"enabled": False}},
    ) for name in "ab"}
    async with replica(configs["a"]) as lines_a:
        port_a = admin_port(lines_a)
        patched = await _call("PATCH", port_a, "/api/config", {"compression": {"threshold": 0.61}})
        assert patched["replicas"] == "told" and patched["persisted"] is False
        async with replica(configs["b"]) as lines_b:
            port_b = admin_port(lines_b)
            assert await _threshold_becomes(port_b, 0.61) == 0.61  # caught up from the stored overrides
            await _call("PATCH", port_b, "/api/config", {"compression.threshold": 0.72})
            assert await _threshold_becomes(port_a, 0.72) == 0.72
            for name, value in (("a", 0.55), ("b", 0.56)):
                _set_file_threshold(configs[name], value)
            reloaded = await _call("POST", port_a, "/api/config/reload")
            assert reloaded["replicas"] == "told to re-read their files"
            assert await _threshold_becomes(port_a, 0.55) == 0.55
            assert await _threshold_becomes(port_b, 0.56) == 0.56  # B's own file, not A's
    changed = [line for line in lines_b if line.get("event") == "admin.config_changed"]
    assert [line["new"] for line in changed] == [0.61, 0.72, 0.56]
    assert "via another replica" in changed[-1]["who"]
