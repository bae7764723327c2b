"""The SIGKILL fault run: three `chorus run` replicas on one PostgreSQL and Redis, one killed mid-turn again and again.

Used by `test_failover.py` (asserts) and `bench/failover.py` (prints the figures). Each replica has its own home
and serves the Telegram webhook on its own port; the fake Bot API counts what the bot sent per chat; the fake
OpenAI server answers `echo: <text>` after a short delay, so a kill lands while turns are running. Each chat sends
one message at a time and the next once it was answered; a webhook POST that fails (the replica is dead) is
sent again to the next replica, as a load balancer or Telegram itself would. A replica is SIGKILLed while it
runs turns, then started again, `kills` times; the run ends when every message was answered and the shared
journal and outbox are empty. Each replica calls the fake Bot API under its own path (`/r<i>/bot...`), so a
message answered twice shows which replicas sent it and when, against the kill times.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import yaml

from adapters.telegram import SECRET_HEADER
from gateway.delivery.outbound import STREAM_CURSOR
from tests.fakes.openai_server import FakeOpenAI, Reply, echo_responder
from tests.fakes.telegram_api import Call, FakeTelegram, message, private_chat, user
from tests.gateway.daemon import stop_daemon

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "123456:failover-token"
SECRET = "failover-secret"
START_TIMEOUT = 90.0
ACK_WINDOW = 1.0  # seconds from a reply's send to its sender's death that count as "died before acknowledging"
ARRIVAL_SLACK = 0.5  # the fake stamps a request when its loop reads it: one written just before the kill can be read after
POST_TIMEOUT = 15.0  # longer than the adapter's receipt wait, so a live replica's 503 comes back first
RETRY_PAUSE = 0.05


@dataclass
class Sent:
    """One message of the load: where it was accepted and when it was answered."""

    chat: int
    text: str
    accepted_by: int = -1
    accepted_at: float = 0.0
    answered_at: float | None = None


@dataclass
class Figures:
    kills: int = 0
    kills_mid_turn: int = 0  # kills that found turns of the victim unanswered
    messages: int = 0
    lost: int = 0
    doubled: int = 0
    history_doubled: int = 0  # user messages stored twice in the shared session history
    history_missing: int = 0
    retried_posts: int = 0
    failed_starts: int = 0
    doubled_unexplained: int = 0  # answered twice, the first copy not sent by a replica killed right after
    drafts_taken_over: int = 0  # drafts one replica sent and another edited (it took the turn over mid-stream)
    kill_log: list[tuple[float, int]] = field(default_factory=list)  # (monotonic time, replica index)
    takeover_seconds: list[float] = field(default_factory=list)  # kill -> answer, for the victim's unanswered turns
    seconds: float = 0.0
    events: list[str] = field(default_factory=list)  # kills, restarts and every lost or doubled message, timed
    t0: float = field(default_factory=time.monotonic)

    def note(self, text: str) -> None:
        self.events.append(f"{time.monotonic() - self.t0:7.2f}s {text}")

    def percentile(self, q: float) -> float:
        values = sorted(self.takeover_seconds)
        return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


class Replica:
    """One `chorus run` with its own home; `start` returns once it logged `gateway.ready`.

    Its webhook binds port 0: `port` is the one it logged in `telegram.started` (a new one at each start).
    """

    def __init__(self, index: int, config: Path) -> None:
        self.index, self.config = index, config
        self.port = 0
        self.process: asyncio.subprocess.Process | None = None
        self.ready = False
        self.starts = 0

    async def start(self) -> None:
        self.starts += 1
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway.cli", "run", "--config", str(self.config),
            cwd=ROOT, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.process = process
        started = asyncio.Event()
        tail: list[bytes] = []

        log_file = (self.config.parent / "replica.log").open("ab")  # every start's lines, for a failed run's post-mortem

        async def read() -> None:
            assert process.stderr is not None
            port = 0
            try:
                async for raw in process.stderr:
                    log_file.write(raw)
                    try:
                        line = json.loads(raw)
                    except ValueError:
                        tail.append(raw)
                        continue
                    if line.get("event") == "telegram.started":
                        port = int(line["port"])
                    if line.get("event") == "gateway.ready":
                        self.port = port
                        started.set()
            finally:
                log_file.close()

        reader = asyncio.get_running_loop().create_task(read())
        waiter = asyncio.ensure_future(started.wait())
        exited = asyncio.ensure_future(process.wait())
        await asyncio.wait({waiter, exited}, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        exited.cancel()
        if not started.is_set():
            reader.cancel()
            raise RuntimeError(f"replica {self.index} did not start: {b''.join(tail)[-2000:].decode(errors='replace')}")
        self.ready = True

    def kill(self) -> None:
        self.ready = False
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)

    async def stop(self) -> None:
        self.ready = False
        process = self.process
        if process is None or process.returncode is not None:
            return
        await stop_daemon(process)


def replica_config(tmp: Path, index: int, *, model_url: str, telegram_url: str, store_url: str, redis_url: str,
                   prefix: str, lease: float | None) -> Replica:
    config = {
        "home": str(tmp / f"r{index}" / "home"),
        "model": {"name": "fake-model", "base_url": model_url, "api_key": "sk-test-not-real"},
        "platforms": {"web": {"enabled": False}, "telegram": {
            "enabled": True, "token": TOKEN, "base_url": telegram_url, "mode": "webhook", "allow_all_users": True,
            "webhook": {"url": "https://bot.example.org/tg", "secret_token": SECRET, "path": "/tg",
                        "listen": "127.0.0.1", "port": 0},
        }},
        "admin": {"host": "127.0.0.1", "port": 0},
        "gateway": {"shutdown_grace_seconds": 1, **({} if lease is None else {"lease_seconds": lease})},
        "memory": {"nudge_interval": 0, "flush_min_turns": 0, "memory_enabled": False, "user_profile_enabled": False},
        "store": {"url": store_url},
        "redis": {"url": redis_url, "key_prefix": prefix},
        "logging": {"format": "json", "level": "info"},
    }
    path = tmp / f"r{index}" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return Replica(index, path)


def slow_echo(low: float, high: float, *, streamed: bool = False) -> Callable[[dict[str, Any]], Reply]:
    """`echo: <text>` after low..high seconds; `streamed`: the reply streams over that time instead, so the
    gateway shows it as a draft it edits (any stream over `STREAM_DRAFT_AFTER`)."""
    def respond(request: dict[str, Any]) -> Reply:
        reply = echo_responder(request)
        seconds = random.uniform(low, high)
        if streamed:
            reply.chunk_chars = 2  # many small deltas: the draft shows the first ones, then grows
            chunks = max(1, -(-len(reply.content or "") // reply.chunk_chars))
            reply.chunk_delay_seconds = seconds / max(1, chunks - 1)
        else:
            reply.delay_seconds = seconds
        return reply

    return respond


def is_copy(text: str, answer: str) -> bool:
    """Whether a message the bot sent is (a draft of) `answer`: a draft left unfinished is a copy too."""
    return text == answer or (text.endswith(STREAM_CURSOR) and answer.startswith(text[: -len(STREAM_CURSOR)]))


def copies(texts: dict[int, str]) -> Counter[str]:
    """How many messages of one chat show each answer, a draft left unfinished counted for the answer after it.

    A chat sends its next message only once answered, so the draft a dead replica left for a message comes
    before that message's answer (ids grow): it is a copy of the first answer after it that it begins.
    """
    counts: Counter[str] = Counter()
    drafts: list[str] = []
    for _, text in sorted(texts.items()):
        if text.endswith(STREAM_CURSOR):
            drafts.append(text)
            continue
        counts[text] += 1
        left = [draft for draft in drafts if not is_copy(draft, text)]
        counts[text] += len(drafts) - len(left)
        drafts = left
    for draft in drafts:  # never finished by anyone: its answer is missing, or it is the last answer's twin
        counts[draft] += 1
    return counts


class Load:
    """The chats: each sends a message, retries the POST on the next replica until one accepts it, awaits the reply."""

    def __init__(self, replicas: list[Replica], telegram: FakeTelegram, chats: int, *, reply_timeout: float) -> None:
        self.replicas, self.telegram, self.chats = replicas, telegram, chats
        self.reply_timeout = reply_timeout
        self.sent: list[Sent] = []
        self.retried = 0
        self.stopping = False
        self._next = itertools.count()

    async def run(self, session: aiohttp.ClientSession) -> None:
        await asyncio.gather(*(self._chat(session, chat) for chat in range(self.chats)))

    async def _chat(self, session: aiohttp.ClientSession, chat: int) -> None:
        user_id = 10_000 + chat
        for n in itertools.count():
            if self.stopping:
                return
            sent = Sent(chat=user_id, text=f"m{chat}x{n}z")
            self.sent.append(sent)
            payload = {"update_id": self.telegram.next_update_id(),
                       "message": message(private_chat(user_id), sent.text, sender=user(user_id, f"u{chat}", None))}
            await self._post(session, sent, payload)
            with contextlib.suppress(TimeoutError):
                await self.telegram.wait_for_text(user_id, f"echo: {sent.text}", timeout=self.reply_timeout)
                sent.answered_at = time.monotonic()
            if sent.answered_at is None:
                return  # lost (counted at the end): this chat stops, as a user would give up

    async def _post(self, session: aiohttp.ClientSession, sent: Sent, payload: dict[str, Any]) -> None:
        body = json.dumps(payload)
        while True:
            replica = self.replicas[next(self._next) % len(self.replicas)]
            try:
                async with session.post(
                    f"http://127.0.0.1:{replica.port}/tg", data=body,
                    headers={SECRET_HEADER: SECRET, "Content-Type": "application/json"},
                    timeout=aiohttp.ClientTimeout(total=POST_TIMEOUT),
                ) as response:
                    if response.status == 200:
                        sent.accepted_by, sent.accepted_at = replica.index, time.monotonic()
                        return
            except (aiohttp.ClientError, TimeoutError, OSError):
                pass
            self.retried += 1
            await asyncio.sleep(RETRY_PAUSE)  # a retry pause, as a load balancer spaces its retries


async def _kill_loop(replicas: list[Replica], load: Load, figures: Figures, kills: int, every: float,
                     max_down: int) -> None:
    """Kill a ready replica that has unanswered turns, `kills` times, at most `max_down` down at once; each is
    started again at once."""
    restarts: list[asyncio.Task[None]] = []
    while figures.kills < kills:
        await asyncio.sleep(every)  # the kill schedule
        busy = [r for r in replicas if r.ready and any(s.accepted_by == r.index and s.answered_at is None
                                                       for s in load.sent)]
        down = sum(1 for r in replicas if not r.ready)
        if not busy or down >= max_down:
            continue  # at most `max_down` replicas down: the others serve while they restart
        victim = random.choice(busy)
        killed_at = time.monotonic()
        in_flight = [s for s in load.sent if s.accepted_by == victim.index and s.answered_at is None]
        victim.kill()
        figures.kill_log.append((time.monotonic(), victim.index))
        figures.kills += 1
        figures.kills_mid_turn += 1 if in_flight else 0
        figures.note(f"killed replica {victim.index} with {len(in_flight)} turns unanswered")
        restarts.append(asyncio.create_task(_restart(victim, figures)))
        asyncio.create_task(_time_takeovers(in_flight, killed_at, figures))
    await asyncio.gather(*restarts)


async def _restart(replica: Replica, figures: Figures) -> None:
    """Start the killed replica again (as a supervisor would, retrying a start that failed)."""
    assert replica.process is not None
    await replica.process.wait()
    for attempt in range(3):
        try:
            await replica.start()
        except RuntimeError as exc:
            figures.note(f"replica {replica.index} failed to start (attempt {attempt + 1}): {str(exc)[-300:]}")
            figures.failed_starts += 1
            continue
        figures.note(f"replica {replica.index} ready again")
        return


async def _time_takeovers(in_flight: list[Sent], killed_at: float, figures: Figures) -> None:
    deadline = time.monotonic() + 120
    waiting = list(in_flight)
    while waiting and time.monotonic() < deadline:
        for sent in [s for s in waiting if s.answered_at is not None]:
            figures.takeover_seconds.append(max(0.0, (sent.answered_at or killed_at) - killed_at))
            waiting.remove(sent)
        await asyncio.sleep(0.05)  # polling the load's own bookkeeping


def _backlog(store_url: str) -> int:
    with psycopg.connect(store_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM chorus_inbound WHERE finished_at IS NULL)"
            " + (SELECT count(*) FROM chorus_outbox WHERE acked_at IS NULL)"
        ).fetchone()
    return int(row[0]) if row else 0


def _history_counts(store_url: str) -> dict[str, int]:
    with psycopg.connect(store_url, autocommit=True) as conn:
        rows = conn.execute("SELECT text, count(*) FROM messages WHERE role = 'user' GROUP BY text").fetchall()
    return {str(text): int(count) for text, count in rows}


async def _settle(store_url: str, load: Load, timeout: float) -> None:
    """Wait until every message was answered (or given up on) and nothing is left in the shared journal or outbox."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        unanswered = [s for s in load.sent if s.answered_at is None]
        if not unanswered and await asyncio.to_thread(_backlog, store_url) == 0:
            return
        await asyncio.sleep(0.2)  # polling a condition with a deadline


