"""MCP connections against a real SDK server over stdio: restart after a crash, start failures that say why."""
from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path

from agent.settings import McpServerSettings, McpSettings
from agent.tools.base import ToolContext
from agent.tools.mcp import Backoff, McpConnection, McpHub

SERVER_SCRIPT = str(Path(__file__).resolve().parents[3] / "fakes" / "mcp_server.py")
CONTEXT = ToolContext(chat_id="web:c1", session_id="s1")
FAST = Backoff(initial=0.2, maximum=1.0, stable_after=30.0)


def _quick(name: str, settings: McpServerSettings) -> McpConnection:
    return McpConnection(name, settings, connect_timeout=30.0, ping_interval=0.5, backoff=FAST)


async def _until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for a condition the runner task changes (polled: the connection state has no waiters of its own)."""
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


def _hub(**servers: dict[str, object]) -> McpHub:
    return McpHub(McpSettings.model_validate({"servers": servers, "tool_timeout_seconds": 20}), connect=_quick)


async def test_a_crashing_server_is_restarted_and_its_tools_vanish_meanwhile() -> None:
    """A server that exits mid-call: the call is a tool error, its tools leave the offer, the server comes back."""
    hub = _hub(s={"command": [sys.executable, SERVER_SCRIPT]})
    await hub.start()
    try:
        tools = {tool.name: tool for tool in hub.tools()}
        assert "s__crash" in tools
        result = json.loads(await tools["s__crash"]({}, CONTEXT))
        assert result["success"] is False
        await _until(lambda: hub.statuses()[0].state != "up")
        assert hub.tools() == ()
        await _until(lambda: hub.statuses()[0].state == "up")
        status = hub.statuses()[0]
        assert (status.restarts, status.error) == (1, None)
        again = {tool.name: tool for tool in hub.tools()}
        assert await again["s__echo"]({"text": "back"}, CONTEXT) == "back"
    finally:
        await hub.stop()
    assert hub.statuses()[0].state == "stopped"


async def test_a_server_that_refuses_to_start_says_why() -> None:
    """The stderr line of a server that exits at start becomes the status error; its tools are never offered."""
    hub = _hub(bad={"command": [sys.executable, SERVER_SCRIPT], "env": {"CHORUS_TEST_MCP_FAIL_START": "no database"}})
    await hub.start()
    try:
        status = hub.statuses()[0]
        assert status.state in ("down", "starting")
        assert status.error is not None and "refusing to start: no database" in status.error
        assert hub.tools() == ()
    finally:
        await hub.stop()


async def test_a_missing_command_is_reported() -> None:
    """A command that does not exist is named in the error."""
    hub = _hub(gone={"command": ["/nonexistent/mcp-server-binary"]})
    await hub.start()
    try:
        error = hub.statuses()[0].error
        assert error is not None and "cannot start the command" in error and "/nonexistent/mcp-server-binary" in error
    finally:
        await hub.stop()


async def test_an_unreachable_http_server_is_reported() -> None:
    """A URL nobody listens on is down with a connection error, and start() still returns."""
    hub = _hub(far={"url": "http://127.0.0.1:9/mcp"})
    await hub.start()
    try:
        status = hub.statuses()[0]
        assert (status.transport, status.state != "up") == ("http", True)
        assert status.error
    finally:
        await hub.stop()


async def test_start_twice_is_refused_and_stop_is_repeatable() -> None:
    """Lifecycle misuse fails early with the fix in the message."""
    hub = _hub(far={"url": "http://127.0.0.1:9/mcp"})
    await hub.start()
    try:
        try:
            await hub.start()
        except RuntimeError as exc:
            assert "call stop() first" in str(exc)
        else:
            raise AssertionError("second start() accepted")
    finally:
        await hub.stop()
        await hub.stop()
