"""Today's spend as operators read it: `chorus limits show`, `GET /api/limits` and the dashboard.

Owns `day_report` (spend per model, the top chats and users, the limits hit,
the global totals against their limits) and `subject_report` (one chat or
one user: tokens, cost, messages in the window, and the limits on them), both
JSON-able dicts, and `render` (the same as text lines). Pure: the caller reads
the counters.
"""
from __future__ import annotations

from typing import Any

from gateway.config import ChorusConfig
from gateway.limits.base import GLOBAL_FIELD, DaySpend

TOP = 10


def _ranked(spend: DaySpend, kind: str, top: int) -> list[dict[str, Any]]:
    prefix = f"{kind}:"
    ordered = sorted(((-tokens, name) for name, tokens in spend.tokens.items() if name.startswith(prefix)))[:top]
    return [{kind: name.removeprefix(prefix), "tokens": -negative, "cost": round(spend.cost.get(name, 0.0), 6)}
            for negative, name in ordered]


def day_report(config: ChorusConfig, spend: DaySpend, *, top: int = TOP) -> dict[str, Any]:
    """Today: the bot's totals and limits, each model (cost None: no price), the top chats and users, the hits."""
    models = [
        {"model": row["model"], "tokens": row["tokens"],
         "cost": None if row["model"] not in config.pricing else row["cost"]}
        for row in _ranked(spend, "model", len(spend.tokens))
    ]
    ordered = sorted(spend.hits.items(), key=lambda item: (-item[1], item[0]))
    hits = [{"subject": name.rsplit("/", 1)[0], "metric": name.rsplit("/", 1)[1], "count": count}
            for name, count in ordered]
    limits = config.limits.global_
    return {
        "day": spend.day,
        "global": {
            "tokens": spend.tokens.get(GLOBAL_FIELD, 0), "cost": round(spend.cost.get(GLOBAL_FIELD, 0.0), 6),
            "tokens_per_day": limits.tokens_per_day, "cost_per_day": limits.cost_per_day,
            "unpriced_tokens": sum(spend.unpriced.values()),
        },
        "models": models,
        "top_chats": _ranked(spend, "chat", top),
        "top_users": _ranked(spend, "user", top),
        "hits": hits,
    }


def subject_report(config: ChorusConfig, spend: DaySpend, field: str, in_window: int) -> dict[str, Any]:
    """One chat (`chat:PLATFORM:CHAT`) or user (`user:PLATFORM:USER`) today, and the limits on it."""
    kind, _, name = field.partition(":")
    base = config.limits.per_chat if kind == "chat" else config.limits.per_user
    override = config.chats.get(name) if kind == "chat" else None
    scoped = override.limits.per_chat if override is not None else None
    return {
        "subject": field,
        "tokens": spend.tokens.get(field, 0),
        "cost": round(spend.cost.get(field, 0.0), 6),
        "messages_this_minute": in_window,
        "messages_per_minute": (scoped.messages_per_minute if scoped and scoped.messages_per_minute is not None
                                else base.messages_per_minute),
        "tokens_per_day": scoped.tokens_per_day if scoped and scoped.tokens_per_day is not None else base.tokens_per_day,
        "hits": {name.rsplit("/", 1)[1]: count for name, count in spend.hits.items() if name.startswith(f"{field}/")},
    }


def _limit(value: float) -> str:
    return "unlimited" if not value else f"{value:,g}"


def render(report: dict[str, Any]) -> list[str]:
    """A `day_report` or `subject_report` as the lines `chorus limits show` prints."""
    if "subject" in report:
        return [
            f"{report['subject']}: {report['tokens']:,} tokens today (limit {_limit(report['tokens_per_day'])}), "
            f"cost {report['cost']:g}",
            f"messages this minute: {report['messages_this_minute']} (limit {_limit(report['messages_per_minute'])})",
            f"limits hit today: {', '.join(f'{k} ×{v}' for k, v in report['hits'].items()) or 'none'}",
        ]
    total = report["global"]
    lines = [
        f"today ({report['day']} UTC): {total['tokens']:,} tokens (limit {_limit(total['tokens_per_day'])}), "
        f"cost {total['cost']:g} (limit {_limit(total['cost_per_day'])})"
        + (f", plus {total['unpriced_tokens']:,} tokens of models without a price (cost unknown)"
           if total["unpriced_tokens"] else ""),
        "models:",
        *(f"  {m['model']}: {m['tokens']:,} tokens, cost {'unknown (no price)' if m['cost'] is None else m['cost']}"
          for m in report["models"]),
        "top chats:",
        *(f"  {c['chat']}: {c['tokens']:,} tokens, cost {c['cost']:g}" for c in report["top_chats"]),
        "top users:",
        *(f"  {u['user']}: {u['tokens']:,} tokens, cost {u['cost']:g}" for u in report["top_users"]),
        "limits hit:",
        *(f"  {h['subject']} {h['metric']}: {h['count']}" for h in report["hits"]),
    ]
    return lines


__all__ = ["day_report", "render", "subject_report"]
