"""Every model call of a job is charged: the background review it starts and transcription; Redis down admits."""
from __future__ import annotations

import asyncio
from pathlib import Path

from structlog.testing import capture_logs

from agent.transcription import OpenAITranscriber
from agent.usage_meter import ModelUsage, usage_sink
from gateway.chats.policy import ChatPolicy
from gateway.config import parse_config
from gateway.coord.redis import RedisConnection
from gateway.limits import RedisSpendLimiter, SpendGate
from gateway.ops.events import EventBus
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.coord.test_redis_outage import OwnRedis, own_redis  # noqa: F401 - the fixture
from tests.gateway.fake_platform import FakePlatform
from tests.gateway.harness import make_config, started
from tests.gateway.limits.test_operator import _message_and_route


async def test_the_background_review_counts_toward_the_chat(fake_openai: FakeOpenAI, home: Path) -> None:
    reviewed = asyncio.Event()

    def responder(request: dict[str, object]) -> Reply:
        messages = request["messages"]
        assert isinstance(messages, list)
        if "background reviewer" in str(messages[0].get("content")):
            reviewed.set()
            return Reply(content="nothing to save", prompt_tokens=1000, completion_tokens=7)
        return Reply(content=f"echo: {messages[-1]['content']}", prompt_tokens=100, completion_tokens=5)

    fake_openai.responder = responder
    chat = FakePlatform("telegram")
    config = make_config(home, fake_openai.base_url, memory={"nudge_interval": 1, "flush_min_turns": 0},
                         platforms={"web": {"enabled": False}, "telegram": {"allowed_users": ["u1"]}})
    async with started(config, adapters={"telegram": chat}) as gw:
        await chat.inject("I live in Lisbon")
        await chat.wait_text("echo: I live in Lisbon")
        await asyncio.wait_for(reviewed.wait(), 10)
        limits = gw.parts.limits
        assert limits is not None
        deadline = asyncio.get_running_loop().time() + 10
        while (await limits.today()).tokens.get("chat:telegram:c1", 0) < 1112:
            assert asyncio.get_running_loop().time() < deadline, await limits.today()
            await asyncio.sleep(0.02)
        day = await limits.today()
    assert day.tokens["chat:telegram:c1"] == 1112 and day.tokens["global"] == 1112


async def test_a_transcription_reports_its_tokens(fake_openai: FakeOpenAI) -> None:
    seen: list[ModelUsage] = []

    async def sink(usage: ModelUsage) -> None:
        seen.append(usage)

    transcriber = OpenAITranscriber(model="whisper-1", base_url=fake_openai.base_url, api_key="sk-test-not-real")
    token = usage_sink.set(sink)
    try:
        text = await transcriber.transcribe(b"RIFF....", filename="voice.ogg")
    finally:
        usage_sink.reset(token)
        await transcriber.close()
    assert text == fake_openai.transcript
    assert [(u.model, u.kind, u.estimated) for u in seen] == [("whisper-1", "transcription", True)]
    assert seen[0].output_tokens > 0


async def test_with_redis_down_the_check_admits_and_says_so_once(own_redis: OwnRedis) -> None:  # noqa: F811
    config = parse_config({"limits": {"per_user": {"messages_per_minute": 1}}}, env={})
    limiter = RedisSpendLimiter(RedisConnection(own_redis.url), prefix="down")
    gate = SpendGate(limiter, policy=ChatPolicy(config), bus=EventBus(), lifecycle=limiter)
    await gate.start()
    message, route = _message_and_route("web", "someone")
    try:
        assert await gate.admit(message, route) is None
        await own_redis.kill()
        with capture_logs() as logs:
            results = [await gate.admit(message, route) for _ in range(3)]
            with gate.metered(message, route):
                sink = usage_sink.get()
                assert sink is not None
                await sink(ModelUsage("m", 10, 10, estimated=False))
    finally:
        await gate.stop()
    assert results == [None, None, None]
    assert [line["event"] for line in logs if line["event"].startswith("limits.")] == ["limits.unavailable"]
