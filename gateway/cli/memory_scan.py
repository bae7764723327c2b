"""`chorus memory scan FILE [--report json]` (docs/contract.md §7.3): the memory scanner over a file of candidate notes.

Owns reading the file and printing one verdict per note, then the totals. The file is a JSON array of
strings, a MEMORY.md / USER.md (entries separated by a line holding only "§"), or one note per line.
It is how an operator checks a suspicious MEMORY.md and how a benchmark runs a corpus; it touches no
chat and needs no config. Exit 0 whatever the verdicts; 2 when the file cannot be read.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Final

from agent.memory import SEPARATOR, parse_entries
from agent.memory.scanner import ScanVerdict, scan

EXIT_OK: Final = 0
EXIT_BAD_INPUT: Final = 2
PREVIEW_CHARS: Final = 80


class NotesFileError(ValueError):
    """The file cannot be read as candidate notes."""


def read_notes(path: Path) -> list[str]:
    """The candidate notes of `path`: a JSON array of strings, §-separated entries, or one note per line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotesFileError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise NotesFileError(f"cannot read {path}: {type(exc).__name__}") from None
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise NotesFileError(f"{path} starts like a JSON array but is not valid JSON (line {exc.lineno})") from None
        if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
            raise NotesFileError(f"{path}: the JSON array must hold only strings")
        return data
    if SEPARATOR.strip() in text.splitlines():
        return parse_entries(text)
    return [line for line in text.splitlines() if line.strip()]


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    shown = flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in shown)


def _totals(verdicts: list[ScanVerdict]) -> dict[str, Any]:
    refused = [verdict for verdict in verdicts if not verdict.ok]
    by_category = Counter(str(verdict.category) for verdict in refused)
    return {"notes": len(verdicts), "accepted": len(verdicts) - len(refused), "refused": len(refused),
            "by_category": dict(sorted(by_category.items()))}


def handle_scan(args: argparse.Namespace) -> int:
    try:
        notes = read_notes(Path(args.file))
    except NotesFileError as exc:
        print(f"chorus memory scan: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    verdicts = [scan(note) for note in notes]
    totals = _totals(verdicts)
    if args.report == "json":
        rows = [{"index": index, "ok": verdict.ok, "category": verdict.category, "pattern": verdict.pattern,
                 "text": note} for index, (note, verdict) in enumerate(zip(notes, verdicts), 1)]
        print(json.dumps({"file": str(args.file), "verdicts": rows, "totals": totals}, ensure_ascii=False))
        return EXIT_OK
    for index, (note, verdict) in enumerate(zip(notes, verdicts), 1):
        mark = "ok     " if verdict.ok else f"REFUSED {verdict.category} ({verdict.pattern})"
        print(f"{index:4d}. {mark}  {_preview(note)}")
    categories = ", ".join(f"{name} {count}" for name, count in totals["by_category"].items())
    print(f"{totals['notes']} notes: {totals['accepted']} accepted, {totals['refused']} refused"
          + (f" ({categories})" if categories else ""))
    return EXIT_OK


def register_scan(actions: Any) -> None:
    scan_parser = actions.add_parser("scan", help="run the memory scanner over a file of candidate notes",
                                     description="One verdict per note (category and pattern), then the totals; "
                                                 "exit 0. FILE: a JSON array of strings, a MEMORY.md, or one note "
                                                 "per line.")
    scan_parser.add_argument("file", metavar="FILE", help="the candidate notes")
    scan_parser.add_argument("--report", choices=("text", "json"), default="text", help="output format")
    scan_parser.set_defaults(handler=handle_scan)