def _sent_before_its_death(calls: list[Call], figures: Figures) -> bool:
    """Whether the first copy went out from a replica killed within `ACK_WINDOW` after sending it.

    That is the one double the design leaves (docs/design.md §2.5, window 5): the platform accepted the reply,
    the sender died before acknowledging it, and the replica taking over sent it again.
    """
    first = min(calls, key=lambda call: call.at)
    return any(index == int(first.via[1:] or -1) and -ARRIVAL_SLACK <= at - first.at <= ACK_WINDOW for at, index in figures.kill_log)


def _count(telegram: FakeTelegram, load: Load, store_url: str, figures: Figures) -> None:
    history = _history_counts(store_url)
    figures.drafts_taken_over = len({
        (str(call.params["chat_id"]), int(call.params["message_id"])) for call in telegram.calls_of("editMessageText")
        if telegram.sent_via.get((str(call.params["chat_id"]), int(call.params["message_id"])), call.via) != call.via
    })
    shown = {chat: copies(telegram.texts(chat)) for chat in {sent.chat for sent in load.sent}}
    for sent in load.sent:
        answers = shown[sent.chat][f"echo: {sent.text}"]
        figures.messages += 1
        figures.lost += answers == 0
        figures.doubled += answers > 1
        if answers > 1:
            calls = [call for call in telegram.calls if call.method == "sendMessage" and call.at >= sent.accepted_at
                     and str(call.params.get("chat_id")) == str(sent.chat)
                     and is_copy(str(call.params.get("text")), f"echo: {sent.text}")]
            figures.doubled_unexplained += not _sent_before_its_death(calls, figures)
        stored = history.get(sent.text, 0)
        figures.history_doubled += stored > 1
        figures.history_missing += stored == 0
        if answers != 1 or stored != 1:
            senders = ", ".join(f"{call.via} {call.method} at {call.at - figures.t0:.2f}s" for call in telegram.calls
                                if str(call.params.get("chat_id")) == str(sent.chat) and call.at >= sent.accepted_at
                                and is_copy(str(call.params.get("text")), f"echo: {sent.text}"))
            figures.note(f"{sent.text}: answered {answers}x, stored {stored}x, accepted by replica {sent.accepted_by} "
                         f"at {sent.accepted_at - figures.t0:.2f}s; sent: {senders}")


