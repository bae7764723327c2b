"""Operating MCP tools: per-tool metrics, the servers on the dashboard API, tool failures in the event list."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.mcp_server import serve_http
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.admin.helpers import admin_gateway, config_for
from tests.gateway.admin.test_metrics import samples
from tests.gateway.harness import chat, web_port


def _call(name: str, arguments: dict[str, Any]) -> Reply:
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply(content=None, tool_calls=[call])


async def test_tool_metrics_servers_and_failure_events(fake_openai: FakeOpenAI, home: Path) -> None:
    """One good call and one timed-out call are counted per tool; /api/tools shows the server up; the failure is an event."""
    async with serve_http() as url:
        config = config_for(home, fake_openai.base_url, mcp={"servers": {"web": {"url": url}}, "tool_timeout_seconds": 0.5})
        async with admin_gateway(config) as admin:
            async with chat(web_port(admin.gateway), "ops") as client:
                fake_openai.push(_call("web__echo", {"text": "hi"}), Reply(content="first done"))
                await client.say("one")
                assert await client.reply() == "🔧 web__echo(text=hi)"
                assert await client.reply() == "first done"
                fake_openai.push(_call("web__hang", {"seconds": 30}), Reply(content="second done"))
                await client.say("two")
                assert await client.reply() == "🔧 web__hang(seconds=30)"
                assert await client.reply() == "second done"
            async with admin.http.get(admin.url + "/metrics") as resp:
                got = samples(await resp.text())
            _, tools = await admin.get("/api/tools")
            _, events = await admin.get("/api/events")
    assert got[("chorus_tool_calls_total", (("outcome", "ok"), ("tool", "web__echo")))] == 1
    assert got[("chorus_tool_calls_total", (("outcome", "timeout"), ("tool", "web__hang")))] == 1
    assert got[("chorus_tool_errors_total", (("outcome", "timeout"), ("tool", "web__hang")))] == 1
    assert got[("chorus_tool_seconds_count", (("tool", "web__echo"),))] == 1
    assert got[("chorus_mcp_server_up", (("server", "web"),))] == 1
    (server,) = tools["servers"]
    assert (server["name"], server["transport"], server["state"], server["error"]) == ("web", "http", "up", None)
    assert "web__search" in server["tools"]
    errors = [e["text"] for e in events["events"] if e["kind"] == "error"]
    assert errors == ["tool call failed (tool=web__hang; server=web; outcome=timeout)"]
