"""`chorus sessions migrate --to URL`: copy the SQLite store, notes and skills under home into PostgreSQL.

Notes (MEMORY.md, USER.md with their drift state, backups and staged
writes) are copied per chat, skills with their supporting files, and each chat's
settings and usage, the pairing approvals and codes and the learned model windows
(`gateway.chats.copy`). Every session keeps its id, key, parent, open/closed state and every message
(archived generations, sequence numbers, token counts, times), so a gateway
pointed at the new store carries on each chat where it was. Sessions already
in the target are skipped, so a re-run after an interruption copies the rest;
a target holding sessions the source does not have is refused (it is someone
else's store). Afterwards the counts of both stores are compared and a sample
of messages is searched for in both. Exit codes: 0 ok, 1 failure, 2 bad input.
"""
from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from agent.memory import CHAT_ID_FILENAME, LOCK_FILENAME, MEMORIES_DIRNAME, owner_of
from agent.memory.postgres import PostgresChatFiles
from agent.skills import SKILL_FILE, DirectorySkills
from agent.skills.postgres import PostgresSkills
from agent.store import STATE_DB_NAME, SqliteSessionStore, StoredSession, StoreError, is_postgres_url
from agent.store.postgres import PostgresSessionStore, redact_url
from gateway.chats.copy import copy_chat_files
from gateway.config import load_config
from gateway.ops.logs import configure_logging

EXIT_OK, EXIT_RUNTIME, EXIT_BAD_INPUT = 0, 1, 2
PAGE = 500
SEARCH_SAMPLE = 20
_SAMPLE_SEED = 17


@dataclass(frozen=True, slots=True)
class MigrationReport:
    copied: int
    skipped: int
    messages: int
    searched: int


def _all_sessions(store: SqliteSessionStore | PostgresSessionStore) -> list[StoredSession]:
    sessions: list[StoredSession] = []
    while page := store.list_sessions(limit=PAGE, offset=len(sessions)):
        sessions.extend(item.session for item in page)
    return sessions


def _parents_first(sessions: list[StoredSession]) -> list[StoredSession]:
    """Sessions ordered so that every parent is copied before its children (the foreign key needs it)."""
    by_id = {s.id: s for s in sessions}
    ordered: list[StoredSession] = []
    placed: set[str] = set()
    for session in sorted(sessions, key=lambda s: s.created_at):
        chain = []
        current: StoredSession | None = session
        while current is not None and current.id not in placed:
            chain.append(current)
            current = by_id.get(current.parent_id) if current.parent_id else None
        for item in reversed(chain):
            placed.add(item.id)
            ordered.append(item)
    return ordered


def migrate(source: SqliteSessionStore, target: PostgresSessionStore) -> MigrationReport:
    """Copy every session of `source` missing from `target`, then verify counts and a search sample.

    Raises:
        StoreError: the target holds sessions the source lacks, or the verification found a difference.
    """
    sessions = _all_sessions(source)
    known = {s.id for s in sessions}
    foreign = [s.id for s in _all_sessions(target) if s.id not in known]
    if foreign:
        raise StoreError(
            f"{target.location} already holds {len(foreign)} sessions that are not in {source.location} "
            f"(first: {foreign[0]!r}); migrate into an empty database"
        )
    copied = skipped = messages = 0
    for session in _parents_first(sessions):
        stored = source.session_messages(session.id)
        if target.copy_session(session, source.session_meta(session.id), stored):
            copied += 1
            messages += len(stored)
        else:
            skipped += 1
    target.compact_index()
    _verify_counts(source, target)
    return MigrationReport(copied, skipped, messages, _verify_search(source, target, sessions))


def migrate_notes(home: Path, target: PostgresSessionStore) -> tuple[int, int]:
    """Copy every chat's notes texts (MEMORY.md, USER.md, drift state, backups, staged writes) not yet in `target`.

    Returns:
        (chats seen, texts copied). A text already in the target is kept as it is (a re-run copies nothing).

    Raises:
        StoreError: a notes directory records no chat id, or a copied text differs from its file.
    """
    root = home / MEMORIES_DIRNAME
    chats = copied = 0
    for directory in sorted(root.iterdir()) if root.is_dir() else []:
        if not directory.is_dir():
            continue
        chat_id = owner_of(directory)
        if chat_id is None:
            raise StoreError(f"notes directory {directory} records no chat id ({CHAT_ID_FILENAME}); move it away first")
        files = PostgresChatFiles(target, chat_id)
        local = {p.name: p.read_bytes().decode("utf-8", "replace") for p in sorted(directory.iterdir())
                 if p.is_file() and p.name not in (LOCK_FILENAME, CHAT_ID_FILENAME) and not p.name.endswith(".tmp")}
        with files.locked():
            for name, text in local.items():
                if files.read(name) is None:
                    files.write(name, text)
                    copied += 1
            wrong = [name for name, text in local.items() if files.read(name) != text.replace("\x00", "\ufffd")]
        if wrong:
            raise StoreError(f"notes of {directory.name} differ in PostgreSQL ({', '.join(wrong)}); was a gateway writing?")
        chats += 1
    return chats, copied


