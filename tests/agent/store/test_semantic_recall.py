"""The `semantic` memory provider on both stores: hybrid session_search, recall into a turn, scope, fallback.

The real `openai` client talks to the loopback fake's `/v1/embeddings`, whose
vectors put synonyms on one axis (`tests.fakes.embeddings`): "call off the
plane trip" is near "cancel the flight" while sharing no word with it.
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from structlog.testing import capture_logs

from agent.memory.semantic import RECALL_LABEL, OpenAIEmbedder, SemanticMemory
from agent.memory.semantic.provider import RECALL_CANDIDATES, RECALL_TOKEN_BUDGET
from agent.messages import assistant, user
from agent.store import SessionStore, SqliteSessionStore
from agent.store.postgres import PostgresSessionStore
from agent.store.vectors import QueryVector
from agent.tokens import estimate_tokens
from agent.tools.base import ToolContext
from agent.tools.session_search import SessionSearchTool
from tests.agent.store.conftest import opened_store
from tests.fakes.openai_server import FakeOpenAI
from tests.pgvector_server import pgvector_url  # noqa: F401 - the fixture

MODEL = "text-embedding-3-small"
PLAN = "we agreed to cancel the flight to Berlin on Friday"
OTHER_SECRET = "I will cancel my flight to Oslo, booking code ZX81"


@pytest.fixture(params=["sqlite", "postgres", "pgvector"])
def store(request: pytest.FixtureRequest, home: Path) -> Iterator[SessionStore]:
    """This module's stores: SQLite, PostgreSQL 15 without pgvector (vectors as bytea), PostgreSQL with pgvector."""
    with opened_store(request, home) as opened:
        yield opened


def test_each_postgres_backend_keeps_vectors_its_own_way(store: SessionStore, request: pytest.FixtureRequest) -> None:
    """pgvector's `vector` column where the extension is installed, packed bytea where it is not."""
    kind = store.enable_vectors()
    if isinstance(store, PostgresSessionStore):
        with psycopg.connect(store.url) as conn:
            available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        expected = "PostgreSQL pgvector" if available else "PostgreSQL bytea"
        assert request.node.callspec.params["store"] != "pgvector" or available  # that server always has it
    else:
        expected = "SQLite"
    assert kind.startswith(expected)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


class Errors:
    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def __call__(self, plugin: str, kind: str) -> None:
        self.told.append((plugin, kind))


@pytest.fixture
def errors() -> Errors:
    return Errors()


@pytest.fixture
async def semantic(store: SessionStore, fake: FakeOpenAI, errors: Errors) -> AsyncIterator[SemanticMemory]:
    """Chat `mine` with an ended session holding the plan, chat `other` with a look-alike; both indexed."""
    old = store.ensure_session("web:mine", platform="web", chat_id="mine")
    store.append(old.id, [user("what did we decide about the trip?"), assistant(PLAN), user("thanks, noted")])
    store.end_session(old.id)
    now = store.ensure_session("web:mine", platform="web", chat_id="mine")
    store.append(now.id, [user("the weather in Lisbon is sunny today")])
    other = store.ensure_session("web:other", platform="web", chat_id="other")
    store.append(other.id, [user(OTHER_SECRET)])
    memory = SemanticMemory(store, OpenAIEmbedder(model=MODEL, base_url=fake.base_url, api_key="sk-test"), on_error=errors)
    assert await memory.index_chat("mine", limit=100) == 4
    assert await memory.index_chat("other", limit=100) == 1
    yield memory
    await memory.shutdown()


async def search(tool: SessionSearchTool, query: str, chat: str = "mine") -> dict[str, object]:
    result: dict[str, object] = json.loads(await tool({"query": query}, ToolContext(chat_id=chat, session_id="x")))
    return result


def snippets(result: dict[str, object]) -> list[str]:
    hits = result["results"]
    assert isinstance(hits, list)
    return [str(hit["snippet"]) for hit in hits]


@pytest.mark.parametrize("question", ["call off plane trip?", "我们取消航班了吗"])
async def test_hybrid_search_finds_a_paraphrase_full_text_misses(
    store: SessionStore, semantic: SemanticMemory, question: str
) -> None:
    """A paraphrase (and a Chinese question) sharing no word with the plan: full-text finds nothing, hybrid finds it."""
    words_only = await search(SessionSearchTool(store), question)
    hybrid = await search(SessionSearchTool(store, semantic), question)
    assert all("Berlin" not in s for s in snippets(words_only))
    assert hybrid["search"] == "words and meaning"
    assert any("Berlin" in s for s in snippets(hybrid))


async def test_hybrid_search_keeps_full_text_hits(store: SessionStore, semantic: SemanticMemory) -> None:
    """An exact word still ranks its message first when the meaning agrees (the fusion keeps both rankings)."""
    hybrid = await search(SessionSearchTool(store, semantic), "Lisbon weather")
    assert "Lisbon" in snippets(hybrid)[0]


async def test_no_recall_or_search_across_chats(store: SessionStore, semantic: SemanticMemory) -> None:
    """Chat mine never sees chat other's look-alike message, by search or by recall; and the other way round."""
    mine = await search(SessionSearchTool(store, semantic), "cancel my flight to Oslo booking code", chat="mine")
    assert all("ZX81" not in s and "Oslo" not in s for s in snippets(mine))
    recalled = await semantic.prefetch("mine", None, "cancel my flight to Oslo")
    assert recalled is not None and "ZX81" not in recalled and "Berlin" in recalled
    theirs = await semantic.prefetch("other", None, "cancel the flight to Berlin")
    assert theirs is None or "Berlin" not in theirs
    query = await semantic.query_vector("mine", "cancel flight")
    assert query is not None
    ids = {message_id for message_id, _ in store.nearest("other", query, limit=50)}  # type: ignore[attr-defined]
    assert ids and all(
        m.text == OTHER_SECRET for m in store.recalled("other", sorted(ids))  # type: ignore[attr-defined]
    )


