"""The conversation loop against the fake OpenAI server through the real `OpenAIModelClient`."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agent.context.engine import CompressionEvent, CompressionResult, ContextEngine, EngineState, EventSink, Trigger
from agent.loop import ConversationLoop, LoopSettings
from agent.messages import Message, ToolSchema, user
from agent.model_client import OpenAIModelClient
from agent.tools.base import ToolContext, ok
from chorus_errors import ContextOverflow, RateLimited
from tests.fakes.openai_server import FakeOpenAI, Reply

CONTEXT = ToolContext(chat_id="c1", session_id="s1", user_id="u1")


class KeepLastEngine(ContextEngine):
    """Test engine: compresses to the system prompt + a summary + the last user message onward."""

    def __init__(self, *, threshold: int = 10**9, preflight: bool = False) -> None:
        self.state = EngineState()
        self._threshold = threshold
        self._preflight = preflight
        self.calls: list[Trigger] = []
        self.preflight_tools: list[int] = []

    @property
    def threshold_tokens(self) -> int:
        return self._threshold

    @property
    def context_length(self) -> int:
        return 128_000

    def should_compress_preflight(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> bool:
        self.preflight_tools.append(len(tools))
        return self._preflight and len(messages) > 3

    def record_usage(self, prompt_tokens: int) -> None:
        self.state.last_prompt_tokens = prompt_tokens

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.state.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return max(tokens, 0) >= self._threshold

    async def compress(
        self, messages: Sequence[Message], *, trigger: Trigger, force: bool = False, on_event: EventSink | None = None
    ) -> CompressionResult:
        self.calls.append(trigger)
        if on_event is not None:
            await on_event(CompressionEvent(kind="started", trigger=trigger))
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        kept = (messages[0], user("[summary]"), *messages[last_user:]) if last_user > 1 else tuple(messages)
        self.state.compression_count += 1
        self.state.last_prompt_tokens = -1
        if on_event is not None:
            await on_event(CompressionEvent(kind="finished", trigger=trigger, tokens_before=100, tokens_after=10))
        return CompressionResult(
            outcome="compressed", trigger=trigger, messages=tuple(kept), tokens_before=100, tokens_after=10
        )


class EchoTool:
    schema = ToolSchema(name="echo_tool", description="echo", parameters={"type": "object", "properties": {}})

    def __init__(self) -> None:
        self.seen: list[tuple[Mapping[str, Any], ToolContext]] = []

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.seen.append((arguments, context))
        return ok(echo=arguments.get("text"))


def _call(text: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "echo_tool", "arguments": json.dumps({"text": text})}}


def _loop(fake: FakeOpenAI, engine: ContextEngine, *, tools: Sequence[Any] = (), **settings: Any) -> ConversationLoop:
    client = OpenAIModelClient(model="fake-model", base_url=fake.base_url, api_key="sk-test")
    return ConversationLoop(
        model=client, engine=engine, tools=tools, settings=LoopSettings(**settings), system_prompt=lambda: "SYS"
    )


async def test_plain_answer_returns_reply_and_new_messages(fake_openai: FakeOpenAI) -> None:
    """A text answer ends the turn; the user and assistant messages are the new messages."""
    fake_openai.push(Reply(content="hello there", prompt_tokens=42))
    loop = _loop(fake_openai, KeepLastEngine())
    result = await loop.run([], user("hi"), context=CONTEXT)
    assert (result.reply, [m.role for m in result.new_messages]) == ("hello there", ["user", "assistant"])
    assert (result.usage.requests, result.usage.last_prompt_tokens) == (1, 42)
    assert fake_openai.requests[0]["messages"][0] == {"role": "system", "content": "SYS"}


async def test_tool_call_runs_tool_then_answers(fake_openai: FakeOpenAI) -> None:
    """A tool call runs the tool with the chat's context, and its result goes back to the model."""
    tool = EchoTool()
    fake_openai.push(Reply(content=None, tool_calls=[_call("ping")]), Reply(content="done"))
    result = await _loop(fake_openai, KeepLastEngine(), tools=[tool]).run([], user("use the tool"), context=CONTEXT)
    assert [(dict(a), c.chat_id) for a, c in tool.seen] == [({"text": "ping"}, "c1")]
    assert [m.role for m in result.new_messages] == ["user", "assistant", "tool", "assistant"]
    second = fake_openai.requests[1]["messages"]
    assert second[-1]["role"] == "tool" and json.loads(second[-1]["content"]) == {"success": True, "echo": "ping"}
    assert fake_openai.requests[0]["tools"][0]["function"]["name"] == "echo_tool"


async def test_iteration_cap_stops_a_tool_loop(fake_openai: FakeOpenAI) -> None:
    """A model that keeps calling tools is stopped at max_iterations with a note."""
    fake_openai.responder = lambda request: Reply(content=None, tool_calls=[_call("again")])
    result = await _loop(fake_openai, KeepLastEngine(), tools=[EchoTool()], max_iterations=3).run(
        [], user("loop"), context=CONTEXT
    )
    assert (result.stop_reason, result.usage.requests, len(fake_openai.requests)) == ("max_iterations", 3, 3)


async def test_unknown_tool_is_refused_to_the_model(fake_openai: FakeOpenAI) -> None:
    """A call to a tool that does not exist gets a refusal result, not an exception."""
    fake_openai.push(Reply(content=None, tool_calls=[_call("x")]), Reply(content="ok"))
    result = await _loop(fake_openai, KeepLastEngine()).run([], user("hi"), context=CONTEXT)
    tool_message = [m for m in result.new_messages if m.role == "tool"][0]
    assert json.loads(tool_message.text)["success"] is False


