"""The built-in `semantic` memory provider: a chat's past messages recalled by meaning.

Owns `SemanticMemory`. After each turn (`sync`) the chat's user and
assistant messages that have no vector yet are embedded in batches and stored
in the session store (`VectorIndex`); before each turn (`prefetch`) the
user's message is embedded and the chat's most similar past messages (not
the ones the model sees anyway) become labelled context within
`RECALL_TOKEN_BUDGET`. `query_vector` gives `session_search` the query's
embedding so its search is hybrid. Everything is keyed by the asking chat's
scope id, as full-text search is. Any embedding or store failure is one log
line and one plugin-error count, and the turn goes on with full-text only:
nothing here raises into a turn.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Final

import structlog

from agent.memory.providers import MemoryProvider
from agent.memory.semantic.embedder import Embedder, EmbeddingFailed
from agent.messages import Message
from agent.plugins import PluginErrorSink
from agent.store import SessionStore
from agent.store.vectors import QueryVector, RecalledMessage, VectorIndex
from agent.tokens import estimate_tokens

log = structlog.get_logger(__name__)

NAME: Final = "semantic"
# Messages embedded per finished turn: the turn's own and, a batch at a time, the chat's older history.
INDEX_PER_SYNC: Final = 128
RECALL_CANDIDATES: Final = 8
# Below this cosine similarity a past message is not offered as recall (unrelated text scores lower
# with OpenAI's and MiniLM's models alike); session_search ranks without a floor.
RECALL_MIN_SIMILARITY: Final = 0.35
RECALL_TOKEN_BUDGET: Final = 600
RECALL_ITEM_CHARS: Final = 600
RECALL_LABEL: Final = "Earlier in this chat (recalled by meaning; oldest first):"
# A store that could not create the vector table (down, no permission) is asked again after this long.
ENABLE_RETRY_SECONDS: Final = 60.0


def _line(message: RecalledMessage) -> str:
    flat = " ".join(message.text.split())
    if len(flat) > RECALL_ITEM_CHARS:
        flat = flat[: RECALL_ITEM_CHARS - 1] + "…"
    day = time.strftime("%Y-%m-%d", time.gmtime(message.created_at))
    return f"- [{day}, {message.role}] {flat}"


class SemanticMemory(MemoryProvider):
    """Recall by meaning over one chat's stored messages.

    Args:
        store: the session store (opened by the gateway before the first turn).
        embedder: the `/v1/embeddings` client.
        on_error: told `("semantic", "memory_provider")` once per failure that made a turn fall back.
        count_tokens: how recall is measured against `RECALL_TOKEN_BUDGET`.
    """

    name = NAME

    def __init__(
        self,
        store: SessionStore,
        embedder: Embedder,
        *,
        on_error: PluginErrorSink | None = None,
        count_tokens: Callable[[str], int] = estimate_tokens,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._on_error = on_error
        self._count_tokens = count_tokens
        self._enabled = False
        self._retry_at = 0.0  # monotonic: when enabling the vector table may be tried (again)
        self._enabling = asyncio.Lock()

    @property
    def model(self) -> str:
        return self._embedder.model

    def _failed(self, call: str, chat_id: str, exc: Exception) -> None:
        # Our own wording for an endpoint's failure; for anything else the type only (a driver's text may quote data).
        detail = str(exc) if isinstance(exc, EmbeddingFailed) else None
        log.warning("semantic.fell_back", call=call, chat_id=chat_id, error_type=type(exc).__name__, error=detail)
        if self._on_error is not None:
            self._on_error(NAME, "memory_provider")

    async def _index(self) -> VectorIndex | None:
        """The store's vector index, enabled on first use; None when the store cannot keep vectors."""
        store = self._store
        if not isinstance(store, VectorIndex):
            return None
        if not self._enabled and time.monotonic() >= self._retry_at:
            async with self._enabling:
                if not self._enabled and time.monotonic() >= self._retry_at:
                    try:
                        kind = await asyncio.to_thread(store.enable_vectors)
                    except Exception as exc:  # noqa: BLE001 - no vectors (no permission, store down): full-text only
                        self._retry_at = time.monotonic() + ENABLE_RETRY_SECONDS
                        log.error("semantic.unavailable", store=store.location, error_type=type(exc).__name__,
                                  error=str(exc).splitlines()[0] if str(exc) else None, retry_seconds=ENABLE_RETRY_SECONDS)
                        return None
                    self._enabled = True
                    log.info("semantic.enabled", store=store.location, vectors=kind, model=self.model)
        return store if self._enabled else None

    async def query_vector(self, chat_id: str, text: str) -> QueryVector | None:
        """The embedding of `text`, or None (logged and counted) when the endpoint failed: search full-text only."""
        if await self._index() is None or not text.strip():
            return None
        try:
            (values,) = await self._embedder.embed([text])
        except EmbeddingFailed as exc:
            self._failed("query", chat_id, exc)
            return None
        return QueryVector(self.model, tuple(values))

    async def prefetch(self, chat_id: str, user_id: str | None, query: str) -> str | None:
        index = await self._index()
        vector = await self.query_vector(chat_id, query)
        if index is None or vector is None:
            return None
        try:
            near = await asyncio.to_thread(index.nearest, chat_id, vector, limit=RECALL_CANDIDATES, past_only=True)
            ids = [message_id for message_id, similarity in near if similarity >= RECALL_MIN_SIMILARITY]
            found = await asyncio.to_thread(index.recalled, chat_id, ids) if ids else []
        except Exception as exc:  # noqa: BLE001 - the store failing must not fail the turn
            self._failed("recall", chat_id, exc)
            return None
        return self._within_budget(found)

    def _within_budget(self, found: Sequence[RecalledMessage]) -> str | None:
        """The most similar messages whose lines fit the token budget, then shown oldest first."""
        kept: list[tuple[RecalledMessage, str]] = []
        spent = self._count_tokens(RECALL_LABEL)
        for message in found:  # most similar first
            line = _line(message)
            cost = self._count_tokens(line)
            if spent + cost > RECALL_TOKEN_BUDGET:
                break
            kept.append((message, line))
            spent += cost
        if not kept:
            return None
        kept.sort(key=lambda pair: (pair[0].created_at, pair[0].message_id))
        return "\n".join([RECALL_LABEL, *(line for _, line in kept)])

    async def sync(self, chat_id: str, user_id: str | None, messages: Sequence[Message]) -> None:
        await self.index_chat(chat_id, limit=INDEX_PER_SYNC)

    async def index_chat(self, chat_id: str, *, limit: int) -> int:
        """Embed up to `limit` of the chat's messages that have no vector yet (newest first); returns how many."""
        index = await self._index()
        if index is None:
            return 0
        try:
            pending = await asyncio.to_thread(index.pending_texts, chat_id, self.model, limit=limit)
            if not pending:
                return 0
            vectors = await self._embedder.embed([item.text for item in pending])
            pairs = [(item.message_id, values) for item, values in zip(pending, vectors, strict=True)]
            return await asyncio.to_thread(index.add_vectors, chat_id, self.model, pairs)
        except Exception as exc:  # noqa: BLE001 - runs after delivery; the next turn catches up
            self._failed("index", chat_id, exc)
            return 0

    async def shutdown(self) -> None:
        await self._embedder.close()
