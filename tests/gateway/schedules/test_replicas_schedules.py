"""Must-show of issue 35: scheduled jobs through `chorus run` replicas, on the real PostgreSQL and Redis.

Time is injected through `CHORUS_TEST_CLOCK_FILE` (gateway/config.py `limits_clock`): the scheduler reads the
file on every tick, so a test moves every replica to the next minute without waiting. All replicas share one
bot each (a polled token is one replica's at a time), so a delivery is counted on whichever fake it reached.
"""
from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gateway.cli import main
from gateway.config import TEST_CLOCK_ENV
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram, group_chat, message, user
from tests.gateway.replicas import replica, replica_config, replicas
from tests.gateway.test_group_chats import mentioning
from tests.postgres import fresh_database

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp()
GROUP = -1001234
TOPIC = 11
HOME_CHAT = 4242  # gateway.home_channel: a private chat of the operator's
WAIT = 60.0  # generous: three replicas on a busy 2-core machine
ADA, BOB, CAROL = user(777, "Ada", "ada"), user(5, "Bob", "bob"), user(6, "Carol", "carol")


@pytest.fixture
def clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every replica's clock, at 12:00:30 UTC until a test writes another time."""
    path = tmp_path / "clock"
    path.write_text(str(NOON + 30), encoding="utf-8")
    monkeypatch.setenv(TEST_CLOCK_ENV, str(path))
    return path


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("chorus_schedules") as url:
        yield url


TOKENS = (TOKEN, "654321:TEST-token-second", "654322:TEST-token-third")


@pytest.fixture
async def bots() -> AsyncIterator[list[FakeTelegram]]:
    """One fake Telegram per replica (its own bot token)."""
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(FakeTelegram(token=token, first_update_id=10_000 * i))
               for i, token in enumerate(TOKENS, start=1)]


def _configs(tmp_path: Path, names: str, *, fake: FakeOpenAI, bots: list[FakeTelegram], **sections: Any) -> dict[str, Path]:
    """Replica configs (`sections` add the store and Redis they share), replica i on bot i."""
    def telegram(bot: FakeTelegram, token: str) -> dict[str, Any]:
        return {"enabled": True, "token": token, "base_url": f"http://127.0.0.1:{bot.port}", "allow_all_users": True,
                "admins": ["777"]}

    return {name: replica_config(
        tmp_path, name, model={"name": "fake-model", "base_url": fake.base_url, "api_key": "sk-test-not-real"},
        platforms={"web": {"enabled": False}, "telegram": telegram(bot, token)}, **sections,
    ) for name, bot, token in zip(names, bots, TOKENS)}


async def _until(check: Callable[[], bool], what: str) -> None:
    """Poll `check` (a condition on what the fakes saw) with a generous deadline."""
    deadline = asyncio.get_running_loop().time() + WAIT
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _sent(bots: list[FakeTelegram], text: str) -> list[dict[str, Any]]:
    """Every sendMessage of exactly `text`, on any bot."""
    return [call.params for tg in bots for call in tg.calls_of("sendMessage") if call.params.get("text") == text]


def _shown(bots: list[FakeTelegram], text: str) -> bool:
    """A message of a bot in the group shows `text` (a streamed reply is sent, then edited to its end)."""
    return any(text in tg.texts(GROUP).values() for tg in bots)


def _runs(database: str) -> list[tuple[str, float, str, str]]:
    with psycopg.connect(database) as conn:
        rows = conn.execute("SELECT job_id, occurrence, node, status FROM schedule_runs ORDER BY occurrence").fetchall()
    return [(str(r[0]), float(r[1]), str(r[2]), str(r[3])) for r in rows]


def _settled(database: str, count: int) -> bool:
    """`count` run rows, each past its hand-over (not claimed any more)."""
    runs = _runs(database)
    return len(runs) == count and all(status != "claimed" for *_, status in runs)


def _schedule_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": "call_schedule", "type": "function", "function": {"name": "schedule", "arguments": json.dumps(arguments)}}


