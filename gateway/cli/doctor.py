"""`chorus doctor`: validate the config and check Redis, the model endpoints and each enabled platform.

Exit 0 when every check passed, 1 when any failed, 2 when the config itself is invalid.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gateway.config import load_config, resolve_config_path
from gateway.ops.logs import configure_logging


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("doctor", help="check config, Redis, model endpoint and platforms")
    parser.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per check")
    parser.set_defaults(handler=handle)


async def handle(args: argparse.Namespace) -> int:
    config = load_config(args.config)  # a ConfigError exits 2 with the key and the fix
    # The checks report every failure themselves; log lines (MCP servers starting) stay off stdout.
    configure_logging(level="error", fmt=config.logging.format)
    from gateway.doctor import run_checks  # here: the other commands never load every check's clients

    checks = await run_checks(config, path=resolve_config_path(args.config))
    for check in checks:
        if args.json:
            print(json.dumps({"check": check.name, "ok": check.ok, "detail": check.detail, "fix": check.fix,
                              **({"warning": True} if check.warning else {})}))
            continue
        mark = ("warn" if check.warning else "ok  ") if check.ok else "FAIL"
        line = f"{mark} {check.name}: {check.detail}"
        print(line if check.ok and not check.warning else f"{line}\n     fix: {check.fix}")
    failed = [check for check in checks if not check.ok]
    if not args.json:
        print(f"doctor: {len(checks) - len(failed)} checks ok, {len(failed)} failing", file=sys.stderr)
    return 1 if failed else 0
