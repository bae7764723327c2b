"""Spend today on the dashboard (headless Chromium), from `GET /api/limits`."""
from __future__ import annotations

from pathlib import Path

from gateway.admin import build_admin_app
from gateway.admin.limits_api import limits_routes
from gateway.chats.policy import ChatPolicy
from gateway.config import parse_config
from gateway.limits import MemorySpendLimiter, SpendGate
from gateway.limits.base import Charge, Rule
from gateway.ops.events import EventBus
from gateway.ops.live_config import LiveConfig
from gateway.ops.metrics import Metrics
from tests.gateway.admin.dashboard_support import FixedBackend, chromium, parse_dom, view
from tests.gateway.admin.helpers import TOKEN, serve_app

NOW = 1_796_558_400.0  # 2026-12-06 12:00 UTC


async def test_spend_per_model_chat_and_user_and_the_limits_hit_are_shown(tmp_path: Path) -> None:
    config = parse_config({"pricing": {"priced": {"input": 1, "output": 1}}}, env={})
    limiter = MemorySpendLimiter()
    gate = SpendGate(limiter, policy=ChatPolicy(config), bus=EventBus(), lifecycle=limiter, clock=lambda: NOW)
    fields = ("user:telegram:42", "chat:telegram:-100", "global")
    await limiter.spend(Charge(fields, "priced", 4000, 0.004), now=NOW)
    await limiter.spend(Charge(fields, "mystery", 1000, None), now=NOW)
    rule = [Rule("user", "user:telegram:42", "messages", 1)]
    await limiter.admit(rule, now=NOW, message_id="a")
    await limiter.admit(rule, now=NOW, message_id="b")
    app = build_admin_app(FixedBackend([view("agent:default:web:dm:alice", 1000)]), metrics=Metrics(), token=TOKEN,
                          live=LiveConfig(config), extra_routes=limits_routes(gate, lambda: config))
    async with serve_app(app) as url:
        dom = parse_dom(await chromium(f"{url}/dashboard#token={TOKEN}", tmp_path / "profile", "--dump-dom"))
    total = next(t for _tag, a, t in dom.found if a.get("id") == "spend-total")
    assert total == ["2026-12-06: 5,000 tokens (limit unlimited), cost 0.004 (limit unlimited), 1,000 tokens unpriced"]
    cells = [t[0] for tag, _a, t in dom.found if tag == "td" and t]
    assert cells == [
        "model", "priced", "4,000 tokens", "cost 0.004",
        "model", "mystery", "1,000 tokens", "cost unknown",
        "chat", "telegram:-100", "5,000 tokens", "cost 0.004",
        "user", "telegram:42", "5,000 tokens", "cost 0.004",
        "limit hit", "user:telegram:42", "messages", "1×",
    ]
