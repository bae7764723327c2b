"""`chorus run` as a real subprocess for tests: start it and collect its JSON log lines."""
from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


def write_daemon_config(path: Path, home: Path, base_url: str, *, web_port: int = 0, **web: Any) -> None:
    """A `chorus run` config on `home` and the fake model: the web chat on `web_port` (0: a free one, logged as
    `web.started`; `web` adds `platforms.web` keys), admin on a free port, JSON logs, a one-second shutdown
    grace, no background reviews."""
    config = {
        "home": str(home),
        "model": {"name": "fake-model", "base_url": base_url, "api_key": "sk-test-not-real"},
        "platforms": {"web": {"enabled": True, "host": "127.0.0.1", "port": web_port, **web}},
        "admin": {"host": "127.0.0.1", "port": 0},
        "gateway": {"shutdown_grace_seconds": 1},
        "memory": {"nudge_interval": 0, "flush_min_turns": 0},
        "logging": {"format": "json", "level": "info"},
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")


async def start_daemon(
    config: Path, *, nofile: int | None = None
) -> tuple[asyncio.subprocess.Process, list[dict[str, Any]]]:
    """Start `chorus run`, return once it logged `gateway.ready`; its log lines keep being collected.

    `nofile` sets the daemon's descriptor limit (soft and hard), as a supervisor's LimitNOFILE would.
    """

    def limit_descriptors() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "run", "--config", str(config),
        cwd=ROOT, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=limit_descriptors if nofile is not None else None,
    )
    lines: list[dict[str, Any]] = []
    ready = asyncio.Event()

    async def read() -> None:
        assert process.stderr is not None
        async for raw in process.stderr:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            lines.append(line)
            if line.get("event") == "gateway.ready":
                ready.set()

    asyncio.get_running_loop().create_task(read())
    await asyncio.wait_for(ready.wait(), START_TIMEOUT)
    return process, lines


async def stop_daemon(process: asyncio.subprocess.Process, *, timeout: float = 30.0) -> None:
    """SIGTERM, as a supervisor stops it; killed if it has not exited within `timeout`."""
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
