"""`chorus run` as a real process: the admin API with its token, SIGHUP reload, an invalid file rejected, SIGTERM."""
from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import aiohttp

from tests.gateway.admin.helpers import TOKEN

CONFIG = """\
home: {home}
platforms:
  web: {{enabled: true, host: 127.0.0.1, port: 0}}
admin:
  port: 0
  token: ${{CHORUS_TEST_ADMIN_TOKEN}}
compression:
  threshold: {threshold}   # tuned by the test
"""
LINE_TIMEOUT = 20.0


async def _wait_for(stream: asyncio.StreamReader, pattern: str, seen: list[str]) -> re.Match[str]:
    """Read log lines until one matches `pattern` (every line is kept in `seen`)."""
    regex = re.compile(pattern)
    while True:
        raw = await asyncio.wait_for(stream.readline(), LINE_TIMEOUT)
        if not raw:
            raise AssertionError("chorus run exited; output:\n" + "".join(seen))
        line = raw.decode(errors="replace")
        seen.append(line)
        match = regex.search(line)
        if match:
            return match


async def test_chorus_run_serves_the_admin_api_and_reloads_on_sighup(tmp_path: Path) -> None:
    """A SIGHUP after a valid edit changes the threshold; after an invalid one the running value stays."""
    path = tmp_path / "config.yaml"
    home = tmp_path / "home"
    path.write_text(CONFIG.format(home=home, threshold="0.5"), encoding="utf-8")
    env = {**os.environ, "CHORUS_TEST_ADMIN_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "run", "--config", str(path),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env,
    )
    assert process.stderr is not None
    seen: list[str] = []
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        port = (await _wait_for(process.stderr, r"admin\.started\s.*url=http://127\.0\.0\.1:(\d+)/", seen)).group(1)
        await _wait_for(process.stderr, r"gateway\.ready", seen)
        url = f"http://127.0.0.1:{port}/api/config"
        async with aiohttp.ClientSession() as http:
            async with http.get(url) as resp:
                unauthorised = resp.status
            async with http.get(url, headers=headers) as resp:
                first = (await resp.json())["values"]["compression.threshold"]

            path.write_text(CONFIG.format(home=home, threshold="0.6"), encoding="utf-8")
            process.send_signal(signal.SIGHUP)
            await _wait_for(process.stderr, r"config\.reloaded", seen)
            async with http.get(url, headers=headers) as resp:
                second = (await resp.json())["values"]["compression.threshold"]

            path.write_text(CONFIG.format(home=home, threshold="1.7"), encoding="utf-8")
            process.send_signal(signal.SIGHUP)
            rejected = await _wait_for(process.stderr, r"config\.reload_rejected.*", seen)
            async with http.get(url, headers=headers) as resp:
                third = (await resp.json())["values"]["compression.threshold"]
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), LINE_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert (unauthorised, first, second, third, code) == (401, 0.5, 0.6, 0.6, 0)
    assert "setting=compression.threshold" in rejected.group(0)
    audit = [line for line in seen if "admin.config_changed" in line]
    assert len(audit) == 1 and all(f in audit[0] for f in ("setting=compression.threshold", "old=0.5", "new=0.6", "who=sighup"))
    assert TOKEN not in "".join(seen)
