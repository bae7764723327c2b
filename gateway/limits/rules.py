"""From the running config to the limits of one message, the price of one call, and the texts people see.

Owns `rules_for` (which `Rule`s apply to a sender in a chat: `limits` with the
chat's `chats."…".limits` over it), `price` (a call's cost from `pricing`, None
for a model without a price), `unknown_priced_models`, `hit_text` (the one
line a refused sender sees) and `usage_lines` (what `/usage` adds). Pure
functions of config values; no I/O.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from gateway.config import ChatLimits, LimitsSettings, Price
from gateway.i18n import Phrase, msgid, say, say_n
from gateway.limits.base import GLOBAL_FIELD, DaySpend, Hit, Rule, chat_field, user_field

_SCOPE_WORDS = {"user": msgid("limit.scope.user"), "chat": msgid("limit.scope.chat"),
                "global": msgid("limit.scope.global")}


def rules_for(limits: LimitsSettings, chat: ChatLimits | None, *, platform: str, user_id: str, chat_scope: str) -> list[Rule]:
    """The limits on a message from `user_id` in `chat_scope`; 0 (unlimited) is left out. Windows first: they're cheap."""
    user, room = limits.per_user, limits.per_chat
    overrides = chat or ChatLimits()
    over_user, over_chat = overrides.per_user, overrides.per_chat

    def pick(default: int, override: int | None) -> int:
        return default if override is None else override

    who, where = user_field(platform, user_id), chat_field(chat_scope)
    candidates = [
        Rule("user", who, "messages", pick(user.messages_per_minute, over_user.messages_per_minute)),
        Rule("chat", where, "messages", pick(room.messages_per_minute, over_chat.messages_per_minute)),
        Rule("user", who, "tokens", pick(user.tokens_per_day, over_user.tokens_per_day)),
        Rule("chat", where, "tokens", pick(room.tokens_per_day, over_chat.tokens_per_day)),
        Rule("global", GLOBAL_FIELD, "tokens", limits.global_.tokens_per_day),
        Rule("global", GLOBAL_FIELD, "cost", limits.global_.cost_per_day),
    ]
    return [rule for rule in candidates if rule.limit > 0]


def price(pricing: Mapping[str, Price], model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The cost of one call in the units of `pricing` (per million tokens); None: `model` has no price."""
    found = pricing.get(model)
    if found is None:
        return None
    return (input_tokens * found.input + output_tokens * found.output) / 1_000_000


def unknown_priced_models(pricing: Mapping[str, Price], models: Iterable[str]) -> list[str]:
    """Names in `pricing` that are no model this gateway can use (a typo: warned at start and reload)."""
    known = set(models)
    return sorted(name for name in pricing if name not in known)


def _amount(rule: Rule, language: str) -> Phrase:
    scope = say(language, _SCOPE_WORDS[rule.scope])
    if rule.metric == "messages":
        return say_n(language, "limit.messages", int(rule.limit), scope=scope)
    if rule.metric == "tokens":
        return say_n(language, "limit.tokens", int(rule.limit), scope=scope)
    return say(language, "limit.cost", cost=rule.limit, scope=scope)


def _clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M")


def hit_text(hit: Hit, language: str) -> Phrase:
    """`Limit reached: 5 messages per minute per person. It resets at 14:03 UTC.`"""
    return say(language, "limit.hit", what=_amount(hit.rule, language), when=_clock(hit.resets_at))


def usage_lines(rules: Sequence[Rule], spend: DaySpend, in_window: Sequence[int], *, resets: float,
                language: str) -> list[Phrase]:
    """What is left of each limit: `per person: 3 of 5 messages this minute left`, … (one line per limit)."""
    if not rules:
        return []  # no limits here: /usage reads as before
    lines = []
    windows = iter(in_window)
    for rule in rules:
        scope = say(language, _SCOPE_WORDS[rule.scope])
        if rule.metric == "messages":
            left = max(0, int(rule.limit) - next(windows))
            lines.append(say(language, "limit.left_messages", scope=scope, left=left, limit=int(rule.limit)))
        elif rule.metric == "tokens":
            left_tokens = max(0, int(rule.limit) - int(spend.used(rule)))
            lines.append(say(language, "limit.left_tokens", scope=scope, left=left_tokens, limit=int(rule.limit),
                             resets=_clock(resets)))
        else:
            left_cost = max(0.0, rule.limit - spend.used(rule))
            note = say(language, "limit.unpriced") if spend.unpriced else ""
            lines.append(say(language, "limit.left_cost", scope=scope, left=left_cost, limit=rule.limit,
                             resets=_clock(resets), note=note))
    return lines


__all__ = ["hit_text", "price", "rules_for", "unknown_priced_models", "usage_lines"]
