"""`chorus` command line: one module per subcommand, each with `register(subparsers)`.

Exit codes: 0 ok, 1 runtime failure, 2 bad input (the message says what and where).
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from chorus_errors import ChorusError, ConfigError, MessageFormatError

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_BAD_INPUT = 2

SUBCOMMANDS = ("run", "doctor", "compress", "memory", "sessions", "pairing", "limits",
               "schedules")  # modules of gateway.cli

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_RUNTIME", "EXIT_BAD_INPUT"]


def version() -> str:
    """The installed package version (`chorus --version`)."""
    from importlib import metadata

    try:
        return metadata.version("chorus")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed; run pip install -e .)"


class _Version(argparse.Action):
    """`--version`, read from the package metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        print(f"chorus {version()}")  # on stdout, as argparse's own version action does
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only` (a subcommand's name) just that subcommand's module is imported.

    A command imports its own dependencies at module level, so `chorus compress` need not pay for the daemon's.
    """
    parser = argparse.ArgumentParser(prog="chorus", description="Multi-channel chat gateway with context compression and memory")
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in (only,) if only in SUBCOMMANDS else SUBCOMMANDS:
        importlib.import_module(f"gateway.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
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
