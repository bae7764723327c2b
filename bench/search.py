"""Benchmark of the session store: import rate, bulk growth to a million messages, `session_search` latency.

1. Imports every session of the real data set (`--data`, default `../shared/data`)
   through `SessionStore.import_session`, each under its own chat id.
2. Grows the store to `--messages` messages (default 1,000,000) by replicating the
   real messages, in order, into many chats of several sessions each (one
   transaction per session, bulk inserts).
3. Runs `--queries` searches (default 300) of one to three words drawn from the
   real messages, each scoped to a single chat, through the `session_search`
   tool, and prints p50/p95/p99 and the database size.
4. With `--store postgresql://…` (an empty database), does all of it again on the
   PostgreSQL store in the same run, with the same chats and queries.

Run: `.venv/bin/python bench/search.py [--data DIR] [--messages N] [--queries N] [--db FILE] [--store URL]`
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path[0] != str(ROOT):  # ahead of bench/ (a script's folder), whose gateway.py would shadow the package
    sys.path.insert(0, str(ROOT))

import structlog  # noqa: E402

from agent.messages import Message  # noqa: E402
from agent.session_files import read_sessions  # noqa: E402
from agent.store import ImportedSession, SessionStore, SqliteSessionStore, is_postgres_url  # noqa: E402
from agent.store.postgres import PostgresSessionStore  # noqa: E402
from agent.tools.base import ToolContext  # noqa: E402
from agent.tools.session_search import SessionSearchTool  # noqa: E402

MESSAGES_PER_CHAT = 1_000
MESSAGES_PER_SESSION = 200
_WORD = re.compile(r"[A-Za-z]{4,}")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def import_real(store: SessionStore, data: Path) -> tuple[list[Message], list[str], int, float]:
    """Import each real session under its own chat; return (message pool, chat ids, messages, seconds)."""
    pool: list[Message] = []
    chats: list[str] = []
    count = 0
    started = time.perf_counter()
    for path in sorted(data.glob("*.jsonl")):
        for record in read_sessions(path):
            chat = f"real:{record.id}"
            store.import_session(
                record.id, key=f"import:{chat}", platform="import", chat_id=chat, messages=record.messages,
                meta=record.extra,
            )
            pool.extend(record.messages)
            chats.append(chat)
            count += len(record.messages)
    return pool, chats, count, time.perf_counter() - started


def grow(store: SessionStore, pool: list[Message], target: int, already: int) -> tuple[list[str], int, float]:
    """Replicate the pool into new chats until the store holds `target` messages (one transaction per chat)."""
    chats: list[str] = []
    written = 0
    cursor = 0
    started = time.perf_counter()
    while already + written < target:
        chat = f"bench:{len(chats)}"
        batch: list[ImportedSession] = []
        in_chat = 0
        while in_chat < MESSAGES_PER_CHAT and already + written < target:
            size = min(MESSAGES_PER_SESSION, MESSAGES_PER_CHAT - in_chat, target - already - written)
            messages = [pool[(cursor + i) % len(pool)] for i in range(size)]
            cursor = (cursor + size) % len(pool)
            batch.append(ImportedSession(f"bench-{len(chats)}-{len(batch)}", f"bench:{chat}", "bench", chat, messages))
            written += size
            in_chat += size
        store.import_sessions(batch)
        chats.append(chat)
        # Chats start at different places of the pool so they hold different conversations.
        cursor = (cursor + 7919) % len(pool)
    return chats, written, time.perf_counter() - started


def make_queries(pool: list[Message], count: int, rng: random.Random) -> list[str]:
    queries: list[str] = []
    while len(queries) < count:
        words = _WORD.findall(rng.choice(pool).text)
        if not words:
            continue
        picked = rng.sample(words, k=min(len(words), rng.choice((1, 2, 2, 3))))
        queries.append(" ".join(picked))
    return queries


async def time_queries(
    store: SessionStore, chats: list[str], queries: list[str], rng: random.Random
) -> tuple[list[float], list[float], int]:
    """(wall ms, CPU ms of this thread, queries with hits); CPU time shows the cost without other load."""
    tool = SessionSearchTool(store)
    latencies: list[float] = []
    cpu: list[float] = []
    with_hits = 0
    for query in queries:
        context = ToolContext(chat_id=rng.choice(chats), session_id="bench")
        started, started_cpu = time.perf_counter(), time.thread_time()
        # Timed in-thread: the store call itself, not the thread hop of the gateway.
        hits = store.search(context.chat_id, query, limit=5, context=1)
        latencies.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
        with_hits += bool(hits)
    # One pass through the tool proves the figures are for what the agent calls.
    result = json.loads(await tool({"query": queries[0]}, ToolContext(chat_id=chats[0], session_id="bench")))
    assert result["success"] is True
    return latencies, cpu, with_hits


def report_latency(
    store: SessionStore, real_chats: list[str], grown_chats: list[str], queries: list[str], rng: random.Random,
    label: str,
) -> None:
    for query in queries[:20]:  # warm the page cache like a running daemon would have it
        store.search(rng.choice(real_chats + grown_chats), query)
    for kind, chats in (("grown chats (~1,000 messages each)", grown_chats), ("real chats", real_chats)):
        if not chats:
            continue
        latencies, cpu, with_hits = asyncio.run(time_queries(store, chats, queries, rng))
        print(f"session_search [{label}], one chat per query, {kind}: {len(latencies)} queries, {with_hits} with hits")
        for name, values in (("wall", latencies), ("cpu ", cpu)):
            print(f"    {name}: p50 {statistics.median(values):.2f} ms, p95 {_percentile(values, 0.95):.2f} ms, "
                  f"p99 {_percentile(values, 0.99):.2f} ms, max {max(values):.2f} ms")


def bench_store(store: SessionStore, label: str, data: Path, messages: int, query_count: int, seed: int) -> None:
    """Import, grow, search, compact and search again on one open, empty store; print each figure."""
    rng = random.Random(seed)  # the same chats and queries for every store of the run
    print(f"== {label}: {store.location}")
    cpu_started = time.process_time()
    pool, real_chats, real_count, real_seconds = import_real(store, data)
    cpu_used = time.process_time() - cpu_started
    print(f"real import: {len(real_chats)} sessions, {real_count:,} messages in {real_seconds:.2f} s "
          f"= {real_count / real_seconds:,.0f} messages/s (CPU of this process {cpu_used:.2f} s)")
    cpu_started = time.process_time()
    grown_chats, grown, grow_seconds = grow(store, pool, messages, real_count)
    cpu_used = time.process_time() - cpu_started
    if grown:
        print(f"bulk growth: {grown:,} messages in {len(grown_chats):,} chats in {grow_seconds:.1f} s "
              f"= {grown / grow_seconds:,.0f} messages/s (CPU of this process {cpu_used:.1f} s)")
    queries = make_queries(pool, query_count, rng)
    report_latency(store, real_chats, grown_chats, queries, rng, f"{label}, as written")
    started = time.perf_counter()
    steps = store.compact_index()
    print(f"compact_index: {steps} steps in {time.perf_counter() - started:.1f} s")
    report_latency(store, real_chats, grown_chats, queries, rng, f"{label}, after compact_index")
    stats = store.stats()
    print(f"store: {stats.messages:,} messages, {stats.sessions:,} sessions, {stats.chats:,} chats, "
          f"db size {stats.db_bytes / 1e6:,.1f} MB")
    print("sample queries: " + "; ".join(repr(q) for q in queries[:5]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--db", type=Path, default=None, help="database file (default: a temporary one)")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="also run on this empty PostgreSQL database (postgresql://…), after SQLite")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not args.data.is_dir():
        print(f"bench/search.py: --data {args.data} is not a directory", file=sys.stderr)
        return 2
    if args.store is not None and not is_postgres_url(args.store):
        print("bench/search.py: --store must be a postgresql://user@host:port/db URL", file=sys.stderr)
        return 2
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "state.db"
        if path.exists():
            print(f"bench/search.py: --db {path} exists; give a new file", file=sys.stderr)
            return 2
        with SqliteSessionStore(path) as store:
            bench_store(store, "SQLite", args.data, args.messages, args.queries, args.seed)
    if args.store is not None:
        with PostgresSessionStore(args.store) as pg:
            if pg.stats().sessions:
                print(f"bench/search.py: --store {pg.location} is not empty; give an empty database", file=sys.stderr)
                return 2
            bench_store(pg, "PostgreSQL", args.data, args.messages, args.queries, args.seed)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
