"""The admin token on defaults: generated on a loopback admin port, saved under home, shown once; the page explains."""
from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
from pathlib import Path

import aiohttp

from gateway.admin import NO_TOKEN_TEXT, build_admin_app
from gateway.admin.token import TOKEN_FILE, announcement, resolve_admin_token
from gateway.config import parse_config
from gateway.ops.metrics import Metrics
from tests.gateway.admin.dashboard_support import FixedBackend, chromium, parse_dom, view
from tests.gateway.admin.helpers import serve_app

LINE_TIMEOUT = 30.0


def test_a_loopback_admin_port_gets_a_token_saved_under_home_and_reused(tmp_path: Path) -> None:
    """First start: generated, saved 0600, announced with the token; next start: the same token, not shown again."""
    config = parse_config({"home": str(tmp_path / "home")}, env={})
    first = resolve_admin_token(config)
    again = resolve_admin_token(config)
    path = tmp_path / "home" / TOKEN_FILE
    assert (first.source, again.source, again.value) == ("generated", "file", first.value)
    assert first.value is not None and len(first.value) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"#token={first.value}" in announcement(first, "http://127.0.0.1:9090/dashboard")
    assert first.value not in announcement(again, "http://127.0.0.1:9090/dashboard")


def test_a_configured_token_wins_and_a_public_port_gets_none(tmp_path: Path) -> None:
    """admin.token is used as set; on a non-loopback host nothing is generated (the API stays disabled)."""
    configured = parse_config({"home": str(tmp_path / "a"), "admin": {"token": "mine-0123456789"}}, env={})
    public = parse_config({"home": str(tmp_path / "b"), "admin": {"host": "0.0.0.0"}}, env={})
    assert (resolve_admin_token(configured).value, resolve_admin_token(configured).source) == ("mine-0123456789", "config")
    assert (resolve_admin_token(public).value, resolve_admin_token(public).source) == (None, "none")
    assert not (tmp_path / "b").exists()
    assert "set admin.token" in announcement(resolve_admin_token(public), "http://0.0.0.0:9090/dashboard")


async def test_dashboard_without_an_admin_token_says_how_to_enable_it(tmp_path: Path) -> None:
    """With the API disabled the page says why at once, instead of asking for a token that cannot work."""
    app = build_admin_app(FixedBackend([view("agent:default:web:dm:a", 1000)]), metrics=Metrics(), token=None)
    async with serve_app(app) as url:
        dom = parse_dom(await chromium(f"{url}/dashboard", tmp_path / "profile", "--dump-dom"))
    by_id = {attrs["id"]: (attrs, texts) for _tag, attrs, texts in dom.found if "id" in attrs}
    assert by_id["problem"][1] == [NO_TOKEN_TEXT] and "hidden" not in by_id["problem"][0]
    assert "hidden" in by_id["login"][0]
    assert by_id["summary"][1] == ["operator API disabled"]


async def test_chorus_run_on_defaults_prints_a_working_dashboard_link_once(tmp_path: Path) -> None:
    """`chorus run` with no admin.token prints the dashboard URL with a token that opens the API; the log never has it."""
    path = tmp_path / "config.yaml"
    path.write_text(f"home: {tmp_path / 'home'}\nplatforms: {{web: {{port: 0}}}}\nadmin: {{port: 0}}\n"
                    "logging: {format: json}\n", encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "run", "--config", str(path),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stderr is not None
    seen: list[str] = []
    try:
        while not (found := re.search(r"dashboard on (http://\S+)/dashboard#token=(\S+) ", "".join(seen))):
            raw = await asyncio.wait_for(process.stderr.readline(), LINE_TIMEOUT)
            assert raw, "chorus run exited:\n" + "".join(seen)
            seen.append(raw.decode())
        base, token = found.group(1), found.group(2)
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/api/sessions", headers={"Authorization": f"Bearer {token}"}) as response:
                status = response.status
        process.terminate()
        rest = await asyncio.wait_for(process.stderr.read(), LINE_TIMEOUT)
        assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    output = "".join(seen) + rest.decode()
    assert status == 200
    assert output.count(token) == 1  # the announcement only: no log line carries it
