"""The loop with a changing tool set (MCP): asked before every request, counted in the preflight estimate."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent.loop import ConversationLoop, LoopSettings
from agent.messages import ToolCall, ToolSchema, user
from agent.model_client import OpenAIModelClient
from agent.tools.base import Tool, ToolContext
from tests.agent.test_loop import CONTEXT, EchoTool, KeepLastEngine
from tests.fakes.openai_server import FakeOpenAI, Reply


class Named:
    def __init__(self, name: str) -> None:
        self.schema = ToolSchema(name=name, description=name, parameters={"type": "object", "properties": {}})
        self.calls = 0

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.calls += 1
        return f"{self.schema.name} ran"


class Source:
    """A source whose tools a test switches between requests (a server going down)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = list(tools)

    def current(self) -> Sequence[Tool]:
        return self.tools


def _call(name: str, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _names(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


async def test_tools_leaving_the_source_leave_the_next_request(fake_openai: FakeOpenAI) -> None:
    """A tool gone from the source is not offered in the next request (nor counted in its preflight) and cannot be called."""
    remote = Named("srv__lookup")
    source = Source([remote])
    engine = KeepLastEngine()
    client = OpenAIModelClient(model="fake-model", base_url=fake_openai.base_url, api_key="sk-test")
    loop = ConversationLoop(model=client, engine=engine, tools=[EchoTool()], settings=LoopSettings(),
                            system_prompt=lambda: "SYS", source=source)

    def first(_request: dict[str, Any]) -> Reply:
        source.tools = []  # the server crashes while the model thinks
        return Reply(content=None, tool_calls=[_call("srv__lookup", "a")])

    fake_openai.push(first, Reply(content=None, tool_calls=[_call("srv__lookup", "b")]), Reply(content="done"))
    seen: list[ToolCall] = []

    async def on_tool(call: ToolCall) -> None:
        seen.append(call)

    result = await loop.run([], user("look"), context=CONTEXT, on_tool=on_tool)
    assert _names(fake_openai.requests[0]) == ["echo_tool", "srv__lookup"]
    assert _names(fake_openai.requests[1]) == ["echo_tool"]
    assert engine.preflight_tools == [2, 1, 1]
    # The call of the request that offered it reaches the tool (an MCP tool then answers "unavailable");
    # the next request's call is refused: the tool is no longer offered.
    assert remote.calls == 1
    first_result, second_result = [m.text for m in result.new_messages if m.role == "tool"]
    assert first_result == "srv__lookup ran"
    assert json.loads(second_result)["error"].startswith("unknown tool 'srv__lookup'")
    assert [call.id for call in seen] == ["a", "b"]
