"""The store keeps any text it is given: lone surrogates (a model reply may carry "\\ud83d") never fail a write."""
from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.messages import ToolCall, assistant, tool_result, user
from agent.store import SessionStore, SqliteSessionStore
from agent.store.postgres import PostgresSessionStore
from tests.adapters.strategies import hostile_text, utf8_valid


def _store_hostile(store: SessionStore, chat_id: str, texts: list[str], name: str, arguments: str) -> None:
    """User, assistant, tool-call and tool messages with hostile text, appended alone and in a batch, read back."""
    session = store.ensure_session(f"agent:default:web:dm:{chat_id}", platform="web", chat_id=chat_id)
    calls = (ToolCall(id="c1", name="memory", arguments=arguments),)
    batch = [user(t, name=name or None) for t in texts] + [assistant(texts[0], tool_calls=calls),
                                                             tool_result("c1", texts[-1], name=name or None)]
    store.append(session.id, batch)
    assert store.append_many([(session.id, batch[:1]), (session.id, batch[1:])]) == [None, None]
    stored = store.active_messages(session.id)
    assert len(stored) == 2 * len(batch)
    values = [m.text for m in stored] + [m.name or "" for m in stored]
    values += [c.arguments for m in stored for c in m.tool_calls]
    assert all(utf8_valid(value) for value in values)
    cleaned = [t.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace") for t in texts]
    if isinstance(store, PostgresSessionStore):  # its text type holds no NUL: stored as U+FFFD
        cleaned = [t.replace("\x00", "\ufffd") for t in cleaned]
    assert [m.text for m in stored][: len(texts)] == cleaned


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(hostile_text, min_size=1, max_size=4), name=hostile_text, arguments=hostile_text)
def test_any_text_is_stored_and_reads_back_as_valid_utf8(texts: list[str], name: str, arguments: str) -> None:
    """User, assistant, tool-call and tool messages with hostile text are all written and read back valid."""
    with tempfile.TemporaryDirectory() as folder, SqliteSessionStore(Path(folder) / "state.db") as store:
        _store_hostile(store, "\ud83d", texts, name, arguments)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(hostile_text, min_size=1, max_size=4), name=hostile_text, arguments=hostile_text)
def test_any_text_is_stored_and_reads_back_as_valid_utf8_on_postgres(
    pg_url: str, texts: list[str], name: str, arguments: str
) -> None:
    """The same on PostgreSQL, whose text type refuses NUL and lone surrogates: nothing refuses a write."""
    with PostgresSessionStore(pg_url) as store:
        _store_hostile(store, uuid.uuid4().hex, texts, name, arguments)


def test_a_lone_surrogate_is_found_by_search_as_replacement(store: SessionStore) -> None:
    """The stored text is the cleaned one: searching for its words still finds it."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [assistant("broken \ud83d emoji reply")])
    assert [hit.seq for hit in store.search("c", "broken emoji")] == [0]
