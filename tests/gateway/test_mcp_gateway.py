"""MCP tools through the whole gateway: a real SDK server (stdio or streamable HTTP), the real openai client, the fake model."""
from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent.tools.mcp import Backoff, McpConnection, McpHub
from tests.fakes.mcp_server import serve_http
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config, started

PLATFORM = "telegram"
SERVER_SCRIPT = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


@pytest.fixture
async def mcp_url() -> AsyncIterator[str]:
    async with serve_http() as url:
        yield url


def _config(home: Path, fake: FakeOpenAI, servers: dict[str, Any], **sections: Any) -> Any:
    mcp = {"servers": servers, **sections.pop("mcp", {})}
    return make_config(
        home, fake.base_url, platforms={"web": {"enabled": False}, PLATFORM: {"allow_all_users": True}},
        mcp=mcp, **sections,
    )


def _call(name: str, arguments: dict[str, Any], call_id: str = "call-1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def _offered(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def _answer_with_tool_output(request: dict[str, Any]) -> Reply:
    return Reply(content="tool said: " + _tool_messages(request)[-1]["content"])


async def test_stdio_tool_round_trip(fake_openai: FakeOpenAI, home: Path) -> None:
    """The model sees `server__tool` beside the built-in tools, calls it, and the answer uses the server's output."""
    fake_openai.push(Reply(content=None, tool_calls=[_call("files__search", {"query": "oslo", "limit": 2})]),
                     _answer_with_tool_output)
    chat = FakePlatform(PLATFORM)
    config = _config(home, fake_openai, {"files": {"command": [sys.executable, SERVER_SCRIPT]}})
    async with started(config, adapters={PLATFORM: chat}):
        await chat.inject("search oslo")
        reply = await chat.wait_final("tool said:", timeout=30)
    assert reply == "tool said: hit 1 for oslo\nhit 2 for oslo"
    offered = _offered(fake_openai.requests[0])
    assert {"files__search", "files__echo", "memory", "session_search"} <= offered


async def test_http_tool_round_trip_and_calls_run_concurrently(fake_openai: FakeOpenAI, home: Path, mcp_url: str) -> None:
    """A streamable-HTTP server's tools work the same; two calls in one response are in flight at once."""
    calls = [_call("web__meet", {"group": "g", "count": 2}, "a"), _call("web__meet", {"group": "g", "count": 2}, "b")]
    fake_openai.push(Reply(content=None, tool_calls=calls), _answer_with_tool_output)
    chat = FakePlatform(PLATFORM)
    async with started(_config(home, fake_openai, {"web": {"url": mcp_url}}), adapters={PLATFORM: chat}):
        await chat.inject("meet twice")
        await chat.wait_final("tool said:", timeout=30)
    results = _tool_messages(fake_openai.requests[1])
    assert [(m["tool_call_id"], m["content"]) for m in results] == [("a", "met"), ("b", "met")]


async def test_chat_without_permission_is_never_offered_the_tool(fake_openai: FakeOpenAI, home: Path, mcp_url: str) -> None:
    """`chats."P:C".tools` and `mcp.group_tools` decide: a chat not admitting the server never sees its tools and cannot call them."""
    fake_openai.push(Reply(content=None, tool_calls=[_call("web__echo", {"text": "sneaky"})]), _answer_with_tool_output)
    chat = FakePlatform(PLATFORM)
    config = _config(
        home, fake_openai, {"web": {"url": mcp_url}},
        chats={f"{PLATFORM}:locked": {"tools": ["other_server"]}, f"{PLATFORM}:open": {"tools": ["web__echo"]}},
        mcp={"group_tools": []},
    )
    async with started(config, adapters={PLATFORM: chat}):
        await chat.inject("echo sneaky", chat_id="locked")
        await chat.wait_final("tool said:", timeout=30)
        await chat.inject("hello", chat_id="open")
        await chat.wait_text("echo: hello")
        await chat.inject("hi group", chat_id="g1", chat_type="group", mentions_bot=True)
        await chat.wait_text("echo: alice (id u1): hi group")
    locked, _, opened, group = fake_openai.requests
    assert not any(name.startswith("web__") for name in _offered(locked))
    assert "unknown tool 'web__echo'" in _tool_messages(fake_openai.requests[1])[0]["content"]
    assert {name for name in _offered(opened) if name.startswith("web__")} == {"web__echo"}
    assert not any(name.startswith("web__") for name in _offered(group))
    assert "memory" in _offered(locked)


async def test_tool_progress_edits_in_a_dm_and_none_in_a_group(fake_openai: FakeOpenAI, home: Path, mcp_url: str) -> None:
    """DMs get one notice naming the tool (secrets masked), edited for the next tool; groups get none by default."""
    def script(final: str) -> list[Any]:
        return [
            Reply(content=None, tool_calls=[_call("web__search", {"query": "oslo", "api_key": "sk-live-123"})]),
            Reply(content=None, tool_calls=[_call("web__echo", {"text": "done"}, "call-2")]),
            Reply(content=final),
        ]

    chat = FakePlatform(PLATFORM)
    async with started(_config(home, fake_openai, {"web": {"url": mcp_url}}), adapters={PLATFORM: chat}):
        fake_openai.push(*script("dm done"))
        await chat.inject("look it up", chat_id="dm1")
        await chat.wait_final("dm done", timeout=30)
        fake_openai.push(*script("group done"))
        await chat.inject("look it up", chat_id="g1", chat_type="group", mentions_bot=True)
        await chat.wait_final("group done", timeout=30)
    dm = [(o.kind, o.text) for o in chat.outgoing if o.chat_id == "dm1"]
    assert dm[:2] == [("send", "🔧 web__search(query=oslo, api_key=***)"), ("edit", "🔧 web__echo(text=done)")]
    assert not any("sk-live-123" in o.text for o in chat.outgoing)
    assert [o.text for o in chat.outgoing if o.chat_id == "g1"][-1:] == ["group done"]
    assert not any(o.text.startswith("🔧") for o in chat.outgoing if o.chat_id == "g1")


async def test_hanging_tool_times_out_as_a_tool_error(fake_openai: FakeOpenAI, home: Path, mcp_url: str) -> None:
    """`mcp.tool_timeout_seconds`: a tool that hangs comes back to the model as an error and the turn goes on."""
    fake_openai.push(Reply(content=None, tool_calls=[_call("web__hang", {"seconds": 60})]), _answer_with_tool_output)
    chat = FakePlatform(PLATFORM)
    config = _config(home, fake_openai, {"web": {"url": mcp_url}}, mcp={"tool_timeout_seconds": 0.5})
    async with started(config, adapters={PLATFORM: chat}):
        await chat.inject("sleep")
        reply = await chat.wait_final("tool said:", timeout=30)
    error = json.loads(reply.removeprefix("tool said: "))
    assert error == {"success": False, "error": "web__hang did not answer within 0.5s; try a smaller request or another way"}


async def test_megabyte_result_is_cut_before_it_enters_the_session(fake_openai: FakeOpenAI, home: Path, mcp_url: str) -> None:
    """A 1 MB result keeps its head and tail around a marker, within `mcp.max_result_chars`."""
    fake_openai.push(Reply(content=None, tool_calls=[_call("web__big", {"chars": 1_000_000})]), Reply(content="got it"))
    chat = FakePlatform(PLATFORM)
    config = _config(home, fake_openai, {"web": {"url": mcp_url}}, mcp={"max_result_chars": 50_000})
    async with started(config, adapters={PLATFORM: chat}):
        await chat.inject("big")
        await chat.wait_final("got it", timeout=30)
    (result,) = _tool_messages(fake_openai.requests[1])
    text = result["content"]
    assert len(text) <= 50_000
    assert text.startswith("HEADxxx") and text.endswith("xxxTAIL")
    assert "chars cut from the middle of this tool result" in text


async def test_bad_arguments_go_back_to_the_model(fake_openai: FakeOpenAI, home: Path, mcp_url: str) -> None:
    """Arguments that break the tool's schema are refused before anything is sent, naming what was wrong."""
    fake_openai.push(Reply(content=None, tool_calls=[_call("web__add", {"a": 1, "b": "two"})]), _answer_with_tool_output)
    chat = FakePlatform(PLATFORM)
    async with started(_config(home, fake_openai, {"web": {"url": mcp_url}}), adapters={PLATFORM: chat}):
        await chat.inject("add")
        reply = await chat.wait_final("tool said:", timeout=30)
    error = json.loads(reply.removeprefix("tool said: "))["error"]
    assert error == "arguments do not match the schema of web__add: b: 'two' is not of type 'integer'; fix them and call again"


async def test_stop_cancels_a_running_tool_call(fake_openai: FakeOpenAI, home: Path, mcp_url: str) -> None:
    """/stop ends a turn stuck in a tool call; the server stays usable for the next message."""
    fake_openai.push(Reply(content=None, tool_calls=[_call("web__hang", {"seconds": 60})]))
    chat = FakePlatform(PLATFORM)
    async with started(_config(home, fake_openai, {"web": {"url": mcp_url}}), adapters={PLATFORM: chat}) as gateway:
        await chat.inject("sleep")
        await chat.wait_text("🔧 web__hang", timeout=30)
        await chat.inject("/stop")
        await chat.wait_text("stopped.")
        fake_openai.push(Reply(content=None, tool_calls=[_call("web__echo", {"text": "still here"})]),
                         _answer_with_tool_output)
        await chat.inject("again")
        reply = await chat.wait_final("tool said:", timeout=30)
        statuses = gateway.parts.mcp.statuses() if gateway.parts.mcp else []
    assert reply == "tool said: still here"
    assert [(s.name, s.state) for s in statuses] == [("web", "up")]


async def _until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for the server runner to change state (polled: the connection offers no waiter of its own)."""
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


async def test_a_crashed_server_leaves_the_offer_and_comes_back(fake_openai: FakeOpenAI, home: Path) -> None:
    """A stdio server that exits mid-call: a tool error, no tools while it restarts, then its tools again."""
    config = _config(home, fake_openai, {"files": {"command": [sys.executable, SERVER_SCRIPT]}})
    hub = McpHub(config.mcp, connect=lambda name, settings: McpConnection(
        name, settings, backoff=Backoff(initial=2.0, maximum=2.0)))
    chat = FakePlatform(PLATFORM)
    fake_openai.push(Reply(content=None, tool_calls=[_call("files__crash", {})]), _answer_with_tool_output)
    async with started(config, adapters={PLATFORM: chat}, mcp=hub):
        await chat.inject("crash it")
        crashed = await chat.wait_final("tool said:", timeout=30)
        await _until(lambda: hub.statuses()[0].state != "up")
        fake_openai.push(Reply(content="without tools"))
        await chat.inject("still there?")
        await chat.wait_final("without tools", timeout=30)
        await _until(lambda: hub.statuses()[0].state == "up")
        fake_openai.push(Reply(content=None, tool_calls=[_call("files__echo", {"text": "back"}, "call-2")]),
                         _answer_with_tool_output)
        await chat.inject("echo back")
        back = await chat.wait_final("tool said: back", timeout=30)
    assert json.loads(crashed.removeprefix("tool said: "))["success"] is False
    offers = [_offered(r) for r in fake_openai.requests]
    assert "files__crash" in offers[0]
    assert not any(name.startswith("files__") for name in offers[2])
    assert "files__echo" in offers[3]
    assert back == "tool said: back"
    assert hub.statuses()[0].restarts == 1
