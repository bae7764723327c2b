"""`SqliteSessionStore`: the SQLite `state.db` holding every session and message, with full-text search.

Owns connections, transactions and the write paths (append, in-place replace
with soft-archive, rotation to a child session, import). WAL mode lets readers
run beside one writer; every write is a `BEGIN IMMEDIATE` transaction retried
on SQLITE_BUSY, so several gateway processes can share one file. Methods are
synchronous and thread-safe (one connection behind a lock); async callers use
`asyncio.to_thread`. Knows nothing of platforms, prompts or compression.

New rows are indexed for full-text search in batches (`_index`): a search
always sees every committed message. FTS5 merges index segments lazily,
and searches slow down (about 3x at a million messages) until `compact_index()`
runs. Call it after bulk imports (`chorus sessions import` does) and from time
to time while idle (`chorus sessions compact`); it works in short steps, so
live writers wait one step at most.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import structlog

from agent.messages import Message
from agent.store import _vectors
from agent.store._append import (
    COUNT_CHAT,
    INSERT_MESSAGE,
    append_batch,
    append_entries,
    message_rows,
    optional_utf8,
)
from agent.store._connection import (
    begin_without_waiting,
    commit_without_checkpoint,
    configure,
    enter_no_wait,
    is_busy,
    leave_no_wait,
    rollback_quietly,
)
from agent.store._index import FTS_BATCH_ROWS, index_queued, queue_rows, rows_wait
from agent.store._schema import StoreError, apply_migrations
from agent.store._search import search_chat
from agent.store.records import (
    MESSAGE_COLUMNS,
    ImportedSession,
    SearchHit,
    SessionSummary,
    StoredMessage,
    StoredSession,
    StoreStats,
    message_from_row,
    session_from_row,
    valid_utf8,
)
from agent.store.vectors import FUSION_DEPTH, PendingText, QueryVector, RecalledMessage

log = structlog.get_logger(__name__)

BUSY_RETRIES = 8
BUSY_BACKOFF_SECONDS = 0.05
COMPACT_PAGES_PER_STEP = 2_000
# `append_many_now` runs on the caller's thread (the gateway's loop), so its commits never run SQLite's
# automatic checkpoint (an fsync, milliseconds); every this many of them one is declined, and the writer
# thread's commit of it checkpoints when the WAL is past SQLite's default of 1000 pages.
NOW_COMMITS_PER_CHECKPOINT = 100

_LAST_SEQ = "SELECT coalesce(max(seq), -1) FROM messages WHERE session_id = ?"


def _new_id() -> str:
    return uuid.uuid4().hex


class SqliteSessionStore:
    """Sessions and messages in one SQLite file (the default `SessionStore`).

    Args:
        path: the database file, normally `<home>/state.db`.
        clock: seconds since the epoch, injected for tests.
        new_id: session id factory, injected for tests.
    """

    def __init__(
        self, path: Path, *, clock: Callable[[], float] = time.time, new_id: Callable[[], str] = _new_id
    ) -> None:
        self.path = path
        self._clock = clock
        self._new_id = new_id
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._now_commits = 0  # commits by `append_many_now` since it last declined one for a checkpoint
        self._queued_rows = 0  # rows this process queued for the full-text index since it last indexed
        self._no_wait = False  # the connection is in the on-loop append's mode (`enter_no_wait`)

    @property
    def location(self) -> str:
        return str(self.path)

    # lifecycle -------------------------------------------------------------

    def open(self) -> None:
        """Create or open the file, switch it to WAL and run pending migrations."""
        with self._lock:
            if self._conn is not None:
                raise StoreError(f"session store {self.path} is already open; call close() first")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            except (OSError, sqlite3.Error) as exc:
                raise StoreError(f"cannot open the session store {self.path}: {exc}; check home and its permissions") from exc
            try:
                configure(conn)
                self._retry(lambda: conn.execute("PRAGMA journal_mode = WAL"))
                applied = self._retry(lambda: apply_migrations(conn))
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise StoreError(f"{self.path} is not a usable session store: {exc}") from exc
            except BaseException:
                conn.close()
                raise
            self._conn = conn
            if applied:
                log.info("store.migrated", path=str(self.path), versions=applied)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SqliteSessionStore:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ping(self) -> None:
        self._read("SELECT 1")

    def _require(self) -> sqlite3.Connection:
        """The connection, in its waiting mode (every use but the on-loop append comes through here, under the lock)."""
        if self._conn is None:
            raise StoreError(f"session store {self.path} is not open; call open() first")
        if self._no_wait:
            leave_no_wait(self._conn)
            self._no_wait = False
        return self._conn

    def _retry(self, action: Callable[[], Any]) -> Any:
        for attempt in range(BUSY_RETRIES):
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or attempt == BUSY_RETRIES - 1:
                    raise
                log.warning("store.busy_retry", path=str(self.path), attempt=attempt + 1)
                time.sleep(BUSY_BACKOFF_SECONDS * (attempt + 1))
        raise AssertionError("unreachable")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One `BEGIN IMMEDIATE` transaction; the write lock is taken up front, so no upgrade deadlock."""
        with self._lock:
            conn = self._require()
            self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
            try:
                yield conn
                self._index_if_due(conn)
                conn.execute("COMMIT")
            except BaseException:
                rollback_quietly(conn)
                raise

    def _index_if_due(self, conn: sqlite3.Connection) -> None:
        """Index the queue in the open transaction once this process has queued a batch."""
        if self._queued_rows >= FTS_BATCH_ROWS:
            index_queued(conn)
            self._queued_rows = 0

    def _index_waiting(self) -> None:
        """Index what waits before reading the index (a search, a merge)."""
        with self._lock:
            if self._retry(lambda: rows_wait(self._require())):
                with self._write() as conn:
                    index_queued(conn)
                    self._queued_rows = 0

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        with self._lock:
            conn = self._require()
            rows: list[sqlite3.Row] = self._retry(lambda: conn.execute(sql, params).fetchall())
            return rows

    # sessions --------------------------------------------------------------

    def ensure_session(self, key: str, *, platform: str, chat_id: str, title: str | None = None) -> StoredSession:
        """The open session of `key`, created when there is none."""
        key = valid_utf8(key)
        with self._write() as conn:
            row = conn.execute("SELECT * FROM sessions WHERE key = ? AND active = 1", (key,)).fetchone()
            if row is not None:
                return session_from_row(row)
            return self._insert_session(conn, key=key, platform=platform, chat_id=chat_id, title=title)

    def ensure_sessions(self, requests: Sequence[tuple[str, str, str]]) -> list[StoredSession | Exception]:
        """Several `ensure_session(key, platform=, chat_id=)` calls in one transaction (group commit).

        Args:
            requests: (key, platform, chat_id) each.

        Returns:
            Per request, in order: its open session, or the error that kept it from being created.

        Raises:
            StoreError, sqlite3.Error: the transaction itself failed; nothing was created.
        """
        outcomes: list[StoredSession | Exception] = []
        with self._write() as conn:
            for raw_key, platform, chat_id in requests:
                key = valid_utf8(raw_key)
                conn.execute("SAVEPOINT ensure_one")
                try:
                    row = conn.execute("SELECT * FROM sessions WHERE key = ? AND active = 1", (key,)).fetchone()
                    if row is not None:
                        outcomes.append(session_from_row(row))
                    else:
                        outcomes.append(self._insert_session(conn, key=key, platform=platform, chat_id=chat_id))
                except (StoreError, ValueError, sqlite3.IntegrityError) as exc:
                    conn.execute("ROLLBACK TO ensure_one")
                    outcomes.append(exc)
                conn.execute("RELEASE ensure_one")
        return outcomes

    def _insert_session(
        self,
        conn: sqlite3.Connection,
        *,
        key: str,
        platform: str,
        chat_id: str,
        title: str | None = None,
        parent_id: str | None = None,
        session_id: str | None = None,
        active: bool = True,
        created_at: float | None = None,
        ended_at: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> StoredSession:
        if not active and ended_at is None:
            ended_at = self._clock()
        key, platform, chat_id = valid_utf8(key), valid_utf8(platform), valid_utf8(chat_id)
        session = StoredSession(
            id=session_id or self._new_id(),
            key=key,
            platform=platform,
            chat_id=chat_id,
            parent_id=parent_id,
            created_at=self._clock() if created_at is None else created_at,
            ended_at=None if active else ended_at,
            active=active,
            title=title,
        )
        conn.execute(
            "INSERT INTO sessions (id, key, platform, chat_id, parent_id, created_at, ended_at, active, title, meta)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session.id, key, platform, chat_id, parent_id, session.created_at, session.ended_at,
                int(active), optional_utf8(title), valid_utf8(json.dumps(dict(meta), ensure_ascii=False)) if meta else None,
            ),
        )
        return session

    def active_session(self, key: str) -> StoredSession | None:
        rows = self._read("SELECT * FROM sessions WHERE key = ? AND active = 1", (key,))
        return session_from_row(rows[0]) if rows else None

    def get_session(self, session_id: str) -> StoredSession | None:
        rows = self._read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return session_from_row(rows[0]) if rows else None

    def session_meta(self, session_id: str) -> dict[str, Any]:
        """The pass-through fields an imported session came with (source, license, tools, …)."""
        rows = self._read("SELECT meta FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise StoreError(f"no session {session_id!r} in {self.path}")
        meta: dict[str, Any] = json.loads(rows[0]["meta"]) if rows[0]["meta"] else {}
        return meta

    def end_session(self, session_id: str) -> None:
        """Close the session (`/new`): the next `ensure_session` for its key starts a fresh one."""
        with self._write() as conn:
            self._end(conn, session_id)

    def _end(self, conn: sqlite3.Connection, session_id: str) -> sqlite3.Row:
        row: sqlite3.Row | None = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise StoreError(f"no session {session_id!r} in {self.path}")
        if row["active"]:
            conn.execute("UPDATE sessions SET active = 0, ended_at = ? WHERE id = ?", (self._clock(), session_id))
        return row

    def list_sessions(self, *, chat_id: str | None = None, limit: int = 100, offset: int = 0) -> list[SessionSummary]:
        """Sessions newest first, with their active and archived message counts."""
        where, params = ("WHERE s.chat_id = ?", [chat_id]) if chat_id is not None else ("", [])
        rows = self._read(
            f"""
            SELECT s.*,
                   (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.archived = 0) AS n_active,
                   (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.archived > 0) AS n_archived
            FROM sessions s {where} ORDER BY s.created_at DESC, s.rowid DESC LIMIT ? OFFSET ?
            """,
            [*params, limit, offset],
        )
        return [SessionSummary(session_from_row(r), r["n_active"], r["n_archived"]) for r in rows]

    # messages --------------------------------------------------------------

    def _insert_messages(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        chat_id: str,
        messages: Sequence[Message],
        token_counts: Sequence[int] | None,
        *,
        archived: int = 0,
    ) -> None:
        """Insert after the session's last seq."""
        if token_counts is not None and len(token_counts) != len(messages):
            raise ValueError(f"token_counts has {len(token_counts)} entries for {len(messages)} messages")
        (last,) = conn.execute(_LAST_SEQ, (session_id,)).fetchone()
        rows, chars = message_rows(session_id, chat_id, last + 1, messages, token_counts, self._clock(), archived)
        conn.executemany(INSERT_MESSAGE, rows)
        queue_rows(conn, session_id, last)
        self._queued_rows += len(rows)
        conn.execute(COUNT_CHAT, (chat_id, len(rows), chars))

    def _chat_of(self, conn: sqlite3.Connection, session_id: str) -> str:
        row = conn.execute("SELECT chat_id FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise StoreError(f"no session {session_id!r} in {self.path}")
        chat_id: str = row["chat_id"]
        return chat_id

    def append(
        self, session_id: str, messages: Sequence[Message], token_counts: Sequence[int] | None = None
    ) -> None:
        """Add messages after the last one of the session, in order, atomically."""
        if not messages:
            return
        with self._write() as conn:
            self._insert_messages(conn, session_id, self._chat_of(conn, session_id), messages, token_counts)

    def append_many(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None]:
        """Several `append`s in one transaction (group commit), each all-or-nothing on its own.

        One COMMIT, one full-text index segment and one trip to a worker thread
        for the whole batch instead of one per append. Each entry runs under a
        savepoint: one that fails (say, an unknown session) is rolled back alone.

        Returns:
            Per entry, in order: None when its messages were added, else the error that kept them out.

        Raises:
            StoreError, sqlite3.Error: the transaction itself failed; nothing of the batch was added.
        """
        with self._write() as conn:
            outcomes, queued = append_entries(conn, batch, now=self._clock(), where=str(self.path))
            self._queued_rows += queued
            return outcomes

    def append_many_now(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None] | None:
        """`append_many` on the caller's thread if it need not wait; else None at once, with nothing written.

        It waits neither for another thread using this store (a search, an
        index merge) nor for another process writing the file (a busy timeout
        of zero for the `BEGIN`), and its commit never checkpoints the WAL (an
        fsync): every `NOW_COMMITS_PER_CHECKPOINT`-th call declines, so that
        append's commit on a thread checkpoints; so does one that would fill the
        full-text index (a batch of rows, milliseconds). The gateway runs a small
        batch of appends this way on its event loop: a round trip to a writer thread
        costs ~70 us of CPU beside a lone commit's ~80 us (`LocalAppends`).
        """
        if self._now_commits >= NOW_COMMITS_PER_CHECKPOINT or self._queued_rows >= FTS_BATCH_ROWS:
            self._now_commits = 0
            return None  # this one commits on a thread, where the WAL may be checkpointed and the index filled
        if not self._lock.acquire(blocking=False):
            return None
        try:
            conn = self._conn
            if conn is None:
                raise StoreError(f"session store {self.path} is not open; call open() first")
            if not self._no_wait:
                enter_no_wait(conn)
                self._no_wait = True
            if not begin_without_waiting(conn):
                return None
            try:
                if len(batch) == 1:
                    # Alone in its transaction, an append needs no savepoint: a failure rolls the whole back.
                    outcomes, queued = append_batch(conn, batch, now=self._clock(), where=str(self.path))
                else:
                    outcomes, queued = append_entries(conn, batch, now=self._clock(), where=str(self.path))
            except (ValueError, sqlite3.IntegrityError) as exc:  # only a lone append's statement raises these
                conn.execute("ROLLBACK")
                return [exc]
            except BaseException:
                rollback_quietly(conn)
                raise
            self._queued_rows += queued
            commit_without_checkpoint(conn)
            self._now_commits += 1
            return outcomes
        finally:
            self._lock.release()

    def active_messages(self, session_id: str) -> list[Message]:
        """The session's current transcript (archived generations left out)."""
        rows = self._read(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND archived = 0 ORDER BY seq",
            (session_id,),
        )
        return [message_from_row(row) for row in rows]

    def delete_last_active(self, session_id: str, count: int) -> int:
        """Remove the newest `count` active messages for good (`/undo`); returns how many were removed."""
        if count <= 0:
            return 0
        with self._write() as conn:
            rows = conn.execute(
                "SELECT id, chat_id, length(coalesce(text, '')) FROM messages WHERE session_id = ? AND archived = 0 "
                "ORDER BY seq DESC LIMIT ?",
                (session_id, count),
            ).fetchall()
            conn.executemany("DELETE FROM messages WHERE id = ?", [(row[0],) for row in rows])
            if rows:
                conn.execute(COUNT_CHAT, (rows[0][1], -len(rows), -sum(int(row[2]) for row in rows)))
        return len(rows)

    def session_messages(self, session_id: str, *, include_archived: bool = True) -> list[StoredMessage]:
        """Every stored message of the session in write order, archived ones included by default."""
        filter_sql = "" if include_archived else "AND archived = 0"
        rows = self._read(
            f"SELECT {MESSAGE_COLUMNS}, token_count, created_at FROM messages"
            f" WHERE session_id = ? {filter_sql} ORDER BY seq",
            (session_id,),
        )
        return [
            StoredMessage(r["seq"], message_from_row(r), r["archived"], r["token_count"], r["created_at"])
            for r in rows
        ]

    def replace_active(
        self, session_id: str, new_messages: Sequence[Message], token_counts: Sequence[int] | None = None
    ) -> int:
        """In-place compression: archive the active messages (still searchable), make `new_messages` active.

        Returns:
            The archive generation the replaced messages now carry (1 for the first compression).
        """
        with self._write() as conn:
            chat_id = self._chat_of(conn, session_id)
            (generation,) = conn.execute(
                "SELECT coalesce(max(archived), 0) + 1 FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()
            conn.execute(
                "UPDATE messages SET archived = ? WHERE session_id = ? AND archived = 0", (generation, session_id)
            )
            self._insert_messages(conn, session_id, chat_id, new_messages, token_counts)
        return int(generation)

    def rotate(
        self, session_id: str, new_messages: Sequence[Message], token_counts: Sequence[int] | None = None
    ) -> StoredSession:
        """Close `session_id` (it keeps its transcript) and open a child session holding `new_messages`."""
        with self._write() as conn:
            parent = self._end(conn, session_id)
            child = self._insert_session(
                conn, key=parent["key"], platform=parent["platform"], chat_id=parent["chat_id"],
                title=parent["title"], parent_id=session_id,
            )
            self._insert_messages(conn, child.id, child.chat_id, new_messages, token_counts)
        log.info("store.rotated", parent_id=session_id, session_id=child.id)
        return child

    def import_session(
        self,
        session_id: str,
        *,
        key: str,
        platform: str,
        chat_id: str,
        messages: Sequence[Message],
        archived_messages: Sequence[Message] = (),
        meta: Mapping[str, Any] | None = None,
        created_at: float | None = None,
    ) -> StoredSession:
        """Store one finished session; see `import_sessions`."""
        (session,) = self.import_sessions([
            ImportedSession(session_id, key, platform, chat_id, messages, archived_messages, meta, created_at)
        ])
        return session

    def import_sessions(self, sessions: Sequence[ImportedSession]) -> list[StoredSession]:
        """Store finished sessions in one transaction (closed, so they never capture live traffic).

        Archived messages, when given, are stored as archive generation 1 before the active ones.

        Raises:
            StoreError: a session id already exists (nothing of the batch is written).
        """
        stored = []
        with self._write() as conn:
            for item in sessions:
                if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (item.id,)).fetchone():
                    raise StoreError(f"session {item.id!r} already exists in {self.path}")
                stored.append(self._insert_session(
                    conn, key=item.key, platform=item.platform, chat_id=item.chat_id, session_id=item.id,
                    active=False, created_at=item.created_at, ended_at=item.ended_at, meta=item.meta,
                ))
                if item.archived_messages:
                    self._insert_messages(conn, item.id, item.chat_id, item.archived_messages, None, archived=1)
                self._insert_messages(conn, item.id, item.chat_id, item.messages, None)
        return stored

    def compact_index(self, *, pages_per_step: int = COMPACT_PAGES_PER_STEP) -> int:
        """Merge the full-text index into fewer segments, in short transactions; return the steps taken.

        Every write adds a small index segment and FTS5 merges them only
        lazily, so after a bulk import a search may visit a dozen or more
        segments per word. Each step here is its own brief write transaction,
        so live writers are delayed by one step at most.
        """
        self._index_waiting()
        steps = 0
        while True:
            with self._write() as conn:
                before = conn.total_changes
                conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('merge', ?)", (-pages_per_step,))
                done = conn.total_changes - before < 2
            steps += 1
            if done:
                return steps

    # search and stats ------------------------------------------------------

    def search(
        self, chat_id: str, query: str, *, limit: int = 5, context: int = 1, vector: QueryVector | None = None
    ) -> list[SearchHit]:
        """Messages of one chat matching the words of `query`, best first (see `agent.store._search`).

        Any text is accepted: FTS syntax in `query` is treated as plain words. With `vector` (the
        query's embedding) the search is hybrid: full-text and vector ranks fused.
        """
        self._index_waiting()
        with self._lock:
            conn = self._require()
            near = [] if vector is None else self.nearest(chat_id, vector, limit=FUSION_DEPTH)
            hits: list[SearchHit] = self._retry(
                lambda: search_chat(conn, chat_id, query, limit=limit, context=context, nearest=[i for i, _ in near])
            )
            return hits

    # message vectors (agent.store.vectors) ---------------------------------

    def enable_vectors(self) -> str:
        with self._write() as conn:
            _vectors.create(conn)
        return _vectors.KIND

    def pending_texts(self, chat_id: str, model: str, *, limit: int) -> list[PendingText]:
        with self._lock:
            conn = self._require()
            found: list[PendingText] = self._retry(lambda: _vectors.pending(conn, chat_id, model, limit))
            return found

    def add_vectors(self, chat_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
        with self._write() as conn:
            return _vectors.add(conn, chat_id, model, vectors)

    def nearest(self, chat_id: str, query: QueryVector, *, limit: int, past_only: bool = False) -> list[tuple[int, float]]:
        with self._lock:
            conn = self._require()
            found: list[tuple[int, float]] = self._retry(
                lambda: _vectors.nearest(conn, chat_id, query, limit, past_only=past_only)
            )
            return found

    def recalled(self, chat_id: str, message_ids: Sequence[int]) -> list[RecalledMessage]:
        with self._lock:
            conn = self._require()
            found: list[RecalledMessage] = self._retry(lambda: _vectors.recalled(conn, chat_id, message_ids))
            return found

    def stats(self) -> StoreStats:
        (row,) = self._read(
            """
            SELECT (SELECT count(*) FROM sessions) AS sessions,
                   (SELECT count(*) FROM sessions WHERE active = 1) AS active_sessions,
                   (SELECT count(*) FROM messages) AS messages,
                   (SELECT count(*) FROM messages WHERE archived > 0) AS archived,
                   (SELECT count(DISTINCT chat_id) FROM sessions) AS chats,
                   (SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()) AS db_bytes
            """
        )
        wal = self.path.with_name(self.path.name + "-wal")
        wal_bytes = wal.stat().st_size if wal.exists() else 0
        return StoreStats(
            sessions=row["sessions"], active_sessions=row["active_sessions"], messages=row["messages"],
            archived_messages=row["archived"], chats=row["chats"], db_bytes=row["db_bytes"] + wal_bytes,
        )
