"""`chorus pairing`: admit unknown DM senders by the one-time code the bot sent them (no restart needed).

Owns the command line only; the codes and approvals live in `gateway.chats.pairing`
(`<home>/pairing.db`, or the shared PostgreSQL store when `store.url` is set;
read by the running gateways on the sender's next message). Exit codes: 0 done,
1 no such code or user (or the store is unreachable), 2 bad input.

    chorus pairing list              [--platform P] [--json]
    chorus pairing approve CODE      --platform P
    chorus pairing revoke  USER_ID   --platform P
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Final

from agent.store import StoreError
from gateway.chats.pairing import PairingStore
from gateway.config import load_config
from gateway.ops.logs import configure_logging
from gateway.stores import opened_pairing

EXIT_OK: Final = 0
EXIT_NOT_FOUND: Final = 1
EXIT_RUNTIME: Final = 1
PLATFORMS: Final = ("telegram", "discord", "slack")


def register(subparsers: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    parser = subparsers.add_parser("pairing", help="approve or revoke DM senders who asked with a pairing code",
                                   description="Admit unknown DM senders by their one-time pairing code.")
    actions = parser.add_subparsers(dest="pairing_action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", parents=[common], help="pending codes and approved senders")
    listing.add_argument("--platform", choices=PLATFORMS, default=None)
    listing.add_argument("--json", action="store_true", help="one JSON object")
    approve = actions.add_parser("approve", parents=[common], help="admit the sender of CODE")
    approve.add_argument("code", metavar="CODE", help="the code the bot sent the sender")
    approve.add_argument("--platform", choices=PLATFORMS, required=True)
    revoke = actions.add_parser("revoke", parents=[common], help="stop admitting a paired sender")
    revoke.add_argument("user", metavar="USER_ID", help="the sender's platform user id")
    revoke.add_argument("--platform", choices=PLATFORMS, required=True)
    parser.set_defaults(handler=handle)


def _list(store: PairingStore, platform: str | None, as_json: bool) -> int:
    pending, approved = store.pending(platform), store.approved(platform)
    if as_json:
        print(json.dumps({
            "pending": [{"code": p.code, "platform": p.platform, "user_id": p.user_id, "user_name": p.user_name,
                         "expires_in_seconds": round(p.expires_at - time.time())} for p in pending],
            "approved": [{"platform": a.platform, "user_id": a.user_id, "user_name": a.user_name} for a in approved],
        }))
        return EXIT_OK
    print(f"pending codes: {len(pending)}")
    for code in pending:
        print(f"  {code.code}  {code.platform}  {code.user_id} ({code.user_name})")
    print(f"approved senders: {len(approved)}")
    for user in approved:
        print(f"  {user.platform}  {user.user_id} ({user.user_name})")
    return EXIT_OK


def handle(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    configure_logging(level="error", fmt=config.logging.format)
    try:
        with opened_pairing(config) as store:
            return _act(store, args)
    except StoreError as exc:
        print(f"chorus pairing: {exc}", file=sys.stderr)
        return EXIT_RUNTIME


def _act(store: PairingStore, args: argparse.Namespace) -> int:
    if args.pairing_action == "list":
        return _list(store, args.platform, args.json)
    if args.pairing_action == "approve":
        user = store.approve(args.platform, args.code)
        if user is None:
            print(f"chorus pairing: no live code {args.code!r} on {args.platform} (expired or mistyped); "
                  "`chorus pairing list` shows the pending ones")
            return EXIT_NOT_FOUND
        print(f"approved {user.user_id} ({user.user_name}) on {user.platform}")
        return EXIT_OK
    if store.revoke(args.platform, args.user):
        print(f"revoked {args.user} on {args.platform}")
        return EXIT_OK
    print(f"chorus pairing: {args.user} is not a paired sender on {args.platform}")
    return EXIT_NOT_FOUND