async def run_failover(
    tmp: Path, *, store_url: str, redis_url: str, prefix: str, chats: int = 50, kills: int = 20,
    kill_every: float = 1.0, lease: float | None = 3.0, latency: tuple[float, float] = (0.2, 0.4), max_down: int = 1,
    streamed: bool = False,
) -> Figures:
    """The whole run; returns the figures (the replicas are stopped, the fakes closed)."""
    figures = Figures()
    started = figures.t0
    async with FakeOpenAI(slow_echo(*latency, streamed=streamed)) as model, FakeTelegram(token=TOKEN) as telegram:
        replicas = [  # each replica calls the Bot API under its own path prefix: the fake knows who sent what
            replica_config(tmp, i, model_url=model.base_url, telegram_url=f"http://127.0.0.1:{telegram.port}/r{i}/bot",
                           store_url=store_url, redis_url=redis_url, prefix=prefix, lease=lease)
            for i in range(3)
        ]
        try:
            await asyncio.gather(*(r.start() for r in replicas))
            figures.note("three replicas ready")
            load = Load(replicas, telegram, chats, reply_timeout=max(60.0, (lease or 30.0) * 10))
            async with aiohttp.ClientSession() as session:
                generating = asyncio.create_task(load.run(session))
                await _kill_loop(replicas, load, figures, kills, kill_every, max_down)
                load.stopping = True
                figures.note("kills done; the chats finish their last message")
                await generating
            await _settle(store_url, load, timeout=max(60.0, (lease or 30.0) * 10))
            figures.note("settled")
            if any(s.answered_at is None for s in load.sent):
                for replica in replicas:  # each writes its tasks' stacks to its replica.log
                    if replica.process is not None and replica.process.returncode is None:
                        replica.process.send_signal(signal.SIGUSR1)
            _count(telegram, load, store_url, figures)
            figures.retried_posts = load.retried
        finally:
            await asyncio.gather(*(r.stop() for r in replicas))
    figures.seconds = time.monotonic() - started
    return figures
