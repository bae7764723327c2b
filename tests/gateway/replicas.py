"""`chorus run` replicas with separate homes for the multi-replica tests: their config files, started and stopped."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90.0


def replica_config(tmp_path: Path, name: str, **sections: Any) -> Path:
    """A config file for replica `name` (its own home and admin port); `sections` are merged over the defaults."""
    config: dict[str, Any] = {
        "home": str(tmp_path / name / "home"),
        "admin": {"host": "127.0.0.1", "port": 0},
        "gateway": {"shutdown_grace_seconds": 1},
        "memory": {"nudge_interval": 0, "flush_min_turns": 0},
        "logging": {"format": "json", "level": "info"},
        **sections,
    }
    path = tmp_path / name / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@asynccontextmanager
async def replica(
    config: Path, *, processes: list[asyncio.subprocess.Process] | None = None
) -> AsyncIterator[list[dict[str, Any]]]:
    """`chorus run` until it logged `gateway.ready`, yielding its JSON log lines (still growing); SIGTERM at the end.

    `processes` receives the child, for a test that kills it (a killed replica is not stopped again).
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "run", "--config", str(config),
        cwd=ROOT, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    ready = asyncio.Event()
    lines: list[dict[str, Any]] = []
    errors: list[str] = []

    async def read() -> None:
        assert process.stderr is not None
        async for raw in process.stderr:
            try:
                line = json.loads(raw)
            except ValueError:
                errors.append(raw.decode(errors="replace"))
                continue
            lines.append(line)
            if line.get("event") == "gateway.ready":
                ready.set()

    reader = asyncio.get_running_loop().create_task(read())
    if processes is not None:
        processes.append(process)
    try:
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait({waiter, asyncio.create_task(process.wait())}, timeout=START_TIMEOUT,
                           return_when=asyncio.FIRST_COMPLETED)
        assert ready.is_set(), f"replica {config} did not start: {''.join(errors)[-2000:]}"
        yield lines
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        reader.cancel()


@asynccontextmanager
async def replicas(
    configs: list[Path], *, processes: list[asyncio.subprocess.Process] | None = None
) -> AsyncIterator[list[list[dict[str, Any]]]]:
    """Several `replica`s started at once (their starts overlap), yielding each one's log lines in order.

    `processes` receives the children in the order of `configs`.
    """
    own: list[list[asyncio.subprocess.Process]] = [[] for _ in configs]
    managers = [replica(config, processes=mine) for config, mine in zip(configs, own)]
    async with AsyncExitStack() as stack:
        entered = await asyncio.gather(*(manager.__aenter__() for manager in managers), return_exceptions=True)
        for manager, result in zip(managers, entered):
            if not isinstance(result, BaseException):
                stack.push_async_exit(manager)
        for result in entered:
            if isinstance(result, BaseException):
                raise result
        if processes is not None:
            processes.extend(process for mine in own for process in mine)
        yield [lines for lines in entered if not isinstance(lines, BaseException)]


def admin_port(lines: list[dict[str, Any]]) -> int:
    """The admin port a replica logged when it started listening (`admin.started`, url=http://host:port/healthz)."""
    return logged_port(lines, "admin.started")


def web_port(lines: list[dict[str, Any]]) -> int:
    """The web chat's port a replica bound (its config says port 0; `web.started` names the real one)."""
    return logged_port(lines, "web.started")


def logged_port(lines: list[dict[str, Any]], event: str) -> int:
    """The port a server of a `chorus run` bound, from its `event` line (`url=http://host:port/…` or `port=…`).

    Servers in child processes bind port 0 and log the port they got: a port picked free by the test and bound
    later by the child could be taken by anything else on the machine in between.
    """
    for line in lines:
        if line.get("event") == event:
            if line.get("port"):
                return int(line["port"])
            return int(urlsplit(str(line["url"])).port or 0)
    raise AssertionError(f"no {event} line among {[line.get('event') for line in lines]}")
