"""`SessionStore`: the contract every session store keeps (SQLite under home, PostgreSQL at `store.url`).

The methods are synchronous: the gateway calls them from worker threads
(`asyncio.to_thread`, group commits), both backends are thread-safe, and one
contract suite (`tests/agent/store/`) runs against each. The Protocol is
wider than five methods because it is the existing store's whole surface:
sessions, messages, soft-archive, rotation, import and search move together
from one backend to the other, or replicas would split a chat's history.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from agent.messages import Message
from agent.store.records import ImportedSession, SearchHit, SessionSummary, StoredMessage, StoredSession, StoreStats
from agent.store.vectors import QueryVector


class SessionStore(Protocol):
    """Sessions and messages of every chat, searchable per chat.

    `open()` connects and applies pending schema migrations (refusing a
    database written by a newer Chorus); `close()` releases it; both are
    repeatable in pairs. Unknown sessions raise `StoreError`.
    """

    @property
    def location(self) -> str:
        """Where the store lives, fit for logs and errors (a path or a URL without its password)."""
        ...

    def open(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> SessionStore: ...

    def __exit__(self, *exc: object) -> None: ...

    def ping(self) -> None:
        """One trivial round trip; raises `StoreError` (or the driver's error) when the store cannot answer."""
        ...

    def ensure_session(self, key: str, *, platform: str, chat_id: str, title: str | None = None) -> StoredSession: ...

    def ensure_sessions(self, requests: Sequence[tuple[str, str, str]]) -> list[StoredSession | Exception]: ...

    def active_session(self, key: str) -> StoredSession | None: ...

    def get_session(self, session_id: str) -> StoredSession | None: ...

    def session_meta(self, session_id: str) -> dict[str, Any]: ...

    def end_session(self, session_id: str) -> None: ...

    def list_sessions(self, *, chat_id: str | None = None, limit: int = 100, offset: int = 0) -> list[SessionSummary]: ...

    def append(self, session_id: str, messages: Sequence[Message], token_counts: Sequence[int] | None = None) -> None: ...

    def append_many(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None]: ...

    def active_messages(self, session_id: str) -> list[Message]: ...

    def session_messages(self, session_id: str, *, include_archived: bool = True) -> list[StoredMessage]: ...

    def replace_active(
        self, session_id: str, new_messages: Sequence[Message], token_counts: Sequence[int] | None = None
    ) -> int: ...

    def delete_last_active(self, session_id: str, count: int) -> int:
        """Remove the newest `count` active messages for good (`/undo`); returns how many were removed."""
        ...

    def rotate(
        self, session_id: str, new_messages: Sequence[Message], token_counts: Sequence[int] | None = None
    ) -> StoredSession: ...

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
    ) -> StoredSession: ...

    def import_sessions(self, sessions: Sequence[ImportedSession]) -> list[StoredSession]: ...

    def compact_index(self) -> int: ...

    def search(
        self, chat_id: str, query: str, *, limit: int = 5, context: int = 1, vector: QueryVector | None = None
    ) -> list[SearchHit]:
        """The chat's messages best matching `query`; with `vector` full-text and vector ranks are fused."""
        ...

    def stats(self) -> StoreStats: ...


@runtime_checkable
class LocalAppends(Protocol):
    """A store whose appends are local and short (SQLite under home): a small batch may run on the caller's thread.

    A networked store (PostgreSQL) does not offer this: its appends always go
    through the writer thread.
    """

    def append_many_now(self, batch: Sequence[tuple[str, Sequence[Message]]]) -> list[Exception | None] | None:
        """`append_many` if it can run at once without waiting on anyone; None (nothing written) otherwise."""
        ...


@runtime_checkable
class SessionStamps(Protocol):
    """A store several processes write (PostgreSQL): what a live agent's history must match to still be current."""

    def active_stamps(self, keys: Sequence[str]) -> dict[str, tuple[str, int]]:
        """Per routing key with an open session: that session's id and how many active messages it holds."""
        ...
