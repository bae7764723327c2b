"""Bad limits and prices: a ConfigError naming the key; an unknown priced model is warned about; live keys."""
from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from chorus_errors import ConfigError
from gateway.chats.policy import ChatPolicy
from gateway.config import parse_config
from gateway.limits import Hit, MemorySpendLimiter, Rule, SpendGate, hit_text, next_midnight, price, rules_for
from gateway.ops.events import EventBus
from gateway.ops.live_config import LiveConfig


@pytest.mark.parametrize(("raw", "key"), [
    ({"limits": {"per_user": {"messages_per_minute": -1}}}, "limits.per_user.messages_per_minute"),
    ({"limits": {"per_chat": {"tokens_per_day": "lots"}}}, "limits.per_chat.tokens_per_day"),
    ({"limits": {"global": {"cost_per_day": -0.5}}}, "limits.global.cost_per_day"),
    ({"chats": {"web:x": {"limits": {"per_user": {"messages_per_minute": "x"}}}}},
     "chats.web:x.limits.per_user.messages_per_minute"),
    ({"pricing": {"gpt-4o-mini": {"input": -1, "output": 0.6}}}, "pricing.gpt-4o-mini.input"),
    ({"pricing": {"gpt-4o-mini": {"input": "cheap", "output": 0.6}}}, "pricing.gpt-4o-mini.input"),
    ({"gateway": {"usage_footer": "words"}}, "gateway.usage_footer"),
])
def test_a_bad_limit_names_its_key(raw: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(raw, env={})
    assert error.value.key == key
    assert key in str(error.value)


def test_the_spec_keys_parse_and_unquoted_off_is_off() -> None:
    config = parse_config({
        "gateway": {"usage_footer": False},
        "limits": {"per_user": {"messages_per_minute": 5, "tokens_per_day": 1000},
                   "per_chat": {"messages_per_minute": 20}, "global": {"tokens_per_day": 10, "cost_per_day": 2.5},
                   "exempt_admins": False},
        "pricing": {"gpt-4o-mini": {"input": 0.15, "output": 0.60}},
        "chats": {"telegram:-100": {"limits": {"per_chat": {"messages_per_minute": 2}}}},
    }, env={})
    assert config.gateway.usage_footer == "off"
    assert config.limits.global_.cost_per_day == 2.5
    rules = rules_for(config.limits, config.chats["telegram:-100"].limits, platform="telegram", user_id="1",
                      chat_scope="telegram:-100")
    assert [(r.name, r.limit) for r in rules] == [
        ("per_user.messages_per_minute", 5), ("per_chat.messages_per_minute", 2), ("per_user.tokens_per_day", 1000),
        ("global.tokens_per_day", 10), ("global.cost_per_day", 2.5),
    ]
    assert price(config.pricing, "gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert price(config.pricing, "other", 10, 10) is None


def test_limits_and_pricing_change_live() -> None:
    live = LiveConfig(parse_config({}, env={}))
    live.update({"limits.global.cost_per_day": 3, "pricing": {"m": {"input": 1, "output": 2}},
                 "gateway.usage_footer": "cost", "limits.per_user.messages_per_minute": 4})
    config = live.current()
    assert config.limits.global_.cost_per_day == 3 and config.pricing["m"].output == 2
    assert config.limits.per_user.messages_per_minute == 4 and config.gateway.usage_footer == "cost"
    with pytest.raises(ConfigError) as error:
        live.update({"limits.per_chat.tokens_per_day": -5})
    assert error.value.key == "limits.per_chat.tokens_per_day"


async def test_a_price_for_an_unknown_model_is_warned_about() -> None:
    config = parse_config({"model": {"name": "main-model"}, "pricing": {"main-model": {"input": 1, "output": 1},
                                                                       "mian-model": {"input": 1, "output": 1}}}, env={})
    limiter = MemorySpendLimiter()
    gate = SpendGate(limiter, policy=ChatPolicy(config), bus=EventBus(), lifecycle=limiter)
    with capture_logs() as logs:
        await gate.start()
    warned = [line["model"] for line in logs if line["event"] == "limits.pricing_unknown_model"]
    assert warned == ["mian-model"]


def test_the_hit_line_names_the_limit_and_when_it_resets() -> None:
    noon = 1_796_558_400.0  # 2026-12-06 12:00 UTC
    cost = Hit(Rule("global", "global", "cost", 2.5), next_midnight(noon), first=True)
    window = Hit(Rule("chat", "chat:web:x", "messages", 20), noon + 42, first=True)
    assert hit_text(cost, "en") == "Limit reached: a cost of 2.5 per day for this bot. It resets at 00:00 UTC."
    assert hit_text(window, "en") == "Limit reached: 20 messages per minute for this chat. It resets at 12:00 UTC."
