"""`chorus memory`: inspect and edit one chat's notes through the same checks as the `memory` tool (docs/contract.md §5.1).

Owns the command line only. Every write goes through `agent.memory.notes`
(scanner, limits, approval gate, lock, drift check), exactly as the agent's
tool does. Exit codes: 0 done (or staged), 1 refused (the reason is printed),
2 bad input.

    chorus memory show     --chat CHAT [--target memory|user] [--json]
    chorus memory add      --chat CHAT [--target memory|user] TEXT...
    chorus memory replace  --chat CHAT [--target memory|user] OLD NEW
    chorus memory remove   --chat CHAT [--target memory|user] OLD
    chorus memory reset    --chat CHAT [--target memory|user]
    chorus memory pending  --chat CHAT [--json]
    chorus memory approve  --chat CHAT ID
    chorus memory reject   --chat CHAT ID
    chorus memory scan     FILE [--report json]      (gateway/cli/memory_scan.py)
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Final

from agent.memory import ChatIdError, ChatNotes, NotesSnapshot, NotesStore, Target, WriteResult
from agent.memory.notes import FILENAMES, TARGETS
from agent.store import StoreError
from gateway.cli._chat import CHAT_HELP, scoped_chat
from gateway.cli.memory_scan import register_scan
from gateway.config import load_config
from gateway.ops.logs import configure_logging
from gateway.stores import opened_notes

EXIT_OK: Final = 0
EXIT_REFUSED: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_RUNTIME: Final = 1  # the shared store could not be reached
_BAD_INPUT_REFUSALS: Final = frozenset({"invalid", "not_found"})
_WRITE_ACTIONS: Final = ("add", "replace", "remove")


def register(subparsers: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--chat", required=True, metavar="PLATFORM:CHAT", help=CHAT_HELP)
    common.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    targeted = argparse.ArgumentParser(add_help=False)
    targeted.add_argument("--target", choices=TARGETS, default=None,
                          help="memory (the agent's notes) or user (the user profile); default: memory, or both for show/reset")
    parser = subparsers.add_parser("memory", help="inspect and edit a chat's notes (MEMORY.md / USER.md)",
                                   description="Inspect and edit one chat's notes through the same checks as the memory tool.")
    actions = parser.add_subparsers(dest="memory_action", required=True, metavar="ACTION")
    show = actions.add_parser("show", parents=[common, targeted], help="print the notes, flagged entries marked")
    show.add_argument("--json", action="store_true", help="one JSON object")
    add = actions.add_parser("add", parents=[common, targeted], help="add an entry")
    add.add_argument("text", nargs="+", metavar="TEXT", help="the entry (words are joined with spaces)")
    replace = actions.add_parser("replace", parents=[common, targeted], help="replace the entry containing OLD")
    replace.add_argument("old", metavar="OLD", help="a unique substring of the entry")
    replace.add_argument("new", metavar="NEW", help="the new entry text")
    remove = actions.add_parser("remove", parents=[common, targeted], help="remove the entry containing OLD")
    remove.add_argument("old", metavar="OLD", help="a unique substring of the entry")
    actions.add_parser("reset", parents=[common, targeted], help="forget the notes (one target, or everything)")
    pending = actions.add_parser("pending", parents=[common], help="list writes staged for approval")
    pending.add_argument("--json", action="store_true", help="one JSON object per staged write")
    for name, verb in (("approve", "apply"), ("reject", "discard")):
        decide = actions.add_parser(name, parents=[common], help=f"{verb} a staged write")
        decide.add_argument("id", metavar="ID", help="the id shown by `chorus memory pending`")
    parser.set_defaults(handler=handle)
    register_scan(actions)


def _printable(text: str) -> str:
    """Escape control and invisible format characters so a poisoned entry cannot mislead the terminal."""
    return "".join(char if char == "\n" or (char.isprintable() and char != "\u00ad") else f"\\u{ord(char):04x}"
                   for char in text)


def _show(notes: ChatNotes, snapshot: NotesSnapshot, targets: tuple[Target, ...], as_json: bool) -> None:
    if as_json:
        body = {target: {"usage": {"chars": snapshot.usage(target).chars, "limit": snapshot.usage(target).limit},
                         "entries": [{"text": entry.text, "flagged": entry.flagged,
                                      "verdict": None if entry.verdict.ok else entry.verdict.describe()}
                                     for entry in snapshot.entries(target)]}
                for target in targets}
        print(json.dumps({"chat": notes.chat_id, "directory": notes.files.label, **body,
                          "drift": [report.describe() for report in snapshot.drift],
                          "pending": len(notes.pending())}, ensure_ascii=False))
        return
    print(f"chat {_printable(notes.chat_id)!s} — {notes.files.location}")
    for report in snapshot.drift:
        print(f"note: {report.describe()}")
    for target in targets:
        print(f"{FILENAMES[target]} — {snapshot.usage(target).describe()}")
        for number, entry in enumerate(snapshot.entries(target), 1):
            mark = f" [FLAGGED {entry.verdict.describe()}; withheld from the prompt — remove it]" if entry.flagged else ""
            print(f"  {number}.{mark} {_printable(entry.text)}".replace("\n", "\n     "))
    waiting = notes.pending()
    if waiting:
        print(f"{len(waiting)} staged write(s) await approval: chorus memory pending --chat …")


def _report(result: WriteResult) -> int:
    for report in result.drift:
        print(f"note: {report.describe()}", file=sys.stderr)
    if not result.ok:
        print(f"chorus memory: refused ({result.refusal}): {result.message}", file=sys.stderr)
        return EXIT_BAD_INPUT if result.refusal in _BAD_INPUT_REFUSALS else EXIT_REFUSED
    print(result.message)
    if result.nudge:
        print(result.nudge)
    return EXIT_OK


def _write(notes: ChatNotes, args: argparse.Namespace) -> WriteResult:
    target: Target = args.target or "memory"
    action = args.memory_action
    if action == "add":
        return notes.add(target, " ".join(args.text))
    if action == "replace":
        return notes.replace(target, args.old, args.new)
    return notes.remove(target, args.old)


def handle(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    # stdout carries the answer; log lines go to stderr, and only errors unless debugging (the
    # refusal itself is printed as the command's message).
    configure_logging(level="debug" if config.logging.level == "debug" else "error", fmt=config.logging.format)
    try:
        with opened_notes(config) as store:
            return _run(store, args)
    except StoreError as exc:
        print(f"chorus memory: {exc}", file=sys.stderr)
        return EXIT_RUNTIME


def _run(store: NotesStore, args: argparse.Namespace) -> int:
    try:
        notes = store.chat(scoped_chat(args.chat))
    except (ChatIdError, ValueError) as exc:
        print(f"chorus memory: --chat: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    action = args.memory_action
    if action in _WRITE_ACTIONS:
        return _report(_write(notes, args))
    if action == "show":
        targets: tuple[Target, ...] = (args.target,) if args.target else TARGETS
        _show(notes, notes.snapshot(), targets, args.json)
        return EXIT_OK
    if action == "reset":
        removed = notes.reset(args.target)
        print(f"Forgot {args.target or 'all notes'} of chat {_printable(args.chat)}: {removed} file(s) deleted.")
        return EXIT_OK
    if action == "pending":
        for item in notes.pending():
            print(json.dumps({"id": item.id, "action": item.action, "target": item.target, "content": item.content,
                              "old_text": item.old_text, "created_at": item.created_at, "origin": item.origin,
                              **({"skill": item.skill, "file": item.file} if item.target == "skill" else {})},
                             ensure_ascii=False)
                  if args.json else _printable(item.describe()))
        return EXIT_OK
    if action == "approve":
        return _report(notes.approve(args.id))
    return _report(notes.reject(args.id))