async def test_three_replicas_deliver_each_of_twenty_occurrences_once_even_when_one_is_killed(
    fake_openai: FakeOpenAI, bots: list[FakeTelegram], tmp_path: Path, database: str, redis_url: str, redis_prefix: str,
    clock: Path,
) -> None:
    """An operator's every-minute job on three replicas: 20 minutes, 20 messages. Just before minute 11 the
    replica that sent minute 10 is killed (SIGKILL); the other two go on delivering each minute once."""
    job = {"cron": "* * * * *", "chat": f"telegram:{GROUP}", "thread": str(TOPIC), "prompt": "tick",
           "deliver_only": True}
    configs = _configs(tmp_path, "abc", fake=fake_openai, bots=bots, store={"url": database},
                       redis={"url": redis_url, "key_prefix": redis_prefix}, schedules={"ticker": job})
    processes: list[asyncio.subprocess.Process] = []
    killed = -1
    async with replicas([configs[name] for name in "abc"], processes=processes) as logs:
        for minute in range(1, 21):
            if minute == 11:
                await _until(lambda: len(_runs(database)) == 10 and _runs(database)[-1][3] == "sent", "minute 10's row")
                node = _runs(database)[-1][2]  # host:pid:suffix of the replica that sent minute 10
                killed = next(i for i, process in enumerate(processes) if f":{process.pid}:" in node)
                processes[killed].send_signal(signal.SIGKILL)
                await processes[killed].wait()
            clock.write_text(str(NOON + 60 * minute + 1), encoding="utf-8")
            await _until(lambda m=minute: len(_sent(bots, "tick")) >= m, f"minute {minute}")  # type: ignore[misc]
            # Settled before the clock jumps a minute: a row still "claimed" when it does looks a lease old and
            # another replica would take it over (a clock that jumps is the test's, not production's).
            await _until(lambda m=minute: _settled(database, m), f"minute {minute}'s row")  # type: ignore[misc]
        await _until(lambda: {status for *_, status in _runs(database)} == {"sent"}, "every run row to say sent")
        runs = _runs(database)
    sent = _sent(bots, "tick")
    assert len(sent) == 20
    assert {params.get("message_thread_id") for params in sent} == {TOPIC}
    assert [occurrence for _, occurrence, _, _ in runs] == [NOON + 60 * m for m in range(1, 21)]
    assert {status for *_, status in runs} == {"sent"}
    fired = [line for lines in logs for line in lines if line.get("event") == "schedule.fired"]
    assert len(fired) == 20
    late = [line for line in logs[killed] if line.get("event") == "schedule.fired"
            and line["occurrence"] >= "2026-12-06 12:11"]
    assert late == []  # the killed replica fired nothing after it died; the other two covered minutes 11-20
    assert len(bots[killed].calls_of("sendMessage")) < 20


