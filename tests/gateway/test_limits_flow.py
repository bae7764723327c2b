"""Spend limits in one gateway (the in-process backend): refusal, the line once, context kept, /usage, footer."""
from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.app import Gateway
from gateway.limits import STATE_FILE
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.harness import chat, make_config, started, web_port

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()


async def _refusals(gw: Gateway, count: int) -> bool:
    """Wait (bounded) until the gateway counted `count` refusals today."""
    limits = gw.parts.limits
    assert limits is not None
    deadline = asyncio.get_running_loop().time() + 10
    while sum((await limits.today()).hits.values()) < count:
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _reply(request: dict[str, Any]) -> Reply:
    return Reply(content=f"re: {request['messages'][-1]['content']}", prompt_tokens=100, completion_tokens=5)


async def test_a_refused_message_is_kept_as_context_and_told_once(fake_openai: FakeOpenAI, home: Path) -> None:
    fake_openai.responder = _reply
    clock = Clock(NOON)
    config = make_config(home, fake_openai.base_url, limits={"per_user": {"messages_per_minute": 1}})
    async with started(config, limits_clock=clock) as gw, chat(web_port(gw), "solo") as tab:
        await tab.say("one")
        assert await tab.reply() == "re: one"
        await tab.say("two")
        line = await tab.reply()
        assert line == "Limit reached: 1 message per minute per person. It resets at 12:01 UTC."
        await tab.say("three")  # refused again in the same window: silent
        assert await _refusals(gw, 2)
        await tab.say("/usage")
        usage = await tab.reply()
        assert "per person: 0 of 1 messages left this minute" in usage
        clock.now += 61
        await tab.say("four")
        assert await tab.replies(1) == ["re: four"]
    assert len(fake_openai.requests) == 2
    last = [m["content"] for m in fake_openai.requests[-1]["messages"] if m["role"] == "user"]
    assert last[-3:] == ["two", "three", "four"]  # refused messages reached the model later, as context


async def test_tokens_per_day_stop_and_a_restart_keeps_the_day(fake_openai: FakeOpenAI, home: Path) -> None:
    fake_openai.responder = _reply
    clock = Clock(NOON)
    config = make_config(home, fake_openai.base_url, limits={"per_chat": {"tokens_per_day": 200}},
                         gateway={"usage_footer": "tokens"})
    async with started(config, limits_clock=clock) as gw, chat(web_port(gw), "budget") as tab:
        await tab.say("a")
        assert await tab.reply() == "re: a\n\n— 105 tokens"
        await tab.say("b")
        assert await tab.reply() == "re: b\n\n— 105 tokens"
    assert (home / STATE_FILE).exists()
    async with started(config, limits_clock=clock) as gw, chat(web_port(gw), "budget") as tab:
        await tab.say("c")  # 210 of 200 spent before the restart: still refused
        assert await tab.reply() == "Limit reached: 200 tokens per day for this chat. It resets at 00:00 UTC."
        clock.now += 12 * 3600
        await tab.say("d")
        assert await tab.reply() == "re: d\n\n— 105 tokens"
    assert len(fake_openai.requests) == 3


async def test_cost_footer_and_a_model_without_a_price(fake_openai: FakeOpenAI, home: Path) -> None:
    fake_openai.responder = _reply
    priced = make_config(home, fake_openai.base_url, gateway={"usage_footer": "cost"},
                         pricing={"fake-model": {"input": 1000, "output": 2000}})
    async with started(priced) as gw, chat(web_port(gw), "cost") as tab:
        await tab.say("x")
        assert await tab.reply() == "re: x\n\n— 105 tokens, cost 0.11"
    unpriced = make_config(home, fake_openai.base_url, gateway={"usage_footer": "cost"},
                           limits={"global": {"cost_per_day": 5}})
    async with started(unpriced) as gw, chat(web_port(gw), "cost") as tab:
        await tab.say("y")
        assert await tab.reply() == "re: y\n\n— 105 tokens, cost unknown"
        await tab.say("/usage")
        assert "(some models have no price: their cost is unknown)" in await tab.reply()
