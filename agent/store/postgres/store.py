"""`PostgresSessionStore`: the session store in PostgreSQL, shared by replicas on separate machines.

Same contract and semantics as `SqliteSessionStore` (`agent.store.protocol`):
the gateway calls it from worker threads, so it uses psycopg 3's pool of
blocking connections (each thread borrows one for a call). Every write is one
transaction; appends lock their session row (`FOR UPDATE`) so replicas
writing one session serialise and sequence numbers stay dense; the partial
unique index keeps one open session per key, and a replica that loses that
race reads the winner's session. PostgreSQL text cannot hold NUL, so NUL
characters are stored as U+FFFD.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg_pool
import structlog
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from agent.messages import Message
from agent.store._schema import StoreError
from agent.store.postgres import _vectors
from agent.store.postgres._append import append_batch
from agent.store.postgres._rows import ROW_COLUMNS, Conn, clean, insert_rows, message_row
from agent.store.postgres._schema import apply_migrations
from agent.store.postgres._search import search_chat
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
)
from agent.store.vectors import FUSION_DEPTH, PendingText, QueryVector, RecalledMessage

log = structlog.get_logger(__name__)

POOL_MIN, POOL_MAX = 1, 8
CONNECT_TIMEOUT_SECONDS = 10.0
PING_TIMEOUT_SECONDS = 2.0

# Bulk imports stream rows with COPY into a per-connection staging table, then one INSERT … SELECT builds
# the vectors server-side: no parameter arrays to encode, one statement per batch of sessions.
_CREATE_STAGE = """
CREATE TEMP TABLE IF NOT EXISTS message_stage (
    ord INTEGER, session_id TEXT, chat_id TEXT, seq INTEGER, role TEXT, content_kind SMALLINT, text TEXT, text_chars INTEGER,
    parts TEXT, tool_calls TEXT, tool_call_id TEXT, name TEXT, token_count INTEGER, created_at DOUBLE PRECISION,
    archived INTEGER, words TEXT
) ON COMMIT DELETE ROWS
"""
_FROM_STAGE = f"""
INSERT INTO messages ({", ".join(ROW_COLUMNS[:-1])}, tsv)
SELECT {", ".join(ROW_COLUMNS[:-1])}, to_tsvector('simple', words) FROM message_stage ORDER BY ord
"""
_COUNT_STAGED = """
INSERT INTO chat_stats (chat_id, messages, chars)
SELECT chat_id, count(*), sum(text_chars) FROM message_stage GROUP BY chat_id
ON CONFLICT (chat_id) DO UPDATE SET messages = chat_stats.messages + excluded.messages,
                                    chars = chat_stats.chars + excluded.chars
"""
_COUNT_CHAT = """
INSERT INTO chat_stats (chat_id, messages, chars) VALUES (%s, %s, %s)
ON CONFLICT (chat_id) DO UPDATE SET messages = chat_stats.messages + excluded.messages,
                                    chars = chat_stats.chars + excluded.chars
"""
_INSERT_SESSION = """
INSERT INTO sessions (id, key, platform, chat_id, parent_id, created_at, ended_at, active, title, meta)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
_LIST_SESSIONS = """
SELECT s.*,
       (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.archived = 0) AS n_active,
       (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.archived > 0) AS n_archived
FROM sessions s {where} ORDER BY s.created_at DESC, s.ord DESC LIMIT %s OFFSET %s
"""


