"""The `session_search` agent tool: full-text search over the asking chat's past sessions.

Owns the tool schema and the result text. The chat comes only from the
`ToolContext` (never from the arguments), so the model cannot search another
chat whatever it writes. Knows nothing of SQL; the store does the search.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import structlog

from agent.messages import ToolSchema
from agent.store import MAX_SEARCH_LIMIT, SearchHit, SessionStore, StoreError
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
    """

    schema = SCHEMA

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    async def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return refused("give 'query': the words to look for in this chat's past messages")
        limit_raw = arguments.get("limit", DEFAULT_LIMIT)
        if isinstance(limit_raw, bool) or not isinstance(limit_raw, int | float):
            return refused(f"'limit' must be a whole number from 1 to {MAX_SEARCH_LIMIT}")
        limit = max(1, min(int(limit_raw), MAX_SEARCH_LIMIT))
        try:
            hits = await asyncio.to_thread(
                self._store.search, context.chat_id, query[:MAX_QUERY_CHARS], limit=limit, context=1
            )
        except StoreError as exc:
            log.warning("session_search.failed", chat_id=context.chat_id, error=str(exc))
            return refused("the session store is not available right now; answer without it")
        log.info("session_search.done", chat_id=context.chat_id, hits=len(hits))
        if not hits:
            return ok(query=query, results=[], note="nothing in this chat's past messages matches these words")
        return ok(query=query, results=[_hit_json(hit) for hit in hits])