async def test_overflow_forces_compression_and_retries(fake_openai: FakeOpenAI) -> None:
    """A context_length_exceeded error compresses (error_recovery) and the request is retried."""
    engine = KeepLastEngine()
    fake_openai.push(Reply(status=400, error_code="context_length_exceeded"), Reply(content="fits now"))
    history = [user("old"), Message(role="assistant", content="old answer")]
    result = await _loop(fake_openai, engine).run(history, user("new"), context=CONTEXT)
    assert (result.reply, engine.calls, result.compressed) == ("fits now", ["error_recovery"], True)
    assert [m.text for m in result.history] == ["[summary]", "new", "fits now"]
    assert [m.text for m in result.new_messages] == ["fits now"]


async def test_overflow_gives_up_after_max_attempts(fake_openai: FakeOpenAI) -> None:
    """Overflow on every retry raises ContextOverflow after max_attempts compressions."""
    engine = KeepLastEngine()
    fake_openai.responder = lambda request: Reply(status=413)
    history = [user("old"), Message(role="assistant", content="a")]
    with pytest.raises(ContextOverflow):
        await _loop(fake_openai, engine, max_attempts=2).run(history, user("new"), context=CONTEXT)
    assert engine.calls == ["error_recovery", "error_recovery"]


async def test_plain_rate_limit_is_not_a_compression_trigger(fake_openai: FakeOpenAI) -> None:
    """A 429 that is not about context size is raised without compressing."""
    engine = KeepLastEngine()
    fake_openai.push(Reply(status=429, headers={"retry-after": "1"}))
    with pytest.raises(RateLimited):
        await _loop(fake_openai, engine).run([user("a"), Message(role="assistant", content="b")], user("c"), context=CONTEXT)
    assert engine.calls == []


async def test_post_response_compression_uses_real_prompt_tokens(fake_openai: FakeOpenAI) -> None:
    """Real prompt_tokens at the threshold compress after the answer, and events go to on_event."""
    engine = KeepLastEngine(threshold=1000)
    events: list[CompressionEvent] = []

    async def on_event(event: CompressionEvent) -> None:
        events.append(event)

    fake_openai.push(Reply(content="answer", prompt_tokens=1500))
    history = [user("old"), Message(role="assistant", content="a")]
    result = await _loop(fake_openai, engine).run(history, user("q"), context=CONTEXT, on_event=on_event)
    assert (engine.calls, [e.kind for e in events]) == (["post_response"], ["started", "finished"])
    assert (result.reply, engine.state.last_prompt_tokens) == ("answer", -1)


async def test_preflight_sees_tool_schemas(fake_openai: FakeOpenAI) -> None:
    """The preflight check receives the tool schemas and can compress before the request."""
    engine = KeepLastEngine(preflight=True)
    history = [user("a"), Message(role="assistant", content="b"), user("c"), Message(role="assistant", content="d")]
    await _loop(fake_openai, engine, tools=[EchoTool()]).run(history, user("e"), context=CONTEXT)
    assert (engine.preflight_tools[0], engine.calls) == (1, ["preflight"])
    assert [m["content"] for m in fake_openai.requests[0]["messages"]] == ["SYS", "[summary]", "e"]


async def test_streaming_sends_text_deltas(fake_openai: FakeOpenAI) -> None:
    """With on_text the reply is streamed in pieces that add up to the reply."""
    pieces: list[str] = []

    async def on_text(delta: str) -> None:
        pieces.append(delta)

    fake_openai.push(Reply(content="a streamed reply of some length"))
    result = await _loop(fake_openai, KeepLastEngine()).run([], user("hi"), context=CONTEXT, on_text=on_text)
    assert ("".join(pieces), len(pieces) > 1, result.reply) == (result.reply, True, "a streamed reply of some length")


class BigTool:
    """Returns a large output each call, like a file read or a test run."""

    schema = ToolSchema(name="read_log", description="read", parameters={"type": "object", "properties": {}})

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        return "log line\n" * 2000



@pytest.mark.parametrize("settings", [{"micro_compact": True}, {"proactive_prune_tokens": 1000}])
async def test_old_tool_results_are_pruned_between_tool_rounds(fake_openai: FakeOpenAI, settings: dict[str, Any]) -> None:
    """`micro_compact` / `proactive_prune_tokens`: an old big tool result reaches the model as one line, no summary."""
    from agent.context.factory import build_compressor
    from agent.settings import AuxiliarySettings, CompressionSettings, ModelSettings
    from agent.tokens import default_counter

    compressor = build_compressor(
        CompressionSettings(protect_last_n=1, proactive_prune_min_reclaim_tokens=100, proactive_prune_min_result_chars=1000,
                            **settings),
        ModelSettings(name="fake-model", context_length=128_000), AuxiliarySettings(), counter=default_counter(),
    )
    call = {"type": "function", "function": {"name": "read_log", "arguments": "{}"}}
    calls = [Reply(content=None, tool_calls=[{**call, "id": f"call_{i}"}], prompt_tokens=5000) for i in range(12)]
    fake_openai.push(*calls, Reply(content="read them all"))
    result = await _loop(fake_openai, compressor, tools=[BigTool()], max_iterations=20).run(
        [], user("read the logs"), context=CONTEXT
    )
    assert result.reply == "read them all" and result.compressed
    last = fake_openai.requests[-1]["messages"]
    tool_results = [m["content"] for m in last if m["role"] == "tool"]
    assert len(tool_results) == 12
    assert len(tool_results[0]) < 200 and "read_log" in tool_results[0]  # pruned to one informative line
    assert tool_results[-1] == "log line\n" * 2000  # the newest stays verbatim
    assert not any(m.get("content", "").startswith("[CONTEXT COMPACTION") for m in last if isinstance(m.get("content"), str))