def migrate_skills(home: Path, target: PostgresSessionStore) -> tuple[int, int]:
    """Copy every skill's files (the trash stays behind) not yet in `target`; (skills seen, files copied)."""
    source, shared = DirectorySkills(home / "skills"), PostgresSkills(target)
    names = source.skill_names()
    copied = 0
    with shared.locked():
        for name in names:
            for relative in (SKILL_FILE, *source.files(name)):
                text = source.read(name, relative)
                if text is not None and shared.read(name, relative) is None:
                    shared.write(name, relative, text)
                    copied += 1
                if text is not None and shared.read(name, relative) != text.replace("\x00", "\ufffd"):
                    raise StoreError(f"skill {name!r} file {relative} differs in PostgreSQL; was a gateway writing?")
    return len(names), copied


def _verify_counts(source: SqliteSessionStore, target: PostgresSessionStore) -> None:
    before, after = source.stats(), target.stats()
    pairs = {
        "sessions": (before.sessions, after.sessions),
        "open sessions": (before.active_sessions, after.active_sessions),
        "messages": (before.messages, after.messages),
        "archived messages": (before.archived_messages, after.archived_messages),
    }
    wrong = [f"{name} {a} in SQLite, {b} in PostgreSQL" for name, (a, b) in pairs.items() if a != b]
    if wrong:
        raise StoreError("the copy differs: " + "; ".join(wrong) + " (was a gateway writing to either store?)")


def _verify_search(source: SqliteSessionStore, target: PostgresSessionStore, sessions: list[StoredSession]) -> int:
    """Search both stores for words of sampled messages; the copy must find each sampled message."""
    rng = random.Random(_SAMPLE_SEED)
    searched = 0
    for session in rng.sample(sessions, min(SEARCH_SAMPLE, len(sessions))):
        stored = [m for m in source.session_messages(session.id) if len(m.message.text.split()) >= 2]
        if not stored:
            continue
        sample = rng.choice(stored)
        query = " ".join(sample.message.text.split()[:3])
        found = {(h.session_id, h.seq) for h in target.search(session.chat_id, query, limit=20)}
        if (session.id, sample.seq) not in found and source.search(session.chat_id, query, limit=20):
            raise StoreError(f"search for {query!r} in chat {session.chat_id!r} misses message #{sample.seq} "
                             f"of session {session.id} in PostgreSQL")
        searched += 1
    return searched


def handle_migrate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    configure_logging(level=config.logging.level, fmt=config.logging.format)
    if not is_postgres_url(args.to):
        print("chorus sessions migrate: --to must be a postgresql://user@host:port/db URL", file=sys.stderr)
        return EXIT_BAD_INPUT
    path: Path = config.home_dir / STATE_DB_NAME
    if not path.exists():
        print(f"chorus sessions migrate: no SQLite session store at {path} to copy", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with SqliteSessionStore(path) as source, PostgresSessionStore(args.to) as target:
            report = migrate(source, target)
            note_chats, note_texts = migrate_notes(config.home_dir, target)
            skill_count, skill_files = migrate_skills(config.home_dir, target)
            chat_files = copy_chat_files(config.home_dir, target)
    except StoreError as exc:
        print(f"chorus sessions migrate: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    print(f"copied {report.copied} sessions ({report.messages:,} messages) from {path} to {redact_url(args.to)}"
          + (f"; {report.skipped} were already there" if report.skipped else "")
          + f"; counts match; {report.searched} sampled searches found their message"
          + f"; notes of {note_chats} chats ({note_texts} texts copied); {skill_count} skills ({skill_files} files copied)"
          + f"; settings of {chat_files.chats[0]} chats ({chat_files.chats[1]} copied), "
          f"{chat_files.approved[0]} paired senders ({chat_files.approved[1]} copied), "
          f"{chat_files.codes[0]} pairing codes ({chat_files.codes[1]} copied), "
          f"{chat_files.windows[0]} learned model windows ({chat_files.windows[1]} copied)")
    return EXIT_OK
