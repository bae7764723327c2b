"""The `session_search` agent tool: full-text search over the asking chat's past sessions, hybrid when it can.

Owns the tool schema and the result text. The chat comes only from the
`ToolContext` (never from the arguments), so the model cannot search another
chat whatever it writes. Knows nothing of SQL; the store does the search.
With a `QueryEmbedder` (the `semantic` memory provider) the query's embedding
goes along and the store fuses full-text and vector ranks; when there is no
embedding (the endpoint failed: the embedder logged and counted it) or the
hybrid search fails, the search is full-text only.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

import structlog

from agent.messages import ToolSchema
from agent.store import MAX_SEARCH_LIMIT, SearchHit, SessionStore, StoreError
from agent.store.vectors import QueryVector
from agent.tools.base import ToolContext, ok, refused

log = structlog.get_logger(__name__)

DEFAULT_LIMIT = 5
MAX_QUERY_CHARS = 500

SCHEMA = ToolSchema(
    name="session_search",
    description=(
        "Search the past conversations of this chat (earlier sessions and turns that were compressed away) "
        "for words. Returns the best matching messages with the messages around each. Use it when the user "
        "refers to something discussed before that is not in the current context."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words to look for; all words rank first"},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_LIMIT,
                "description": f"how many messages to return (default {DEFAULT_LIMIT})",
            },
        },
        "required": ["query"],
    },
)


class QueryEmbedder(Protocol):
    async def query_vector(self, chat_id: str, text: str) -> QueryVector | None:
        """The embedding of `text`, or None when there is none to be had (search full-text only)."""
        ...


def _hit_json(hit: SearchHit) -> dict[str, Any]:
    return {
        "session_id": hit.session_id,
        "message": hit.seq,
        "role": hit.role,
        "snippet": hit.snippet,
        "archived": hit.archived,
        "created_at": round(hit.created_at, 3),
        "context": [
            {"message": line.seq, "role": line.role, "text": line.text} for line in (*hit.before, *hit.after)
        ],
    }


class SessionSearchTool:
    """`session_search(query, limit?)`, scoped to `ToolContext.chat_id`.

    Args:
        store: an open `SessionStore`.
        embedder: makes the search hybrid (None: full-text only).
    """

    schema = SCHEMA

    def __init__(self, store: SessionStore, embedder: QueryEmbedder | None = None) -> None:
        self._store = store
        self._embedder = embedder

    async def _hits(self, chat_id: str, query: str, limit: int) -> tuple[list[SearchHit], bool]:
        """The hits and whether they came from the hybrid search."""
        vector = await self._embedder.query_vector(chat_id, query) if self._embedder is not None else None
        if vector is not None:
            try:
                hits = await asyncio.to_thread(self._store.search, chat_id, query, limit=limit, context=1, vector=vector)
                return hits, True
            except Exception as exc:  # noqa: BLE001 - the words alone still answer
                log.warning("session_search.hybrid_failed", chat_id=chat_id, error_type=type(exc).__name__)
        return await asyncio.to_thread(self._store.search, chat_id, query, limit=limit, context=1), False

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return refused("give 'query': the words to look for in this chat's past messages")
        limit_raw = arguments.get("limit", DEFAULT_LIMIT)
        if isinstance(limit_raw, bool) or not isinstance(limit_raw, int | float):
            return refused(f"'limit' must be a whole number from 1 to {MAX_SEARCH_LIMIT}")
        limit = max(1, min(int(limit_raw), MAX_SEARCH_LIMIT))
        try:
            hits, hybrid = await self._hits(context.chat_id, query[:MAX_QUERY_CHARS], limit)
        except StoreError as exc:
            log.warning("session_search.failed", chat_id=context.chat_id, error=str(exc))
            return refused("the session store is not available right now; answer without it")
        log.info("session_search.done", chat_id=context.chat_id, hits=len(hits), hybrid=hybrid)
        mode = {"search": "words and meaning"} if hybrid else {}
        if not hits:
            return ok(query=query, results=[], note="nothing in this chat's past messages matches these words", **mode)
        return ok(query=query, results=[_hit_json(hit) for hit in hits], **mode)