def redact_url(url: str) -> str:
    """`url` without its password, for logs and errors."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _new_id() -> str:
    return uuid.uuid4().hex


class PostgresSessionStore:
    """Sessions and messages in a PostgreSQL database.

    Args:
        url: a libpq URL, `postgresql://user[:password]@host[:port]/db`.
        clock: seconds since the epoch, injected for tests.
        new_id: session id factory, injected for tests.
        pool_max: the most connections this process holds.
        connect_timeout: seconds `open()` waits for a first connection.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = _new_id,
        pool_max: int = POOL_MAX,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
    ) -> None:
        self.url = url
        self._clock = clock
        self._new_id = new_id
        self._pool_max = pool_max
        self._connect_timeout = connect_timeout
        self._pool: psycopg_pool.ConnectionPool[Conn] | None = None
        self._vector_kind = ""  # set by enable_vectors: pgvector's `vector` or `real[]`

    @property
    def location(self) -> str:
        return redact_url(self.url)

    # lifecycle -------------------------------------------------------------

    def open(self) -> None:
        """Connect the pool and run pending migrations."""
        if self._pool is not None:
            raise StoreError(f"session store {self.location} is already open; call close() first")
        pool: psycopg_pool.ConnectionPool[Conn] = psycopg_pool.ConnectionPool(
            self.url, min_size=POOL_MIN, max_size=self._pool_max, open=False, name="chorus-store",
            connection_class=psycopg.Connection[dict[str, Any]],
            kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": int(PING_TIMEOUT_SECONDS) + 1},
            timeout=self._connect_timeout,
            # A connection broken by a server restart is replaced when borrowed, not handed to a caller.
            check=psycopg_pool.ConnectionPool.check_connection,
        )
        try:
            pool.open(wait=True, timeout=self._connect_timeout)
            with pool.connection() as conn:
                applied = apply_migrations(conn)
        except psycopg_pool.PoolTimeout as exc:
            pool.close()
            raise StoreError(
                f"cannot reach the PostgreSQL store {self.location} within {self._connect_timeout:g}s; "
                "check store.url and that the server is running"
            ) from exc
        except BaseException:
            pool.close()
            raise
        self._pool = pool
        if applied:
            log.info("store.migrated", store=self.location, versions=applied)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> PostgresSessionStore:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ping(self) -> None:
        with self._conn(timeout=PING_TIMEOUT_SECONDS) as conn:
            conn.execute("SELECT 1")

    def connection(self) -> AbstractContextManager[Conn]:
        """A pooled connection (autocommit, dict rows) for stores sharing this database, such as notes."""
        return self._conn()

    @contextmanager
    def _conn(self, timeout: float | None = None) -> Iterator[Conn]:
        if self._pool is None:
            raise StoreError(f"session store {self.location} is not open; call open() first")
        try:
            with self._pool.connection(timeout=timeout) as conn:
                yield conn
        except psycopg_pool.PoolTimeout as exc:
            raise StoreError(f"the PostgreSQL store {self.location} is unreachable or saturated") from exc
        except psycopg.OperationalError as exc:
            raise StoreError(f"the PostgreSQL store {self.location} failed: {exc.sqlstate or 'connection lost'}") from exc

    @contextmanager
    def _write(self) -> Iterator[Conn]:
        with self._conn() as conn, conn.transaction():
            yield conn

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[dict[str, Any]]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    # sessions --------------------------------------------------------------

    def ensure_session(self, key: str, *, platform: str, chat_id: str, title: str | None = None) -> StoredSession:
        """The open session of `key`, created when there is none."""
        with self._write() as conn:
            return self._ensure(conn, key, platform, chat_id, title)

    def _ensure(self, conn: Conn, key: str, platform: str, chat_id: str, title: str | None = None) -> StoredSession:
        row = conn.execute("SELECT * FROM sessions WHERE key = %s AND active", (key,)).fetchone()
        if row is not None:
            return session_from_row(row)
        try:
            with conn.transaction():
                return self._insert_session(conn, key=key, platform=platform, chat_id=chat_id, title=title)
        except psycopg.errors.UniqueViolation:
            # Another replica opened this key's session first: it is the one.
            row = conn.execute("SELECT * FROM sessions WHERE key = %s AND active", (key,)).fetchone()
            if row is None:
                raise
            return session_from_row(row)

    def ensure_sessions(self, requests: Sequence[tuple[str, str, str]]) -> list[StoredSession | Exception]:
        """Several `ensure_session(key, platform=, chat_id=)` calls in one transaction (group commit)."""
        outcomes: list[StoredSession | Exception] = []
        with self._write() as conn:
            for key, platform, chat_id in requests:
                try:
                    with conn.transaction():
                        outcomes.append(self._ensure(conn, key, platform, chat_id))
                except (StoreError, ValueError, psycopg.IntegrityError) as exc:
                    outcomes.append(exc)
        return outcomes

    def _insert_session(
        self,
        conn: Conn,
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
        session = StoredSession(
            id=session_id or self._new_id(), key=key, platform=platform, chat_id=chat_id, parent_id=parent_id,
            created_at=self._clock() if created_at is None else created_at, ended_at=None if active else ended_at,
            active=active, title=title,
        )
        conn.execute(_INSERT_SESSION, (
            session.id, key, platform, chat_id, parent_id, session.created_at, session.ended_at, active, clean(title),
            Jsonb(dict(meta)) if meta else None,
        ))
        return session

    def active_session(self, key: str) -> StoredSession | None:
        rows = self._read("SELECT * FROM sessions WHERE key = %s AND active", (key,))
        return session_from_row(rows[0]) if rows else None

    def active_stamps(self, keys: Sequence[str]) -> dict[str, tuple[str, int]]:
        """Per routing key with an open session: its id and active message count (`SessionStamps`, one query)."""
        rows = self._read(
            "SELECT s.key, s.id, (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.archived = 0) AS n"
            " FROM sessions s WHERE s.key = ANY(%s) AND s.active",
            (list(keys),),
        )
        return {str(row["key"]): (str(row["id"]), int(row["n"])) for row in rows}

    def get_session(self, session_id: str) -> StoredSession | None:
        rows = self._read("SELECT * FROM sessions WHERE id = %s", (session_id,))
        return session_from_row(rows[0]) if rows else None

    def session_meta(self, session_id: str) -> dict[str, Any]:
        rows = self._read("SELECT meta FROM sessions WHERE id = %s", (session_id,))
        if not rows:
            raise StoreError(f"no session {session_id!r} in {self.location}")
        meta: dict[str, Any] = rows[0]["meta"] or {}
        return meta

    def end_session(self, session_id: str) -> None:
        with self._write() as conn:
            self._end(conn, session_id)

    def _end(self, conn: Conn, session_id: str) -> dict[str, Any]:
        row = conn.execute("SELECT * FROM sessions WHERE id = %s FOR UPDATE", (session_id,)).fetchone()
        if row is None:
            raise StoreError(f"no session {session_id!r} in {self.location}")
        if row["active"]:
            conn.execute("UPDATE sessions SET active = FALSE, ended_at = %s WHERE id = %s", (self._clock(), session_id))
        return row

    def list_sessions(self, *, chat_id: str | None = None, limit: int = 100, offset: int = 0) -> list[SessionSummary]:
        """Sessions newest first, with their active and archived message counts."""
        where, params = ("WHERE s.chat_id = %s", [chat_id]) if chat_id is not None else ("", [])
        rows = self._read(_LIST_SESSIONS.format(where=where), [*params, limit, offset])
        return [SessionSummary(session_from_row(r), r["n_active"], r["n_archived"]) for r in rows]

    # messages --------------------------------------------------------------

    def _insert_messages(
        self, conn: Conn, session_id: str, chat_id: str, messages: Sequence[Message],
        token_counts: Sequence[int] | None, *, archived: int = 0,
    ) -> None:
        if token_counts is not None and len(token_counts) != len(messages):
            raise ValueError(f"token_counts has {len(token_counts)} entries for {len(messages)} messages")
        if not messages:
            return
        last = conn.execute(
            "SELECT coalesce(max(seq), -1) AS last FROM messages WHERE session_id = %s", (session_id,)
        ).fetchone()
        start, now = (int(last["last"]) + 1 if last else 0), self._clock()
        self._insert_rows(conn, session_id, chat_id, [
            StoredMessage(start + offset, message, archived, token_counts[offset] if token_counts else None, now)
            for offset, message in enumerate(messages)
        ])

    def _insert_rows(self, conn: Conn, session_id: str, chat_id: str, rows: Sequence[StoredMessage]) -> None:
        """Insert messages exactly as given (sequence, generation, tokens, time) in one statement."""
        insert_rows(conn, [message_row(session_id, chat_id, row) for row in rows])

    def copy_session(self, session: StoredSession, meta: Mapping[str, Any], messages: Sequence[StoredMessage]) -> bool:
        """Store a session of another store exactly as it is (open or closed, same id, parent, sequence).

        Returns:
            False when a session with this id is already here (nothing written), True when copied.
        """
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session.id,)).fetchone():
                return False
            self._insert_session(
                conn, key=session.key, platform=session.platform, chat_id=session.chat_id, title=session.title,
                parent_id=session.parent_id, session_id=session.id, active=session.active,
                created_at=session.created_at, ended_at=session.ended_at, meta=meta,
            )
            if messages:
                self._insert_rows(conn, session.id, session.chat_id, messages)
        return True

    def _lock_chat_of(self, conn: Conn, session_id: str) -> str:
        """The session's chat, its row locked until commit so appends to one session take turns."""
        row = conn.execute("SELECT chat_id FROM sessions WHERE id = %s FOR UPDATE", (session_id,)).fetchone()
        if row is None:
            raise StoreError(f"no session {session_id!r} in {self.location}")
        chat_id: str = row["chat_id"]
        return chat_id

    def append(self, session_id: str, messages: Sequence[Message], token_counts: Sequence[int] | None = None) -> None:
        if not messages:
            return
        with self._write() as conn:
            self._insert_messages(conn, session_id, self._lock_chat_of(conn, session_id), messages, token_counts)

    def append_many(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None]:
        """Several `append`s in one transaction of three statements (`append_batch`), each all-or-nothing.

        Should the database refuse a row, the batch is written again entry by entry, each under a savepoint,
        so the entry it refuses leaves the others in.
        """
        try:
            with self._write() as conn:
                return append_batch(conn, batch, now=self._clock(), where=self.location)
        except (ValueError, psycopg.IntegrityError, psycopg.DataError):
            return self._append_each(batch)

    def _append_each(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None]:
        outcomes: list[Exception | None] = []
        with self._write() as conn:
            for session_id, messages in batch:
                if not messages:
                    outcomes.append(None)
                    continue
                try:
                    with conn.transaction():
                        self._insert_messages(conn, session_id, self._lock_chat_of(conn, session_id), messages, None)
                except (StoreError, ValueError, psycopg.IntegrityError, psycopg.DataError) as exc:
                    outcomes.append(exc)
                else:
                    outcomes.append(None)
        return outcomes

    def active_messages(self, session_id: str) -> list[Message]:
        rows = self._read(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = %s AND archived = 0 ORDER BY seq", (session_id,)
        )
        return [message_from_row(row) for row in rows]

    def session_messages(self, session_id: str, *, include_archived: bool = True) -> list[StoredMessage]:
        filter_sql = "" if include_archived else "AND archived = 0"
        rows = self._read(
            f"SELECT {MESSAGE_COLUMNS}, token_count, created_at FROM messages"
            f" WHERE session_id = %s {filter_sql} ORDER BY seq",
            (session_id,),
        )
        return [
            StoredMessage(r["seq"], message_from_row(r), r["archived"], r["token_count"], r["created_at"]) for r in rows
        ]

    def replace_active(
        self, session_id: str, new_messages: Sequence[Message], token_counts: Sequence[int] | None = None
    ) -> int:
        """In-place compression: archive the active messages (still searchable), make `new_messages` active."""
        with self._write() as conn:
            chat_id = self._lock_chat_of(conn, session_id)
            row = conn.execute(
                "SELECT coalesce(max(archived), 0) + 1 AS generation FROM messages WHERE session_id = %s", (session_id,)
            ).fetchone()
            generation = int(row["generation"]) if row else 1
            conn.execute(
                "UPDATE messages SET archived = %s WHERE session_id = %s AND archived = 0", (generation, session_id)
            )
            self._insert_messages(conn, session_id, chat_id, new_messages, token_counts)
        return generation

    def delete_last_active(self, session_id: str, count: int) -> int:
        """Remove the newest `count` active messages for good (`/undo`); returns how many were removed."""
        if count <= 0:
            return 0
        with self._write() as conn:
            rows = conn.execute(
                "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id = %s AND archived = 0"
                " ORDER BY seq DESC LIMIT %s) RETURNING chat_id, text_chars",
                (session_id, count),
            ).fetchall()
            if rows:
                conn.execute(_COUNT_CHAT, (rows[0]["chat_id"], -len(rows), -sum(int(r["text_chars"]) for r in rows)))
        return len(rows)

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
        (session,) = self.import_sessions([
            ImportedSession(session_id, key, platform, chat_id, messages, archived_messages, meta, created_at)
        ])
        return session

    def import_sessions(self, sessions: Sequence[ImportedSession]) -> list[StoredSession]:
        """Store finished sessions in one transaction (closed); an existing id writes nothing of the batch.

        The messages of the whole batch go in with one COPY (see `_FROM_STAGE`).
        """
        stored, rows = [], []
        with self._write() as conn:
            for item in sessions:
                if conn.execute("SELECT 1 FROM sessions WHERE id = %s", (item.id,)).fetchone():
                    raise StoreError(f"session {item.id!r} already exists in {self.location}")
                stored.append(self._insert_session(
                    conn, key=item.key, platform=item.platform, chat_id=item.chat_id, session_id=item.id,
                    active=False, created_at=item.created_at, ended_at=item.ended_at, meta=item.meta,
                ))
                seq = 0
                # Each generation is stamped when written, as `append` would stamp it.
                for archived, messages in ((1, item.archived_messages), (0, item.messages)):
                    now = self._clock() if messages else 0.0
                    for message in messages:
                        rows.append(message_row(item.id, item.chat_id, StoredMessage(seq, message, archived, None, now)))
                        seq += 1
            conn.execute(_CREATE_STAGE)
            with conn.cursor().copy(f"COPY message_stage (ord, {', '.join(ROW_COLUMNS)}) FROM STDIN") as copy:
                for index, row in enumerate(rows):  # ids follow the order written: newest last, as search expects
                    copy.write_row((index, *row))
            conn.execute(_FROM_STAGE)
            conn.execute(_COUNT_STAGED)
        return stored

    def compact_index(self) -> int:
        """Merge the GIN index's pending entries and vacuum-analyse messages; return the steps taken (2).

        What FTS5 segment merging is to SQLite: after a bulk import the pending
        list, unset hint bits and missing planner statistics slow the first
        searches; VACUUM only visits pages changed since the last run.
        """
        with self._conn() as conn:
            conn.execute("SELECT gin_clean_pending_list('messages_tsv'::regclass)")
            conn.execute("VACUUM (ANALYZE) messages")  # autocommit connection: allowed outside a transaction
        return 2

    # search and stats ------------------------------------------------------

    def search(
        self, chat_id: str, query: str, *, limit: int = 5, context: int = 1, vector: QueryVector | None = None
    ) -> list[SearchHit]:
        """Messages of one chat matching the words of `query`, best first (see `agent.store.postgres._search`).

        With `vector` (the query's embedding) the search is hybrid: full-text and vector ranks fused.
        """
        near = [] if vector is None else self.nearest(chat_id, vector, limit=FUSION_DEPTH)
        with self._conn() as conn:
            return search_chat(conn, chat_id, query, limit=limit, context=context, nearest=[i for i, _ in near])

    # message vectors (agent.store.vectors) ---------------------------------

    def enable_vectors(self) -> str:
        with self._conn() as conn:
            self._vector_kind = _vectors.create(conn)
        return _vectors.KINDS[self._vector_kind]

    def pending_texts(self, chat_id: str, model: str, *, limit: int) -> list[PendingText]:
        with self._conn() as conn:
            return _vectors.pending(conn, chat_id, model, limit)

    def add_vectors(self, chat_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> int:
        with self._conn() as conn:
            return _vectors.add(conn, self._vector_kind, chat_id, model, vectors)

    def nearest(self, chat_id: str, query: QueryVector, *, limit: int, past_only: bool = False) -> list[tuple[int, float]]:
        with self._conn() as conn:
            return _vectors.nearest(conn, self._vector_kind, chat_id, query, limit, past_only=past_only)

    def recalled(self, chat_id: str, message_ids: Sequence[int]) -> list[RecalledMessage]:
        with self._conn() as conn:
            return _vectors.recalled(conn, chat_id, message_ids)

    def stats(self) -> StoreStats:
        (row,) = self._read(
            """
            SELECT (SELECT count(*) FROM sessions) AS sessions,
                   (SELECT count(*) FROM sessions WHERE active) AS active_sessions,
                   (SELECT count(*) FROM messages) AS messages,
                   (SELECT count(*) FROM messages WHERE archived > 0) AS archived,
                   (SELECT count(DISTINCT chat_id) FROM sessions) AS chats,
                   pg_database_size(current_database()) AS db_bytes
            """
        )
        return StoreStats(
            sessions=row["sessions"], active_sessions=row["active_sessions"], messages=row["messages"],
            archived_messages=row["archived"], chats=row["chats"], db_bytes=row["db_bytes"],
        )