async def test_a_tool_job_fires_in_its_topic_catches_up_after_a_restart_and_only_its_maker_or_an_admin_removes_it(
    fake_openai: FakeOpenAI, bots: list[FakeTelegram], tmp_path: Path, clock: Path,
) -> None:
    """One `chorus run` on its home's SQLite, catch_up_minutes 30. At 12:00 the operator adds "tea" at :45
    (`chorus schedules add`) and Carol asks in forum topic 11 for an hourly stand-up at :05; at 12:05 (moved by
    the clock) her prompt runs as a turn whose answer lands in topic 11. Stopped, started again at 13:20: the
    stand-up of 13:05 (15 minutes ago) runs once; the tea of 12:45 (35 minutes ago) is skipped with one log
    line, and the tea of 13:45 is sent. The home channel says how long the gateway was away. Bob cannot
    /unschedule Carol's job; Ada (an admin) can."""

    def responder(request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return Reply(content="Scheduled.")
        if "remind us" in str(last["content"]):
            return Reply(content=None, tool_calls=[_schedule_call(
                {"action": "add", "cron": "5 * * * *", "prompt": "post the stand-up"})])
        if "[scheduled job" in str(last["content"]):
            fired.append(str(last["content"]))
            return Reply(content=f"Stand-up #{len(fired)}")
        return Reply(content="ok")

    fired: list[str] = []
    fake_openai.responder = responder
    tg, forum = bots[0], group_chat(GROUP, is_forum=True)
    config = _configs(tmp_path, "a", fake=fake_openai, bots=bots, gateway={"home_channel": f"telegram:{HOME_CHAT}",
                      "shutdown_grace_seconds": 1}, scheduling={"catch_up_minutes": 30})["a"]
    assert main(["schedules", "add", "--config", str(config), "--chat", f"telegram:{GROUP}", "--cron", "45 * * * *",
                 "--prompt", "tea time", "--deliver-only"]) == 0
    async with replica(config):
        await tg.push_update(message=mentioning(CAROL, "remind us every hour at :05 to post the stand-up", chat=forum,
                                                message_thread_id=TOPIC, is_topic_message=True))
        await _until(lambda: _shown(bots, "Scheduled."), "the tool's answer")
        before = len(tg.calls_of("sendMessage"))
        clock.write_text(str(NOON + 5 * 60 + 1), encoding="utf-8")
        await _until(lambda: _shown(bots, "Stand-up #1"), "the 12:05 turn's reply")
        in_topic = [call.params.get("message_thread_id") for call in tg.calls_of("sendMessage")[before:]]
    jobs = {job[-1]: job for job in _stored_jobs(tmp_path / "a" / "home" / "schedules.db")}
    tea, standup = jobs["45 * * * *"], jobs["5 * * * *"]
    assert standup[1:] == (f"telegram:{GROUP}", str(TOPIC), "6", "5 * * * *")
    clock.write_text(str(NOON + 80 * 60), encoding="utf-8")  # 13:20
    async with replica(config) as lines:
        await _until(lambda: _shown(bots, "Stand-up #2"), "the 13:05 turn caught up")
        await _until(lambda: any(line.get("event") == "schedule.skipped" for line in lines), "the skip line")
        await _until(lambda: bool(tg.texts(HOME_CHAT)), "the restart notice")
        clock.write_text(str(NOON + 105 * 60 + 1), encoding="utf-8")  # 13:45
        await _until(lambda: bool(_sent(bots, "tea time")), "the 13:45 tea")
        await tg.push_update(message=message(forum, "/schedules", sender=BOB))
        await _until(lambda: any(standup[0] in text and "next 2026-12-06 14:05 UTC" in text
                                 for text in tg.texts(GROUP).values()), "the /schedules listing")
        await tg.push_update(message=message(forum, f"/unschedule {standup[0]}", sender=BOB))
        await _until(lambda: _shown(bots, f"Only the person who made job {standup[0]} or an admin can remove it."),
                     "Bob's refusal")
        await tg.push_update(message=message(forum, f"/unschedule {standup[0]}", sender=ADA))
        await _until(lambda: _shown(bots, f"Removed scheduled job {standup[0]}."), "Ada's removal")
    assert [text.endswith("post the stand-up") for text in fired] == [True, True]
    assert in_topic and set(in_topic) == {TOPIC}
    assert len(_sent(bots, "tea time")) == 1
    assert list(tg.texts(HOME_CHAT).values()) == ["Back after 4499 s; 0 replies resumed."]
    skipped = [line for line in lines if line.get("event") == "schedule.skipped"]
    assert [(line["job"], line["occurrences"], line["first"]) for line in skipped] == [
        (tea[0], 1, "2026-12-06 12:45 UTC")]
    assert [job[0] for job in _stored_jobs(tmp_path / "a" / "home" / "schedules.db")] == [tea[0]]


def _stored_jobs(path: Path) -> list[tuple[str, ...]]:
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT id, chat, thread, owner_id, cron FROM schedule_jobs").fetchall()
    return [tuple(str(value) for value in row) for row in rows]
