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

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


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
