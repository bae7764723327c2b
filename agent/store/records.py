"""Values the session store hands out, and the mapping between `Message` and a `messages` row.

Owns `StoredSession`, `SessionSummary`, `SearchHit`, `ContextLine`, `StoreStats`
and the row codec. Content is stored as plain text; multimodal content also keeps
its parts as JSON so a message reads back equal to what was written.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.messages import Content, ContentPart, ImagePart, Message, Role, TextPart, ToolCall

# content_kind column values
KIND_NONE = 0
KIND_TEXT = 1
KIND_PARTS = 2


class Row(Protocol):
    """A result row read by column name (`sqlite3.Row`, a psycopg dict row)."""

    def __getitem__(self, key: str, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class StoredSession:
    """One conversation in the store; `active` is False once ended or rotated."""

    id: str
    key: str
    platform: str
    chat_id: str
    parent_id: str | None
    created_at: float
    ended_at: float | None
    active: bool
    title: str | None = None


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session: StoredSession
    messages: int  # active messages
    archived: int  # soft-archived messages (replaced by an in-place compression)


@dataclass(frozen=True, slots=True)
class ContextLine:
    """A message next to a search hit, shortened for display."""

    seq: int
    role: str
    text: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching message: its snippet (hits wrapped in `**`), score, and the messages around it."""

    session_id: str
    seq: int
    role: str
    snippet: str
    created_at: float
    archived: bool
    score: float
    before: tuple[ContextLine, ...] = ()
    after: tuple[ContextLine, ...] = ()


@dataclass(frozen=True, slots=True)
class StoreStats:
    sessions: int
    active_sessions: int
    messages: int
    archived_messages: int
    chats: int
    db_bytes: int


def session_from_row(row: Row) -> StoredSession:
    return StoredSession(
        id=row["id"],
        key=row["key"],
        platform=row["platform"],
        chat_id=row["chat_id"],
        parent_id=row["parent_id"],
        created_at=row["created_at"],
        ended_at=row["ended_at"],
        active=bool(row["active"]),
        title=row["title"],
    )


def _parts_to_json(parts: tuple[ContentPart, ...]) -> str:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text})
        else:
            out.append({"type": "image", "url": part.url, "detail": part.detail})
    return json.dumps(out, ensure_ascii=False)


def _parts_from_json(raw: str) -> tuple[ContentPart, ...]:
    parts: list[ContentPart] = []
    for item in json.loads(raw):
        if item["type"] == "text":
            parts.append(TextPart(text=item["text"]))
        else:
            parts.append(ImagePart(url=item["url"], detail=item.get("detail")))
    return tuple(parts)


def valid_utf8(text: str) -> str:
    """`text` with lone surrogates as U+FFFD: SQLite binds text as UTF-8, which cannot carry them.

    The adapters clean inbound text; this keeps a model reply or tool result
    carrying a lone `\\ud83d` (valid JSON) from failing the whole write.
    """
    if text.isascii():  # O(1) in CPython
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def encode_content(message: Message) -> tuple[int, str, str | None]:
    """(content_kind, text, parts JSON or None), as valid UTF-8."""
    content = message.content
    if content is None:
        return KIND_NONE, "", None
    if isinstance(content, str):
        return KIND_TEXT, valid_utf8(content), None
    return KIND_PARTS, valid_utf8(message.text), valid_utf8(_parts_to_json(content))


def encode_tool_calls(calls: tuple[ToolCall, ...]) -> str | None:
    if not calls:
        return None
    return valid_utf8(json.dumps([[c.id, c.name, c.arguments] for c in calls], ensure_ascii=False))


def message_from_row(row: Row) -> Message:
    kind = row["content_kind"]
    content: Content
    if kind == KIND_NONE:
        content = None
    elif kind == KIND_TEXT:
        content = row["text"]
    else:
        content = _parts_from_json(row["parts"])
    calls_raw = row["tool_calls"]
    calls = tuple(ToolCall(id=i, name=n, arguments=a) for i, n, a in json.loads(calls_raw)) if calls_raw else ()
    role: Role = row["role"]
    return Message(
        role=role, content=content, tool_calls=calls, tool_call_id=row["tool_call_id"], name=row["name"]
    )


MESSAGE_COLUMNS = "seq, role, content_kind, text, parts, tool_calls, tool_call_id, name, archived"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as stored: its place in the session and its archive generation (0 = active)."""

    seq: int
    message: Message
    archived: int
    token_count: int | None
    created_at: float


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """A finished session to store as it is (see `SessionStore.import_sessions`)."""

    id: str
    key: str
    platform: str
    chat_id: str
    messages: Sequence[Message]
    archived_messages: Sequence[Message] = ()
    meta: Mapping[str, Any] | None = None
    created_at: float | None = None
    ended_at: float | None = None