async def test_recall_is_labelled_past_only_and_within_budget(store: SessionStore, semantic: SemanticMemory) -> None:
    """Recall names its source, leaves out what the open session holds, and fits the token budget."""
    recalled = await semantic.prefetch("mine", None, "did we call off the plane trip?")
    assert recalled is not None
    assert recalled.startswith(RECALL_LABEL) and PLAN in recalled
    assert "Lisbon" not in (await semantic.prefetch("mine", None, "sunny weather in Lisbon") or "")
    session = store.ensure_session("web:long", platform="web", chat_id="long")
    store.append(session.id, [assistant(f"cancel the flight number {n}, " * 40) for n in range(30)])
    store.end_session(session.id)
    await semantic.index_chat("long", limit=100)
    long = await semantic.prefetch("long", None, "cancel flight")
    assert long is not None and estimate_tokens(long) <= RECALL_TOKEN_BUDGET
    shown = [int(n) for n in re.findall(r"\] cancel the flight number (\d+),", long)]
    assert len(shown) >= 2 and shown == sorted(shown)  # oldest first
    assert len(shown) < RECALL_CANDIDATES  # the budget, not the candidate count, cut the list


@pytest.mark.parametrize("failure", ["status_503", "status_400", "timeout", "refused"])
async def test_embedding_failure_falls_back_to_full_text(
    store: SessionStore, semantic: SemanticMemory, fake: FakeOpenAI, errors: Errors, failure: str
) -> None:
    """The endpoint failing: session_search answers from full-text, recall is empty, one error is counted per call."""
    memory = semantic
    if failure.startswith("status_"):
        fake.embeddings_status = int(failure.removeprefix("status_"))
    elif failure == "timeout":
        fake.embeddings_delay_seconds = 5.0
        memory = SemanticMemory(store, OpenAIEmbedder(model=MODEL, base_url=fake.base_url, api_key="k", timeout=0.2),
                                on_error=errors)
    else:
        memory = SemanticMemory(store, OpenAIEmbedder(model=MODEL, base_url="http://127.0.0.1:9/v1", api_key="k"),
                                on_error=errors)
    result = await search(SessionSearchTool(store, memory), "Berlin")
    assert "search" not in result and "**Berlin**" in snippets(result)[0]
    assert await memory.prefetch("mine", None, "call off the plane trip") is None
    assert errors.told == [("semantic", "memory_provider")] * 2


async def test_turns_are_indexed_after_sync_and_model_change_reembeds(store: SessionStore, fake: FakeOpenAI) -> None:
    """sync embeds what the chat has without a vector, in batches; a new embedding model embeds again."""
    session = store.ensure_session("web:sync", platform="web", chat_id="sync")
    store.append(session.id, [user(f"message {n} about my dog") for n in range(70)])
    memory = SemanticMemory(store, OpenAIEmbedder(model=MODEL, base_url=fake.base_url, api_key="k"))
    await memory.sync("sync", None, [])
    assert [len(r["input"]) for r in fake.embedding_requests] == [64, 6]
    assert fake.embedding_requests[0]["model"] == MODEL
    await memory.sync("sync", None, [])
    assert len(fake.embedding_requests) == 2  # nothing left to embed
    other_model = SemanticMemory(store, OpenAIEmbedder(model="other-model", base_url=fake.base_url, api_key="k"))
    assert await other_model.index_chat("sync", limit=200) == 70
    near = store.nearest("sync", QueryVector("other-model", tuple(fake.embed("puppy"))), limit=3)  # type: ignore[attr-defined]
    assert len(near) == 3


def _block_vector_table(store: SessionStore, *, blocked: bool) -> None:
    """Put a view where the vector table goes (or take it away again), in this test's database."""
    statements = ["DROP TABLE IF EXISTS message_vectors", "CREATE VIEW message_vectors AS SELECT 1 AS message_id"]
    if not blocked:
        statements = ["DROP VIEW IF EXISTS message_vectors"]
    if isinstance(store, SqliteSessionStore):
        with sqlite3.connect(store.path) as lite:
            for statement in statements:
                lite.execute(statement)
        return
    assert isinstance(store, PostgresSessionStore)
    with psycopg.connect(store.url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


async def test_a_store_that_cannot_keep_vectors_leaves_search_full_text(store: SessionStore, fake: FakeOpenAI) -> None:
    """The vector table cannot be made (a view holds its name): search answers by words, recall is empty, no raise."""
    _block_vector_table(store, blocked=True)
    try:
        session = store.ensure_session("web:mine", platform="web", chat_id="mine")
        store.append(session.id, [user(PLAN)])
        memory = SemanticMemory(store, OpenAIEmbedder(model=MODEL, base_url=fake.base_url, api_key="k"))
        with capture_logs() as logs:
            result = await search(SessionSearchTool(store, memory), "Berlin")
            assert await memory.prefetch("mine", None, "call off plane trip") is None
            assert await memory.index_chat("mine", limit=10) == 0
    finally:
        _block_vector_table(store, blocked=False)
    assert "search" not in result and "**Berlin**" in snippets(result)[0]
    assert [entry["event"] for entry in logs if entry["log_level"] == "error"] == ["semantic.unavailable"]
    assert fake.embedding_requests == []
