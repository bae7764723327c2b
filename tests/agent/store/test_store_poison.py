"""The store keeps any text it is given: lone surrogates (a model reply may carry "\\ud83d") never fail a write."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.messages import ToolCall, assistant, tool_result, user
from agent.store import SessionStore, SqliteSessionStore
from tests.adapters.strategies import hostile_text, utf8_valid


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(hostile_text, min_size=1, max_size=4), name=hostile_text, arguments=hostile_text)
def test_any_text_is_stored_and_reads_back_as_valid_utf8(texts: list[str], name: str, arguments: str) -> None:
    """User, assistant, tool-call and tool messages with hostile text are all written and read back valid."""
    with tempfile.TemporaryDirectory() as folder, SqliteSessionStore(Path(folder) / "state.db") as store:
        session = store.ensure_session("agent:default:web:dm:\ud83d", platform="web", chat_id="\ud83d")
        calls = (ToolCall(id="c1", name="memory", arguments=arguments),)
        batch = [user(t, name=name or None) for t in texts] + [assistant(texts[0], tool_calls=calls),
                                                                 tool_result("c1", texts[-1], name=name or None)]
        store.append(session.id, batch)
        stored = store.active_messages(session.id)
        assert len(stored) == len(batch)
        values = [m.text for m in stored] + [m.name or "" for m in stored]
        values += [c.arguments for m in stored for c in m.tool_calls]
        assert all(utf8_valid(value) for value in values)
        assert [m.text for m in stored][: len(texts)] == [t.encode("utf-16-le", "surrogatepass").decode(
            "utf-16-le", "replace") for t in texts]


def test_a_lone_surrogate_is_found_by_search_as_replacement(store: SessionStore) -> None:
    """The stored text is the cleaned one: searching for its words still finds it."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [assistant("broken \ud83d emoji reply")])
    assert [hit.seq for hit in store.search("c", "broken emoji")] == [0]
