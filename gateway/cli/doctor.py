"""`chorus doctor` (placeholder until its issue lands)."""
from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("doctor", help="doctor (not built yet)")
    parser.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    print("chorus doctor: not built yet", file=sys.stderr)
    return 1
