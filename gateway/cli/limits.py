"""`chorus limits`: today's spend and the limits on it; reset a chat's or a user's counters.

Owns the command line only; the counters live in `gateway.limits` (Redis when
`redis.url` is set, shared by every replica; else `<home>/limits.json`, which a
running gateway reads at start only: reset through `POST /api/limits/reset`
then). Exit codes: 0 done, 1 the counters are unreachable, 2 bad input.

    chorus limits show  [--chat PLATFORM:CHAT] [--user PLATFORM:USER] [--json]
    chorus limits reset (--chat PLATFORM:CHAT | --user PLATFORM:USER)...
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any, Final

from gateway.config import ChorusConfig, limits_clock, load_config
from gateway.coord.base import CoordUnavailable
from gateway.limits import SpendLimiter, build_limiter, chat_field
from gateway.limits.report import day_report, render, subject_report
from gateway.ops.logs import configure_logging

EXIT_OK: Final = 0
EXIT_RUNTIME: Final = 1
EXIT_BAD_INPUT: Final = 2


def register(subparsers: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    common.add_argument("--chat", action="append", default=[], metavar="PLATFORM:CHAT", help="a chat, e.g. telegram:-100123")
    common.add_argument("--user", action="append", default=[], metavar="PLATFORM:USER", help="a sender, e.g. telegram:42")
    parser = subparsers.add_parser("limits", help="today's spend and limits; reset a chat's or user's counters",
                                   description="Spend and rate limits across replicas (today, UTC).")
    actions = parser.add_subparsers(dest="limits_action", required=True, metavar="ACTION")
    show = actions.add_parser("show", parents=[common], help="spend today: the bot, per model, top chats and users")
    show.add_argument("--json", action="store_true", help="one JSON object")
    actions.add_parser("reset", parents=[common], help="forget today's spend and the windows of --chat/--user")
    parser.set_defaults(handler=handle)


def _fields(args: argparse.Namespace) -> list[str] | str:
    """The counter fields named on the command line, or the error text."""
    fields = []
    for option, values in (("--chat", args.chat), ("--user", args.user)):
        for value in values:
            platform, _, rest = str(value).partition(":")
            if not platform or not rest:
                return f"{option} {value!r}: write PLATFORM:{option[2:].upper()}, e.g. telegram:42"
            fields.append(chat_field(value) if option == "--chat" else f"user:{value}")
    return fields


async def _show(config: ChorusConfig, limiter: SpendLimiter, fields: list[str], as_json: bool) -> int:
    now = limits_clock()()
    spend = await limiter.day(now=now)
    windows = await limiter.in_window(fields, now=now)
    reports = [subject_report(config, spend, name, count) for name, count in zip(fields, windows)] or [
        day_report(config, spend)]
    if as_json:
        print(json.dumps(reports[0] if len(reports) == 1 else reports))
    else:
        for report in reports:
            print("\n".join(render(report)))
    return EXIT_OK


async def _run(config: ChorusConfig, args: argparse.Namespace, fields: list[str]) -> int:
    limiter = build_limiter(config)
    try:
        await limiter.start()
        if args.limits_action == "show":
            return await _show(config, limiter, fields, args.json)
        await limiter.reset(fields, now=limits_clock()())
        print(f"reset today's counters of {', '.join(fields)}")
        if not config.redis.url:
            print("note: a running gateway without redis.url keeps its own counters; "
                  "use POST /api/limits/reset on its admin port, or restart it")
        return EXIT_OK
    except CoordUnavailable as exc:
        print(f"chorus limits: {exc}; check redis.url", file=sys.stderr)
        return EXIT_RUNTIME
    finally:
        await limiter.stop()


def handle(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    configure_logging(level="error", fmt=config.logging.format)
    fields = _fields(args)
    if isinstance(fields, str):
        print(f"chorus limits: {fields}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.limits_action == "reset" and not fields:
        print("chorus limits reset: name what to reset with --chat PLATFORM:CHAT or --user PLATFORM:USER",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    return asyncio.run(_run(config, args, fields))
