"""Must-show: two `chorus run` replicas on one PostgreSQL store, their Redis SIGKILLed and restarted under load.

20 chats each send a message through both replicas at the same moment, round after round; a private
redis-server dies once the load is under way and comes back (empty) a few rounds later. The fake model
records when each turn's request arrived and how long it took, per chat: no two turns of one chat may overlap
(one turn per session across the outage and the recovery), and each reply counts the user messages the turn
saw: every count from 1 to the last appears once per chat (no turn missed an answered message, none ran twice).
"""
from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.gateway.coord.test_redis_outage import OwnRedis, own_redis  # noqa: F401 - the fixture
from tests.gateway.harness import ChatClient, chat
from tests.gateway.replicas import replica, replica_config, web_port
from tests.postgres import fresh_database

CHATS = 20
ROUNDS = 8
KILL_AFTER, RESTART_AFTER = 2, 5  # rounds every chat finished before Redis is killed, and before it is back
REPLY_TIMEOUT = 60.0


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("chorus_redis_outage") as url:
        yield url


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


class Turns:
    """The fake model's record: per chat, when each turn's request arrived and when its answer was due."""

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[float, float]]] = defaultdict(list)

    def respond(self, request: dict[str, Any]) -> Reply:
        texts = [m["content"] for m in request["messages"] if m.get("role") == "user"]
        delay = random.uniform(0.05, 0.25)
        started = time.monotonic()
        self.spans[texts[-1].split()[0]].append((started, started + delay))
        return Reply(content=f"#{len(texts)} {texts[-1]}", delay_seconds=delay)

    def overlapping(self) -> int:
        """Pairs of turns of one chat whose model requests were in flight at the same time."""
        pairs = 0
        for spans in self.spans.values():
            ordered = sorted(spans)
            pairs += sum(1 for (_, end), (start, _) in zip(ordered, ordered[1:]) if start < end)
        return pairs


class Rounds:
    """How many rounds every chat finished; wakes whoever waits for the slowest chat to reach a round."""

    def __init__(self) -> None:
        self.done = [0] * CHATS
        self._changed = asyncio.Condition()

    async def finished(self, chat_index: int) -> None:
        async with self._changed:
            self.done[chat_index] += 1
            self._changed.notify_all()

    async def all_reached(self, count: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: min(self.done) >= count)


async def _talk(index: int, tabs: tuple[ChatClient, ChatClient], rounds: Rounds, replies: list[str]) -> None:
    for n in range(ROUNDS):
        await asyncio.gather(*(tab.say(f"c{index} {side}{n}") for side, tab in zip("ab", tabs)))
        for got in await asyncio.gather(*(tab.replies(1, timeout=REPLY_TIMEOUT) for tab in tabs)):
            replies += got
        await rounds.finished(index)


async def test_redis_killed_and_restarted_under_load_keeps_one_turn_per_session(
    tmp_path: Path, database: str, own_redis: OwnRedis,  # noqa: F811
) -> None:
    """No two turns of one chat at once, and every turn saw every earlier message, through the outage."""
    turns = Turns()
    async with FakeOpenAI(turns.respond) as model:
        configs = [replica_config(
            tmp_path, name, store={"url": database}, redis={"url": own_redis.url, "key_prefix": "outage-load"},
            model={"name": "fake-model", "base_url": model.base_url, "api_key": "sk-test-not-real"},
            platforms={"web": {"enabled": True, "host": "127.0.0.1", "port": 0}},
        ) for name in "ab"]
        async with replica(configs[0]) as lines_a, replica(configs[1]) as lines_b:
            ports = web_port(lines_a), web_port(lines_b)
            rounds = Rounds()
            replies: dict[int, list[str]] = {i: [] for i in range(CHATS)}
            async with contextlib.AsyncExitStack() as stack:
                opened = [(await stack.enter_async_context(chat(ports[0], f"dm-{i}")),
                           await stack.enter_async_context(chat(ports[1], f"dm-{i}"))) for i in range(CHATS)]
                talking = asyncio.gather(*(_talk(i, opened[i], rounds, replies[i]) for i in range(CHATS)))
                await rounds.all_reached(KILL_AFTER)
                await own_redis.kill()
                await rounds.all_reached(RESTART_AFTER)
                await own_redis.start()
                await talking
            log_lines = lines_a + lines_b
    counts = {i: sorted(int(r.split()[0][1:]) for r in got) for i, got in replies.items()}
    wrong = {i: c for i, c in counts.items() if c != list(range(1, 2 * ROUNDS + 1))}
    missed = sum(len(set(range(1, 2 * ROUNDS + 1)) - set(c)) for c in counts.values())
    # One figure line for the closing note: turns that overlapped, and counts never seen (a turn missed a message).
    figures = f"overlapping={turns.overlapping()} missed={missed} chats_wrong={len(wrong)} turns={len(replies) * 2 * ROUNDS}"
    assert (turns.overlapping(), wrong) == (0, {}), f"{figures}; the counts per chat: {wrong}"
    assert all(r.startswith("#") for got in replies.values() for r in got)
    events = [line.get("event") for line in log_lines]
    assert "coord.redis_unavailable" in events and "coord.redis_restored" in events  # the outage did happen
