"""`chorus` command line: one module per subcommand, each with `register(subparsers)`.

Exit codes: 0 ok, 1 runtime failure, 2 bad input (the message says what and where).
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from importlib import metadata

from chorus_errors import ChorusError, ConfigError, MessageFormatError
from gateway.cli import compress, doctor, memory, pairing, run, sessions

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_BAD_INPUT = 2

SUBCOMMANDS = (run, doctor, compress, memory, sessions, pairing)

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_RUNTIME", "EXIT_BAD_INPUT"]


def version() -> str:
    """The installed package version (`chorus --version`)."""
    try:
        return metadata.version("chorus")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed; run pip install -e .)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chorus", description="Multi-channel chat gateway with context compression and memory")
    parser.add_argument("--version", action="version", version=f"chorus {version()}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.handler(args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return int(result)
    except (ConfigError, MessageFormatError) as exc:
        print(f"chorus {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ChorusError as exc:
        print(f"chorus {args.command}: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    except KeyboardInterrupt:
        return EXIT_RUNTIME


if __name__ == "__main__":
    sys.exit(main())
