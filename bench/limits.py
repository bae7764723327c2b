"""Benchmark of the spend limits: the latency a message's limit check adds, and its Redis round trips.

At 100 chats (one sender each, all six limits set: per user and per chat
messages per minute and tokens per day, global tokens and cost per day), the
messages go one at a time, round robin over the chats (the check's own
latency), then all chats at once (as a busy gateway; the latency then includes
waiting for the event loop). For each message the gate's one check (`SpendGate.admit`)
and the charge of one model call (`metered` -> `SpendLimiter.spend`, what a
turn with one model call adds after the reply) are timed separately, on the
Redis backend (loopback, a private key prefix, removed afterwards) and the
in-process one. Round trips are counted at the socket: every command or
pipeline redis-py writes (`Connection.send_packed_command`).

Run: `.venv/bin/python bench/limits.py [--chats 100] [--messages 20] [--redis redis://127.0.0.1:6379/0]`
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if sys.path[0] != str(ROOT):  # ahead of bench/ (a script's folder), whose gateway.py would shadow the package
    sys.path.insert(0, str(ROOT))

import redis.asyncio as aioredis  # noqa: E402
import structlog  # noqa: E402
from redis.asyncio.connection import Connection  # noqa: E402

from adapters.base import ChatTarget, InboundMessage  # noqa: E402
from agent.usage_meter import ModelUsage, usage_sink  # noqa: E402
from gateway.chats.policy import ChatPolicy  # noqa: E402
from gateway.config import parse_config  # noqa: E402
from gateway.intake.routing import Route  # noqa: E402
from gateway.limits import build_spend_gate  # noqa: E402
from gateway.ops.events import EventBus  # noqa: E402

LIMITS = {
    "per_user": {"messages_per_minute": 1000, "tokens_per_day": 10_000_000},
    "per_chat": {"messages_per_minute": 1000, "tokens_per_day": 10_000_000},
    "global": {"tokens_per_day": 1_000_000_000, "cost_per_day": 1_000_000},
}


class RoundTrips:
    """Counts what redis-py writes to a socket: one per command, one per pipeline."""

    def __init__(self) -> None:
        self.count = 0
        self._original = Connection.send_packed_command

    def __enter__(self) -> RoundTrips:
        original = self._original
        counter = self

        async def counted(conn: Connection, command: Any, check_health: bool = True) -> None:
            counter.count += 1
            await original(conn, command, check_health)

        Connection.send_packed_command = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Connection.send_packed_command = self._original  # type: ignore[method-assign]


def _message(chat: int, index: int) -> tuple[InboundMessage, Route]:
    chat_id = f"c{chat}"
    message = InboundMessage(platform="web", chat_id=chat_id, chat_type="dm", user_id=chat_id, user_name="bench",
                             text="hi", message_id=f"{chat}-{index}-{uuid.uuid4().hex[:6]}", timestamp=time.time())
    route = Route(key=f"agent:default:web:dm:{chat_id}", kind="dm", shared=False,
                  target=ChatTarget(platform="web", chat_id=chat_id), reason="dm")
    return message, route


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(backend: str, *, chats: int, messages: int, redis_url: str, at_once: bool) -> dict[str, float]:
    """Every chat sends `messages`; `at_once`: all chats concurrently, else one message at a time, round robin."""
    prefix = f"bench-limits-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as home:
        raw: dict[str, Any] = {"home": home, "limits": LIMITS, "pricing": {"m": {"input": 0.15, "output": 0.6}},
                               "model": {"name": "m"}}
        if backend == "redis":
            raw["redis"] = {"url": redis_url, "key_prefix": prefix}
        config = parse_config(raw, env={})
        gate = build_spend_gate(config, policy=ChatPolicy(config), bus=EventBus())
        await gate.start()
        admit_ms: list[float] = []
        spend_ms: list[float] = []
        admitted = 0

        async def one(chat: int, index: int) -> None:
            nonlocal admitted
            message, route = _message(chat, index)
            started = time.perf_counter()
            hit = await gate.admit(message, route)
            admit_ms.append((time.perf_counter() - started) * 1000)
            admitted += hit is None
            with gate.metered(message, route):
                sink = usage_sink.get()
                assert sink is not None
                started = time.perf_counter()
                await sink(ModelUsage("m", 1200, 80, estimated=False))
                spend_ms.append((time.perf_counter() - started) * 1000)

        async def one_chat(chat: int) -> None:
            for index in range(messages):
                await one(chat, index)

        try:
            for chat in range(chats):  # warm up: the script loaded, a connection open, every chat's keys there
                await one(chat, -1)
            admit_ms.clear()
            spend_ms.clear()
            admitted = 0
            with RoundTrips() as trips:
                if at_once:
                    await asyncio.gather(*(one_chat(chat) for chat in range(chats)))
                else:
                    for index in range(messages):
                        for chat in range(chats):
                            await one(chat, index)
        finally:
            await gate.stop()
            if backend == "redis":
                client = aioredis.Redis.from_url(redis_url)
                keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=500)]
                if keys:
                    await client.delete(*keys)
                await client.aclose()
        total = chats * messages
        return {
            "admit_p50": statistics.median(admit_ms), "admit_p99": _pct(admit_ms, 0.99),
            "spend_p50": statistics.median(spend_ms), "spend_p99": _pct(spend_ms, 0.99),
            "round_trips_per_message": trips.count / total, "admitted": admitted, "messages": total,
        }


async def ping_baseline(redis_url: str, count: int) -> tuple[float, float]:
    """p50 and p99 of a bare PING from the same client library: what one loopback round trip costs here."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        await client.ping()
        times = []
        for _ in range(count):
            started = time.perf_counter()
            await client.ping()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await client.aclose()
    return statistics.median(times), _pct(times, 0.99)


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chats", type=int, default=100)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    print(f"{args.chats} chats x {args.messages} messages, 6 limits on each message")
    p50, p99 = await ping_baseline(args.redis, args.chats * args.messages)
    print(f"baseline, a bare Redis PING: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    for at_once in (False, True):
        print("all chats at once (latency includes waiting for the event loop):" if at_once else
              "one message at a time, round robin over the chats (the check's own latency):")
        for backend in ("redis", "memory"):
            r = await run(backend, chats=args.chats, messages=args.messages, redis_url=args.redis, at_once=at_once)
            print(f"  {backend:>6}: check p50 {r['admit_p50']:.3f} ms, p99 {r['admit_p99']:.3f} ms; "
                  f"charge of one model call p50 {r['spend_p50']:.3f} ms, p99 {r['spend_p99']:.3f} ms; "
                  f"Redis round trips per message (check + one model call) {r['round_trips_per_message']:.2f}; "
                  f"admitted {r['admitted']}/{r['messages']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1:])))
