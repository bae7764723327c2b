"""`chorus sessions list|show|search|import|export|compact|migrate`: inspect, search and move the session store.

Owns the operator's view of `state.db`: a session table, one session's
transcript (archived messages marked), chat-scoped search, and JSON Lines
import/export in the format of `agent.session_files` (one session object per
line; export then import round-trips). Exit codes: 0 ok, 1 runtime failure,
2 bad input.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from agent.messages import Message, messages_from_wire, messages_to_wire, tool_schema_from_wire
from agent.session_files import SessionRecord, read_sessions, write_session_lines, write_sessions
from agent.store import STATE_DB_NAME, ImportedSession, SessionStore, StoredMessage, StoredSession, StoreError, store_for
from gateway.cli._chat import CHAT_HELP, scoped_chat
from gateway.config import load_config
from gateway.ops.logs import configure_logging

EXIT_OK, EXIT_RUNTIME, EXIT_BAD_INPUT = 0, 1, 2
IMPORT_BATCH_SESSIONS = 20
PROGRESS_MIN_MESSAGES = 5_000
SHOW_TEXT_CHARS = 500
PAGE = 500
# Fields `export` adds to each session object; `import` reads them back.
STORE_FIELDS = ("chat_id", "key", "platform", "created_at", "ended_at", "archived_messages")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("sessions", help="inspect, search, import and export the session store")
    parser.add_argument("--config", default=None, help="config file (default: $CHORUS_CONFIG, ./config.yaml, built-in)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(name, help=help_text)
        sub.add_argument("--config", default=argparse.SUPPRESS, help="config file")
        return sub

    listing = action("list", "sessions newest first: id, key, chat, messages, created")
    listing.add_argument("--chat", default=None, metavar="PLATFORM:CHAT", help="only this chat: " + CHAT_HELP)
    listing.add_argument("--limit", type=int, default=50, help="at most this many sessions (default 50)")
    listing.set_defaults(handler=handle_list)

    show = action("show", "one session's messages; archived (compressed-away) ones are marked")
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--full", action="store_true", help=f"print whole messages (default: first {SHOW_TEXT_CHARS} chars)")
    show.set_defaults(handler=handle_show)

    search = action("search", "full-text search within one chat")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--chat", required=True, metavar="PLATFORM:CHAT", help="the chat to search in: " + CHAT_HELP)
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--context", type=int, default=1, help="messages shown around each hit")
    search.set_defaults(handler=handle_search)

    imp = action("import", "import sessions from a JSON Lines (or JSON array) file")
    imp.add_argument("file", metavar="FILE", type=Path)
    imp.add_argument("--chat", default=None, metavar="PLATFORM:CHAT",
                     help="the chat of every session (default: from the file, else the session id): " + CHAT_HELP)
    imp.set_defaults(handler=handle_import)

    exp = action("export", "export sessions as JSON Lines (the format import reads)")
    exp.add_argument("--chat", default=None, help="only this chat id")
    exp.add_argument("--output", "-o", required=True, type=Path, help="file to write (- for standard output)")
    exp.set_defaults(handler=handle_export)

    compact = action("compact", "merge the search index into one segment (faster searches after many writes)")
    compact.set_defaults(handler=handle_compact)

    sub = actions.add_parser("migrate", help="copy the SQLite store under home into an empty PostgreSQL store")
    sub.add_argument("--config", default=argparse.SUPPRESS, help="config file")
    sub.add_argument("--to", required=True, metavar="URL", help="postgresql://user@host:port/db")
    sub.set_defaults(handler=handle_migrate)


def handle_migrate(args: argparse.Namespace) -> int:
    from gateway.cli.migrate import handle_migrate as migrate  # here: other commands never load the PostgreSQL driver

    return migrate(args)


def _open_store(args: argparse.Namespace, *, create: bool = False) -> SessionStore | None:
    config = load_config(args.config)
    configure_logging(level=config.logging.level, fmt=config.logging.format)  # stderr: stdout is the output
    path = config.home_dir / STATE_DB_NAME
    if config.store.url is None and not create and not path.exists():
        print(f"chorus sessions: no session store at {path}; run the gateway or `chorus sessions import FILE` first",
              file=sys.stderr)
        return None
    try:
        return store_for(config.store.url, config.home_dir)  # callers open it with `with`
    except StoreError as exc:
        print(f"chorus sessions: {exc}", file=sys.stderr)
        return None


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds)) if seconds is not None else "-"


def _table(rows: list[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n")


def _unscoped(args: argparse.Namespace, action: str) -> bool:
    """Whether `--chat` was given unscoped (the reason is printed): it would match nothing the gateway wrote."""
    if args.chat is None:
        return False
    try:
        scoped_chat(args.chat)
    except ValueError as exc:
        print(f"chorus sessions {action}: --chat: {exc}", file=sys.stderr)
        return True
    return False


def handle_list(args: argparse.Namespace) -> int:
    if _unscoped(args, "list"):
        return EXIT_BAD_INPUT
    store = _open_store(args)
    if store is None:
        return EXIT_RUNTIME
    with store:
        summaries = store.list_sessions(chat_id=args.chat, limit=max(1, args.limit))
    if not summaries:
        print("no sessions" + (f" in chat {args.chat!r}" if args.chat else ""), file=sys.stderr)
        return EXIT_OK
    rows: list[tuple[str, ...]] = [("ID", "KEY", "CHAT", "MESSAGES", "CREATED (UTC)", "STATE", "PARENT")]
    for item in summaries:
        s = item.session
        count = f"{item.messages}" + (f" (+{item.archived} archived)" if item.archived else "")
        rows.append((s.id, s.key, s.chat_id, count, _when(s.created_at), "open" if s.active else "closed", s.parent_id or "-"))
    _table(rows, sys.stdout)
    return EXIT_OK


def _message_line(stored: StoredMessage, full: bool) -> str:
    message = stored.message
    text = message.text
    if not full and len(text) > SHOW_TEXT_CHARS:
        text = text[:SHOW_TEXT_CHARS] + f"… [{len(message.text) - SHOW_TEXT_CHARS:,} more chars]"
    mark = f" [archived g{stored.archived}]" if stored.archived else ""
    name = f" ({message.name})" if message.name else ""
    parts = [f"#{stored.seq} {message.role}{name}{mark}: {text}"]
    parts += [f"    -> {call.name}({call.arguments})" for call in message.tool_calls]
    if message.images:
        parts.append(f"    [{len(message.images)} image(s)]")
    return "\n".join(parts)


def handle_show(args: argparse.Namespace) -> int:
    store = _open_store(args)
    if store is None:
        return EXIT_RUNTIME
    with store:
        session = store.get_session(args.session_id)
        if session is None:
            print(f"chorus sessions show: no session {args.session_id!r}; see `chorus sessions list`", file=sys.stderr)
            return EXIT_BAD_INPUT
        messages = store.session_messages(session.id)
    print(f"session {session.id}  key {session.key}  chat {session.chat_id}  platform {session.platform}")
    print(f"created {_when(session.created_at)}  ended {_when(session.ended_at)}  parent {session.parent_id or '-'}"
          f"  {sum(1 for m in messages if not m.archived)} active, {sum(1 for m in messages if m.archived)} archived")
    for stored in messages:
        print(_message_line(stored, args.full))
    return EXIT_OK


def handle_search(args: argparse.Namespace) -> int:
    if _unscoped(args, "search"):
        return EXIT_BAD_INPUT
    store = _open_store(args)
    if store is None:
        return EXIT_RUNTIME
    with store:
        hits = store.search(args.chat, args.query, limit=args.limit, context=args.context)
    if not hits:
        print(f"no matches in chat {args.chat!r}", file=sys.stderr)
        return EXIT_OK
    for hit in hits:
        mark = " [archived]" if hit.archived else ""
        print(f"{hit.session_id} #{hit.seq} {hit.role}{mark}  score {hit.score:.2f}  {_when(hit.created_at)}")
        for line in hit.before:
            print(f"    #{line.seq} {line.role}: {line.text}")
        print(f"  > {hit.snippet}")
        for line in hit.after:
            print(f"    #{line.seq} {line.role}: {line.text}")
    return EXIT_OK


def _to_import(record: SessionRecord, chat_override: str | None) -> ImportedSession:
    extra = dict(record.extra)
    stored = {name: extra.pop(name) for name in STORE_FIELDS if name in extra}
    chat_id = chat_override or str(stored.get("chat_id") or record.id)
    archived_raw = stored.get("archived_messages") or []
    archived: list[Message] = messages_from_wire(archived_raw) if isinstance(archived_raw, list) else []
    meta = dict(extra)
    if record.tools:
        meta["tools"] = [tool.to_wire() for tool in record.tools]
    created, ended = stored.get("created_at"), stored.get("ended_at")
    return ImportedSession(
        id=record.id,
        key=str(stored.get("key") or f"import:{chat_id}"),
        platform=str(stored.get("platform") or "import"),
        chat_id=chat_id,
        messages=record.messages,
        archived_messages=archived,
        meta=meta,
        created_at=float(created) if isinstance(created, int | float) else None,
        ended_at=float(ended) if isinstance(ended, int | float) else None,
    )


class _Progress:
    """A one-line progress bar on stderr, shown only for long imports to a terminal."""

    def __init__(self, total_sessions: int, total_messages: int) -> None:
        self._total = total_sessions
        self._shown = sys.stderr.isatty() and total_messages >= PROGRESS_MIN_MESSAGES

    def update(self, done: int, messages: int) -> None:
        if self._shown:
            filled = int(30 * done / max(1, self._total))
            sys.stderr.write(f"\rimporting [{'#' * filled}{'.' * (30 - filled)}] {done}/{self._total} sessions, "
                             f"{messages:,} messages")
            sys.stderr.flush()

    def finish(self) -> None:
        if self._shown:
            sys.stderr.write("\n")


def handle_import(args: argparse.Namespace) -> int:
    if _unscoped(args, "import"):
        return EXIT_BAD_INPUT
    if not args.file.is_file():
        print(f"chorus sessions import: {args.file}: no such file", file=sys.stderr)
        return EXIT_BAD_INPUT
    # Read and validate the whole file first: a bad line imports nothing rather than half a file.
    items: list[ImportedSession] = []
    seen: set[str] = set()
    repeated = 0
    for record in read_sessions(args.file):
        if record.id in seen:  # a repeated id in one file: the first one wins
            repeated += 1
            continue
        seen.add(record.id)
        items.append(_to_import(record, args.chat))
    store = _open_store(args, create=True)
    if store is None:
        return EXIT_BAD_INPUT
    imported = skipped = messages = 0
    progress = _Progress(len(items), sum(len(item.messages) for item in items))
    with store:
        for start in range(0, len(items), IMPORT_BATCH_SESSIONS):
            batch = [item for item in items[start : start + IMPORT_BATCH_SESSIONS] if store.get_session(item.id) is None]
            skipped += min(IMPORT_BATCH_SESSIONS, len(items) - start) - len(batch)
            store.import_sessions(batch)
            imported += len(batch)
            messages += sum(len(item.messages) + len(item.archived_messages) for item in batch)
            progress.update(start + min(IMPORT_BATCH_SESSIONS, len(items) - start), messages)
        progress.finish()
        if imported:
            store.compact_index()
    note = f"; skipped {skipped} already in the store" if skipped else ""
    note += f"; skipped {repeated} repeated ids in the file" if repeated else ""
    print(f"imported {imported} sessions ({messages:,} messages) from {args.file}{note}")
    return EXIT_OK


def _export_records(store: SessionStore, chat_id: str | None) -> Iterator[SessionRecord]:
    sessions: list[StoredSession] = []
    offset = 0
    while page := store.list_sessions(chat_id=chat_id, limit=PAGE, offset=offset):
        sessions.extend(item.session for item in page)
        offset += len(page)
    for session in reversed(sessions):  # oldest first, so parents come before children
        stored = store.session_messages(session.id)
        meta = store.session_meta(session.id)
        tools = tuple(tool_schema_from_wire(raw) for raw in meta.pop("tools", []))
        extra: dict[str, Any] = {
            **meta, "chat_id": session.chat_id, "key": session.key, "platform": session.platform,
            "created_at": session.created_at, "ended_at": session.ended_at,
        }
        if session.parent_id:
            extra["parent_id"] = session.parent_id
        archived = [s.message for s in stored if s.archived]
        if archived:
            extra["archived_messages"] = messages_to_wire(archived)
        active = tuple(s.message for s in stored if not s.archived)
        yield SessionRecord(id=session.id, messages=active, tools=tools, extra=extra)


def handle_export(args: argparse.Namespace) -> int:
    store = _open_store(args)
    if store is None:
        return EXIT_RUNTIME
    to_stdout = str(args.output) == "-"  # `-o -`: JSON Lines on stdout for a pipe, the count on stderr
    if not to_stdout and args.output.parent and not args.output.parent.exists():
        print(f"chorus sessions export: directory {args.output.parent} does not exist", file=sys.stderr)
        return EXIT_BAD_INPUT
    with store:
        records = _export_records(store, args.chat)
        count = write_session_lines(sys.stdout, records) if to_stdout else write_sessions(args.output, records, "jsonl")
    print(f"exported {count} sessions to {'stdout' if to_stdout else args.output}", file=sys.stderr if to_stdout else sys.stdout)
    return EXIT_OK


def handle_compact(args: argparse.Namespace) -> int:
    store = _open_store(args)
    if store is None:
        return EXIT_RUNTIME
    started = time.monotonic()
    with store:
        steps = store.compact_index()
    print(f"search index compacted in {steps} steps, {time.monotonic() - started:.1f} s")
    return EXIT_OK
