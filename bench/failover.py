"""Failover under SIGKILL: three `chorus run` replicas on PostgreSQL and Redis, one killed mid-turn again and again.

Runs the same fault run as `tests/gateway/test_failover.py` and prints its figures: kills, messages, lost,
answered twice, stored twice, and the takeover latency (from the kill to the answer of each turn the killed
replica had not answered) at p50 / p99, and the database's load over the run (transactions and rows written per
second, from `pg_stat_database`). Without `--lease` the replicas run at the default `gateway.lease_seconds`.
Needs the PostgreSQL and Redis of `.ci/run` (a fresh database is created and dropped; Redis keys live under a
unique prefix and are deleted after).

    .venv/bin/python bench/failover.py --kills 20 --chats 100            # takeover at the default settings
    .venv/bin/python bench/failover.py --kills 20 --chats 50 --lease 2
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path[0] != str(ROOT):  # ahead of bench/ (a script's folder), whose gateway.py would shadow the package
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
import redis  # noqa: E402

from gateway.config import GatewaySettings  # noqa: E402
from tests.gateway.failover import Figures, run_failover  # noqa: E402
from tests.postgres import fresh_database  # noqa: E402

_STATS = ("SELECT xact_commit + xact_rollback AS xacts, tup_inserted + tup_updated + tup_deleted AS written"
          " FROM pg_stat_database WHERE datname = current_database()")


def _db_counts(url: str) -> tuple[int, int]:
    """Transactions and rows written in this database so far (the server's statistics)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(_STATS).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def _print(figures: Figures, args: argparse.Namespace, load: tuple[int, int]) -> None:
    shape = "streamed over" if args.stream else "whole after"
    lease = f"{args.lease:g} s" if args.lease is not None else f"{GatewaySettings().lease_seconds:g} s (the default)"
    print(f"replicas 3 (at most {args.max_down} down), chats {args.chats}, lease {lease}, "
          f"replies {shape} {args.latency_low:g}-{args.latency_high:g} s")
    print(f"kills               {figures.kills} ({figures.kills_mid_turn} with the victim's turns unanswered)")
    print(f"messages            {figures.messages}")
    print(f"lost                {figures.lost}")
    print(f"answered twice      {figures.doubled} ({figures.doubled - figures.doubled_unexplained} sent by a replica "
          f"killed right after, before its acknowledgement; {figures.doubled_unexplained} otherwise)")
    if args.stream:
        print(f"drafts taken over   {figures.drafts_taken_over} (sent by a replica that died, finished by another)")
    print(f"stored twice        {figures.history_doubled} (missing from history: {figures.history_missing})")
    print(f"webhook re-posts    {figures.retried_posts}; failed restarts {figures.failed_starts}")
    print(f"takeover latency    p50 {figures.percentile(0.50):.2f} s  p99 {figures.percentile(0.99):.2f} s"
          f"  (n={len(figures.takeover_seconds)}, kill -> answer)")
    print(f"wall time           {figures.seconds:.1f} s")
    print(f"database load       {load[0] / figures.seconds:.0f} transactions/s, {load[1] / figures.seconds:.0f} rows "
          f"written/s (all of it: turns, journal, outbox, heartbeats)")
    if args.verbose:
        print("\n".join(figures.events))


def main() -> int:
    # The fakes answer replicas that are killed mid-request; aiohttp logs each as an error with a traceback.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--lease", type=float, default=None,
                        help="gateway.lease_seconds of the replicas (default: the configuration's default)")
    parser.add_argument("--max-down", type=int, default=1, help="replicas down (killed, restarting) at once, at most")
    parser.add_argument("--kill-every", type=float, default=1.0, help="seconds between kill attempts")
    parser.add_argument("--latency-low", type=float, default=0.2)
    parser.add_argument("--latency-high", type=float, default=0.4)
    parser.add_argument("--stream", action="store_true",
                        help="the replies stream over the latency (drafts edited as they grow) instead of coming whole")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--verbose", action="store_true", help="print kills, restarts and each lost or doubled message")
    parser.add_argument("--keep", type=Path, help="run the replicas' homes (and their logs) under this directory")
    args = parser.parse_args()
    prefix = f"chorus-failover-{uuid.uuid4().hex[:8]}"
    with fresh_database("chorus_failover") as url, tempfile.TemporaryDirectory() as tmp:
        before = _db_counts(url)
        try:
            figures = asyncio.run(run_failover(
                args.keep or Path(tmp), store_url=url, redis_url=args.redis, prefix=prefix, chats=args.chats, kills=args.kills,
                kill_every=args.kill_every, lease=args.lease, max_down=args.max_down, latency=(args.latency_low, args.latency_high),
                streamed=args.stream,
            ))
        finally:
            client = redis.Redis.from_url(args.redis)
            for key in client.scan_iter(f"{prefix}:*"):
                client.delete(key)
        after = _db_counts(url)
    _print(figures, args, (after[0] - before[0], after[1] - before[1]))
    return 0 if figures.lost == figures.doubled_unexplained == figures.history_doubled == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
