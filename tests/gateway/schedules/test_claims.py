"""The claim rule and the runner's catch-up on both stores: each occurrence runs once, however many replicas tick.

Real SQLite files and a real PostgreSQL database; the runner's clock is a variable the test moves.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.base import ChatTarget, InboundMessage
from agent.store.postgres import PostgresSessionStore
from gateway.config import ChorusConfig, parse_config
from gateway.coord.base import OutboundItem
from gateway.coord.memory import MemoryDeduplicator
from gateway.schedules.book import JobRequest, ScheduleBook, ScheduleRefused
from gateway.schedules.postgres import PostgresScheduleStore
from gateway.schedules.runner import Scheduler
from gateway.schedules.store import ScheduleStore, SqliteScheduleStore
from tests.gateway.schedules.support import Clock
from tests.postgres import fresh_database

T0 = datetime(2026, 12, 6, 10, 0, tzinfo=UTC).timestamp()


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with fresh_database("chorus_schedule_store") as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ScheduleStore]:
    if request.param == "sqlite":
        sqlite = SqliteScheduleStore(tmp_path / "schedules.db")
        sqlite.open()
        yield sqlite
        sqlite.close()
        return
    url = request.getfixturevalue("pg_url")
    shared = PostgresSessionStore(url)
    with shared:
        postgres = PostgresScheduleStore(shared)
        postgres.open()
        with shared.connection() as conn:
            conn.execute("TRUNCATE schedule_jobs, schedule_runs")
        yield postgres


class Recorder:
    """A `JobHost` that keeps what it was handed."""

    def __init__(self) -> None:
        self.turns: list[InboundMessage] = []
        self.texts: list[OutboundItem] = []

    async def run_turn(self, message: InboundMessage) -> None:
        self.turns.append(message)

    async def deliver(self, item: OutboundItem) -> None:
        self.texts.append(item)

    async def notify(self, target: ChatTarget, message: str) -> None:
        raise AssertionError(f"unexpected notice {message!r}")


def _config(**scheduling: float) -> ChorusConfig:
    return parse_config({"scheduling": scheduling})


def _scheduler(store: ScheduleStore, clock: Clock, config: ChorusConfig, *, node: str,
               dedup: MemoryDeduplicator) -> tuple[Scheduler, Recorder]:
    scheduler = Scheduler(store, config=lambda: config, clock=clock, node=node, dedup=dedup)
    host = Recorder()
    scheduler.bind(host)
    return scheduler, host


def _every_ten_minutes(book: ScheduleBook) -> str:
    return book.add(JobRequest(chat="telegram:-100", cron="*/10 * * * *", at=None, prompt="digest", origin="cli",
                               deliver_only=True)).id


def test_of_eight_threads_claiming_one_occurrence_exactly_one_wins(store: ScheduleStore) -> None:
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda n: store.claim("job", T0, node=f"n{n}", now=T0), range(8)))
    assert won.count(True) == 1
    assert store.claim("job", T0 + 60, node="n0", now=T0) is True  # the next occurrence is a row of its own
    assert store.last_runs(["job"])["job"].occurrence == T0 + 60


async def test_two_schedulers_on_one_store_run_each_occurrence_once_and_catch_up_within_the_window(
    store: ScheduleStore,
) -> None:
    """Created at 10:00; both replicas first tick at 10:35: 10:10, 10:20, 10:30 run once between them."""
    clock, config, dedup = Clock(T0), _config(catch_up_minutes=60), MemoryDeduplicator()
    job_id = _every_ten_minutes(ScheduleBook(store, config=lambda: config, clock=clock))
    (first, host_a), (second, host_b) = (_scheduler(store, clock, config, node=n, dedup=dedup) for n in "ab")
    clock.now = T0 + 35 * 60
    await asyncio.gather(first.tick(), second.tick())
    await asyncio.gather(first.tick(), second.tick())
    ran = sorted(item.session_key for item in host_a.texts + host_b.texts)
    assert ran == [f"schedule:{job_id}:{int(T0 + m * 60)}" for m in (10, 20, 30)]
    assert {run.status for run in store.last_runs([job_id]).values()} == {"sent"}


async def test_a_restart_beyond_the_window_skips_the_old_occurrences_once(store: ScheduleStore) -> None:
    """Last run 10:30; a fresh scheduler at 13:00 with a 60-minute window: 10:40-11:50 skipped, 12:00-13:00 run."""
    clock, config = Clock(T0), _config(catch_up_minutes=60)
    job_id = _every_ten_minutes(ScheduleBook(store, config=lambda: config, clock=clock))
    assert store.claim(job_id, T0 + 30 * 60, node="old", now=T0 + 30 * 60, status="sent")
    scheduler, host = _scheduler(store, clock, config, node="new", dedup=MemoryDeduplicator())
    clock.now = T0 + 3 * 3600
    await scheduler.tick()
    assert [item.session_key for item in host.texts] == [
        f"schedule:{job_id}:{int(T0 + 7200 + m * 60)}" for m in (0, 10, 20, 30, 40, 50, 60)]
    other, _ = _scheduler(store, clock, config, node="other", dedup=MemoryDeduplicator())
    await other.tick()  # another replica starting at the same moment finds every row made: it runs nothing
    assert len(host.texts) == 7


async def test_a_users_job_runs_as_a_scheduled_turn_in_its_thread_under_its_owner(store: ScheduleStore) -> None:
    clock, config = Clock(T0), _config(min_interval_minutes=5)
    book = ScheduleBook(store, config=lambda: config, clock=clock)
    job = book.add(JobRequest(chat="discord:42", thread="7", cron=None, at="2026-12-06T10:30:00+00:00",
                              prompt="stand-up", origin="user", owner_id="u1", chat_type="group"))
    scheduler, host = _scheduler(store, clock, config, node="a", dedup=MemoryDeduplicator())
    await scheduler.tick()
    clock.now = T0 + 31 * 60
    await scheduler.tick()
    [turn] = host.turns
    assert (turn.platform, turn.chat_id, turn.thread_id, turn.user_id, turn.scheduled) == ("discord", "42", "7", "u1", True)
    assert turn.text == f"[scheduled job {job.id}] stand-up"
    assert store.jobs() == []  # a one-shot user job is gone once it ran


def test_a_users_jobs_are_limited_per_chat_and_by_interval_an_operators_are_not(store: ScheduleStore) -> None:
    config = _config(max_jobs_per_chat=2, min_interval_minutes=30)
    book = ScheduleBook(store, config=lambda: config, clock=Clock(T0))

    def user_job(cron: str) -> JobRequest:
        return JobRequest(chat="telegram:-1", cron=cron, at=None, prompt="p", origin="user", owner_id="u1")

    with pytest.raises(ScheduleRefused, match="every 10 minutes; the shortest allowed interval is 30 minutes"):
        book.add(user_job("*/10 * * * *"))
    book.add(user_job("0 * * * *"))
    book.add(user_job("30 * * * *"))
    with pytest.raises(ScheduleRefused, match=r"the most scheduled jobs allowed \(2, "):
        book.add(user_job("15 * * * *"))
    book.add(JobRequest(chat="telegram:-1", cron="* * * * *", at=None, prompt="p", origin="cli"))
    with pytest.raises(ScheduleRefused, match="time has passed"):
        book.add(JobRequest(chat="telegram:-1", cron=None, at="2020-01-01T00:00", prompt="p", origin="cli"))
    assert len(book.jobs("telegram:-1")) == 3


def test_only_the_maker_or_an_admin_removes_a_job_and_config_jobs_are_the_operators(store: ScheduleStore) -> None:
    config = parse_config({"schedules": {"digest": {"cron": "0 9 * * *", "chat": "telegram:-1", "prompt": "p"}}})
    book = ScheduleBook(store, config=lambda: config, clock=Clock(T0))
    job = book.add(JobRequest(chat="telegram:-1", cron="0 * * * *", at=None, prompt="p", origin="user", owner_id="carol"))
    with pytest.raises(ScheduleRefused, match=f"Only the person who made job {job.id}"):
        book.remove(job.id, chat="telegram:-1", by="bob", admin=False)
    with pytest.raises(ScheduleRefused, match="There is no scheduled job"):
        book.remove(job.id, chat="telegram:-2", by="carol", admin=False)  # another chat's id is not found here
    with pytest.raises(ScheduleRefused, match=r"schedules\.digest"):
        book.remove("digest", chat="telegram:-1", by="ada", admin=True)
    assert book.remove(job.id, chat="telegram:-1", by="ada", admin=True).id == job.id
    assert [listed.job.id for listed in book.listing("telegram:-1")] == ["digest"]


async def test_an_occurrence_claimed_by_a_replica_that_died_is_run_once_by_another_after_a_lease(
    store: ScheduleStore,
) -> None:
    """The dead replica claimed 10:10 and never handed it over; after lease_seconds (30) one other replica runs it."""
    clock, config = Clock(T0), parse_config({"gateway": {"lease_seconds": 30}})
    job_id = _every_ten_minutes(ScheduleBook(store, config=lambda: config, clock=clock))
    assert store.claim(job_id, T0 + 600, node="dead", now=T0 + 600)
    dedup = MemoryDeduplicator()
    assert await dedup.claim(f"schedule:{job_id}:{int(T0 + 600)}")  # made by the dead replica before it died
    (first, host_a), (second, host_b) = (_scheduler(store, clock, config, node=n, dedup=dedup) for n in "ab")
    clock.now = T0 + 600 + 10
    await asyncio.gather(first.tick(), second.tick())
    assert host_a.texts + host_b.texts == []  # within the lease: the claimer may still be handing it over
    clock.now = T0 + 600 + 31
    for scheduler in (first, second):
        scheduler._stale_checked_at = float("-inf")  # noqa: SLF001 - the once-a-second look, made due now
    await asyncio.gather(first.tick(), second.tick())
    assert [item.session_key for item in host_a.texts + host_b.texts] == [f"schedule:{job_id}:{int(T0 + 600)}"]
    assert store.last_runs([job_id])[job_id].status == "sent"


async def test_replicas_with_separate_stores_sharing_a_deduplicator_send_once_even_after_a_lease(tmp_path: Path) -> None:
    """Two homes (SQLite each) with the same config job and one de-duplicator (Redis in production): one sends;
    the other settles its own run row, so it never takes it over later."""
    config = parse_config({"schedules": {"tea": {"cron": "*/10 * * * *", "chat": "slack:C1", "prompt": "tea",
                                                 "deliver_only": True}}, "gateway": {"lease_seconds": 30}})
    clock, dedup, hosts, stores = Clock(T0), MemoryDeduplicator(), [], []
    schedulers = []
    for name in "ab":
        store = SqliteScheduleStore(tmp_path / name / "schedules.db")
        store.open()
        stores.append(store)
        scheduler, host = _scheduler(store, clock, config, node=name, dedup=dedup)
        schedulers.append(scheduler)
        hosts.append(host)
    await asyncio.gather(*(s.tick() for s in schedulers))
    clock.now = T0 + 601
    await asyncio.gather(*(s.tick() for s in schedulers))
    clock.now = T0 + 700
    for scheduler in schedulers:
        scheduler._stale_checked_at = float("-inf")  # noqa: SLF001 - the once-a-second look, made due now
    await asyncio.gather(*(s.tick() for s in schedulers))
    assert [item.session_key for host in hosts for item in host.texts] == [f"schedule:tea:{int(T0 + 600)}"]
    assert sorted(store.last_runs(["tea"])["tea"].status for store in stores) == ["sent", "skipped"]
    for store in stores:
        store.close()


async def test_an_operator_job_without_a_chat_runs_in_the_home_channel(tmp_path: Path) -> None:
    config = parse_config({"gateway": {"home_channel": "slack:COPS"},
                           "schedules": {"digest": {"cron": "0 * * * *", "prompt": "summarise the night"}}})
    store = SqliteScheduleStore(tmp_path / "schedules.db")
    store.open()
    clock = Clock(T0 - 1)
    scheduler, host = _scheduler(store, clock, config, node="a", dedup=MemoryDeduplicator())
    await scheduler.tick()
    clock.now = T0 + 1
    await scheduler.tick()
    store.close()
    [turn] = host.turns
    assert (turn.platform, turn.chat_id, turn.thread_id, turn.user_id) == ("slack", "COPS", None, "operator")
    assert turn.text == "[scheduled job digest] summarise the night"


class Unreachable(Recorder):
    """A gateway whose journal cannot take the job's turn (its store is down)."""

    def __init__(self) -> None:
        super().__init__()
        self.notices: list[tuple[ChatTarget, str]] = []

    async def run_turn(self, message: InboundMessage) -> None:
        raise ConnectionError("the journal's database is unreachable")

    async def notify(self, target: ChatTarget, message: str) -> None:
        self.notices.append((target, message))


async def test_a_run_that_cannot_be_handed_over_is_retried_twice_then_failed_and_told_in_its_chat(
    store: ScheduleStore,
) -> None:
    clock, config = Clock(T0), _config()
    book = ScheduleBook(store, config=lambda: config, clock=clock)
    job = book.add(JobRequest(chat="telegram:-100", thread="11", cron="*/10 * * * *", at=None, prompt="p",
                              origin="cli", name="digest"))
    scheduler = Scheduler(store, config=lambda: config, clock=clock, node="a", dedup=MemoryDeduplicator())
    host = Unreachable()
    scheduler.bind(host)
    clock.now = T0 + 601
    for _ in range(4):
        await scheduler.tick()
    assert host.notices == [(ChatTarget("telegram", "-100", "11"), f"Scheduled job digest ({job.id}) could not run "
                             "at 2026-12-06 10:10 UTC: the journal's database is unreachable. It tried 3 times.")]
    run = store.last_runs([job.id])[job.id]
    assert (run.status, run.attempts, run.detail) == ("failed", 3, "ConnectionError")
    assert book.listing("telegram:-100")[0].line().endswith("· last 2026-12-06 10:10 UTC failed · p")
