"""The dashboard's MCP panel in headless Chromium: each server, its health and its tools."""
from __future__ import annotations

from pathlib import Path

from agent.tools.mcp import ServerStatus
from gateway.admin import build_admin_app
from gateway.config import ChorusConfig
from gateway.ops.live_config import LiveConfig
from gateway.ops.metrics import Metrics
from tests.gateway.admin.dashboard_support import FixedBackend, chromium, parse_dom, view
from tests.gateway.admin.helpers import TOKEN, serve_app

SERVERS = [
    ServerStatus(name="files", transport="stdio", state="up", tools=("read", "search"), error=None, restarts=0),
    ServerStatus(name="tickets", transport="http", state="down", tools=(), error="ConnectError: refused", restarts=3),
]


async def test_dashboard_lists_servers_health_and_tools(tmp_path: Path) -> None:
    """One row per server: up with its public tool names, down with its restarts and error."""
    app = build_admin_app(FixedBackend([view("agent:default:web:dm:a", 1000)]), metrics=Metrics(), token=TOKEN,
                          live=LiveConfig(ChorusConfig()), tools=lambda: SERVERS)
    async with serve_app(app) as url:
        dom = parse_dom(await chromium(f"{url}/dashboard#token={TOKEN}", tmp_path / "profile", "--dump-dom"))
    section = next(attrs for _tag, attrs, _t in dom.found if attrs.get("id") == "tools-section")
    assert "hidden" not in section
    rows = [(attrs["data-server"], attrs["class"]) for tag, attrs, _ in dom.found if tag == "li" and "data-server" in attrs]
    assert rows == [("files", "notice"), ("tickets", "error")]
    texts = [" ".join(t) for tag, attrs, t in dom.found if tag == "span" and attrs.get("class") == "text"]
    assert "up; files__read, files__search" in texts
    assert "down, 3 restart(s) — ConnectError: refused; no tools offered" in texts
