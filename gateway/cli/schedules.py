"""`chorus schedules`: list, add and remove scheduled jobs (the store every replica reads; docs/contract.md §8.4).

Owns the command line only; the rules (a valid cron, time zone or time; only stored jobs are removed here,
`schedules:` jobs are the config's) are `gateway.schedules.book`'s. A running gateway sees an added or
removed job within a second. Exit codes: 0 done, 1 the store is unreachable, 2 bad input.

    chorus schedules list   [--chat PLATFORM:CHAT] [--json]
    chorus schedules add    --chat PLATFORM:CHAT (--cron EXPR [--timezone TZ] | --at ISO) --prompt TEXT
                            [--thread ID] [--deliver-only] [--name NAME]
    chorus schedules remove ID [--chat PLATFORM:CHAT]
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Final

from agent.store import StoreError
from gateway.config import ChorusConfig, limits_clock, load_config
from gateway.ops.logs import configure_logging
from gateway.schedules.book import JobRequest, ScheduleBook, ScheduleRefused
from gateway.schedules.store import ScheduleStore
from gateway.stores import opened_schedules

EXIT_OK: Final = 0
EXIT_RUNTIME: Final = 1
EXIT_BAD_INPUT: Final = 2


def register(subparsers: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    common.add_argument("--chat", default=None, metavar="PLATFORM:CHAT", help="a chat, e.g. telegram:-100123")
    parser = subparsers.add_parser("schedules", help="list, add and remove scheduled jobs",
                                   description="Scheduled jobs: the config's (schedules:) and those added at run time.")
    actions = parser.add_subparsers(dest="schedules_action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", parents=[common], help="every job (or --chat's) with next and last runs")
    listing.add_argument("--json", action="store_true", help="a JSON array")
    add = actions.add_parser("add", parents=[common], help="add a job (--chat, --cron or --at, --prompt)")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", help='five cron fields, e.g. "0 9 * * 1-5"')
    when.add_argument("--at", help="one ISO time, e.g. 2026-12-24T09:00")
    add.add_argument("--timezone", default="UTC", help="IANA time zone of --cron/--at (default UTC)")
    add.add_argument("--prompt", required=True, help="what runs (or, with --deliver-only, what is sent)")
    add.add_argument("--thread", default=None, help="a thread or topic id in the chat")
    add.add_argument("--deliver-only", action="store_true", help="send the prompt as it is, no model call")
    add.add_argument("--name", default=None, help="a name shown in listings (default: the id)")
    remove = actions.add_parser("remove", parents=[common], help="remove the job ID")
    remove.add_argument("id", metavar="ID")
    parser.set_defaults(handler=handle)


def _chat(value: str | None) -> str | None:
    if value is None:
        return None
    platform, _, chat = value.partition(":")
    if not platform or not chat:
        raise ScheduleRefused(f"--chat {value!r}: write PLATFORM:CHAT, e.g. telegram:-100123")
    return value


def _act(config: ChorusConfig, store: ScheduleStore, args: argparse.Namespace) -> int:
    book = ScheduleBook(store, config=lambda: config, clock=limits_clock())
    chat = _chat(args.chat)
    if args.schedules_action == "list":
        listed = book.listing(chat)
        if args.json:
            print(json.dumps([item.to_json() for item in listed]))
        else:
            print("\n".join(item.line() + ("" if chat else f" · {item.job.chat or 'home channel'}") for item in listed)
                  or "no scheduled jobs")
        return EXIT_OK
    if args.schedules_action == "add":
        if chat is None:
            raise ScheduleRefused("add needs --chat PLATFORM:CHAT (where the job runs)")
        job = book.add(JobRequest(chat=chat, cron=args.cron, at=args.at, timezone=args.timezone, prompt=args.prompt,
                                  origin="cli", thread=args.thread, deliver_only=args.deliver_only, name=args.name))
        print(f"added job {job.id}: {job.when.describe()} in {chat}")
        return EXIT_OK
    job = book.remove(args.id, chat=chat)
    print(f"removed job {job.id}")
    return EXIT_OK


def handle(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    configure_logging(level="error", fmt=config.logging.format)
    try:
        with opened_schedules(config) as store:
            return _act(config, store, args)
    except ScheduleRefused as exc:
        print(f"chorus schedules: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except StoreError as exc:
        print(f"chorus schedules: {exc}; check store.url", file=sys.stderr)
        return EXIT_RUNTIME
