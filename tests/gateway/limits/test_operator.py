"""What an operator sees: `GET /api/limits`, reset, Prometheus, a live limit change, and `chorus limits`."""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from adapters.base import ChatTarget, InboundMessage
from gateway.cli import main
from gateway.coord.redis import RedisConnection
from gateway.intake.routing import Route
from gateway.limits import RedisSpendLimiter
from gateway.limits.base import Charge, DaySpend, wall_clock
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.admin.helpers import admin_gateway, config_for
from tests.gateway.coord.conftest import delete_prefix
from tests.gateway.harness import chat, web_port


def _message_and_route(platform: str, chat_id: str) -> tuple[InboundMessage, Route]:
    """A DM from `chat_id` (its sender has the same id, as in the web chat)."""
    message = InboundMessage(platform=platform, chat_id=chat_id, chat_type="dm", user_id=chat_id, user_name="x",
                             text="hi", message_id=f"{chat_id}-{time.monotonic_ns()}", timestamp=time.time())
    route = Route(key=f"agent:default:{platform}:dm:{chat_id}", kind="dm", shared=False,
                  target=ChatTarget(platform=platform, chat_id=chat_id), reason="dm")
    return message, route


def _reply(request: dict[str, Any]) -> Reply:
    return Reply(content=f"re: {request['messages'][-1]['content']}", prompt_tokens=100, completion_tokens=5)


async def test_spend_on_the_admin_api_metrics_and_a_live_limit(fake_openai: FakeOpenAI, home: Path) -> None:
    fake_openai.responder = _reply
    config = config_for(home, fake_openai.base_url, pricing={"fake-model": {"input": 1000, "output": 2000}})
    async with admin_gateway(config) as admin, chat(web_port(admin.gateway), "spender") as tab:
        await tab.say("hello")
        assert await tab.reply() == "re: hello"
        status, report = await admin.get("/api/limits")
        assert status == 200
        assert report["models"] == [{"model": "fake-model", "tokens": 105, "cost": pytest.approx(0.11)}]
        assert report["top_chats"] == [{"chat": "web:spender", "tokens": 105, "cost": pytest.approx(0.11)}]
        assert report["top_users"][0]["user"] == "web:spender" and report["hits"] == []
        async with admin.http.get(admin.url + "/metrics") as resp:
            metrics = await resp.text()
        assert 'chorus_spend_total{model="fake-model"} 0.11' in metrics
        status, changed = await admin.send("PATCH", "/api/config", {"limits.per_user.messages_per_minute": 1})
        assert status == 200, changed
        await tab.say("again")  # counted from now on: "hello" came before any limit
        assert await tab.reply() == "re: again"
        await tab.say("third")
        assert (await tab.reply()).startswith("Limit reached: 1 message per minute per person.")
        async with admin.http.get(admin.url + "/metrics") as resp:
            assert 'chorus_limit_hits_total{scope="user"} 1.0' in await resp.text()
        status, one = await admin.get("/api/limits?user=web:spender")
        assert one["subjects"][0]["messages_this_minute"] == 1 and one["subjects"][0]["hits"] == {"messages": 1}
        status, done = await admin.send("POST", "/api/limits/reset", {"user": ["web:spender"]})
        assert (status, done) == (200, {"reset": ["user:web:spender"]})
        await tab.say("after reset")
        assert await tab.replies(1) == ["re: after reset"]
        status, bad = await admin.send("POST", "/api/limits/reset", {"user": ["nocolon"]})
        assert status == 400 and "PLATFORM:ID" in bad["error"]
        async with aiohttp.ClientSession() as http, http.get(admin.url + "/api/limits") as resp:
            assert resp.status == 401  # behind the admin token


def test_chorus_limits_show_and_reset_on_redis(
    tmp_path: Path, redis_url: str, redis_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({
        "home": str(tmp_path / "home"), "redis": {"url": redis_url, "key_prefix": redis_prefix},
        "limits": {"per_chat": {"tokens_per_day": 1000}, "global": {"cost_per_day": 5}},
        "pricing": {"priced": {"input": 1, "output": 1}},
    }), encoding="utf-8")
    now = wall_clock()
    fields = ("user:telegram:42", "chat:telegram:-100", "global")

    async def spend() -> None:
        limiter = RedisSpendLimiter(RedisConnection(redis_url), prefix=redis_prefix)
        await limiter.start()
        await limiter.spend(Charge(fields, "priced", 400, 0.5), now=now)
        await limiter.spend(Charge(fields, "mystery", 100, None), now=now)
        await limiter.stop()

    async def day() -> DaySpend:
        limiter = RedisSpendLimiter(RedisConnection(redis_url), prefix=redis_prefix)
        await limiter.start()
        try:
            return await limiter.day(now=now)
        finally:
            await limiter.stop()
            await delete_prefix(redis_url, redis_prefix)

    asyncio.run(spend())
    assert main(["limits", "show", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "500 tokens (limit unlimited), cost 0.5 (limit 5), plus 100 tokens of models without a price" in out
    assert "  mystery: 100 tokens, cost unknown (no price)" in out
    assert "  telegram:-100: 500 tokens, cost 0.5" in out
    assert main(["limits", "show", "--chat", "telegram:-100", "--json", "--config", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["subject"], shown["tokens"], shown["tokens_per_day"]) == ("chat:telegram:-100", 500, 1000)
    assert main(["limits", "reset", "--chat", "telegram:-100", "--config", str(path)]) == 0
    assert "reset today's counters of chat:telegram:-100" in capsys.readouterr().out
    assert main(["limits", "reset", "--user", "42", "--config", str(path)]) == 2
    assert "write PLATFORM:USER" in capsys.readouterr().err
    assert main(["limits", "reset", "--config", str(path)]) == 2
    after = asyncio.run(day())
    assert "chat:telegram:-100" not in after.tokens and after.tokens["user:telegram:42"] == 500
