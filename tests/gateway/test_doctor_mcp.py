"""`chorus doctor` starts each MCP server, lists its tools, and says why one fails."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest
import yaml

from gateway.cli.doctor import handle
from tests.fakes.mcp_server import serve_http
from tests.fakes.openai_server import FakeOpenAI

SERVER_SCRIPT = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


async def test_doctor_lists_tools_and_explains_failures(tmp_path: Path, fake_openai: FakeOpenAI,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A working stdio and HTTP server list their tools; a failing one names its stderr reason and the fix."""
    async with serve_http() as url:
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump({
            "home": str(tmp_path / "home"),
            "model": {"name": "fake-model", "base_url": fake_openai.base_url, "api_key": "sk-test"},
            "mcp": {"servers": {
                "files": {"command": [sys.executable, SERVER_SCRIPT]},
                "web": {"url": url, "headers": {"Authorization": "Bearer secret-header-value"}},
                "broken": {"command": [sys.executable, SERVER_SCRIPT], "env": {"CHORUS_TEST_MCP_FAIL_START": "no db"}},
            }},
        }))
        code = await handle(argparse.Namespace(config=str(path), json=True))
    out = capsys.readouterr().out
    rows = {row["check"]: row for row in map(json.loads, out.splitlines())}
    assert code == 1
    assert rows["mcp.servers.files"]["ok"] is True
    assert str(rows["mcp.servers.files"]["detail"]).startswith("stdio: 8 tools: files__meet, files__echo")
    assert rows["mcp.servers.web"]["ok"] is True and "web__search" in str(rows["mcp.servers.web"]["detail"])
    broken = rows["mcp.servers.broken"]
    assert broken["ok"] is False
    assert "refusing to start: no db" in str(broken["detail"])
    assert "mcp.servers.broken.command" in str(broken["fix"])
    assert "secret-header-value" not in out
