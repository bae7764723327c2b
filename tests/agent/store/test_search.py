"""Search over one chat: isolation, hostile query text, ranking, snippets and context."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.messages import assistant, user
from agent.store import SessionStore
from agent.store._search import CANDIDATES_PER_TERM

HOSTILE_QUERIES = [
    'secret OR chat_id:other',
    'chat_tag : "anything" OR secret',
    'secret" OR "x',
    '"unbalanced',
    "secret*",
    "*",
    "NEAR(secret launch, 5)",
    "secret AND NOT launch",
    "(((secret",
    "^secret",
    "text : secret",
    "{chat_tag text} : secret",
    "secret -launch +code",
    "' OR 1=1 --",
    "'; DROP TABLE messages; --",
    "\x00secret\x00",
    "",
    "   ",
    "\u200bsecret\u200b",
    "ＳＥＣＲＥＴ",
    "secret " * 200,
]


@pytest.fixture
def two_chats(store: SessionStore) -> SessionStore:
    """Chat 'mine' and chat 'other' share words; only 'other' has the launch code."""
    mine = store.ensure_session("web:mine", platform="web", chat_id="mine")
    store.append(mine.id, [user("we keep a secret recipe for soup"), assistant("noted, secret soup recipe")])
    other = store.ensure_session("web:other", platform="web", chat_id="other")
    store.append(other.id, [user("the secret launch code is 0000"), assistant("I will not repeat the secret")])
    prefix = store.ensure_session("web:mine:5", platform="web", chat_id="mine:5")
    store.append(prefix.id, [user("secret of a chat whose id extends mine")])
    return store


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_never_raise_or_leave_the_chat(two_chats: SessionStore, query: str) -> None:
    """FTS operators, quotes, column filters and SQL in the query are plain words: no error, no other chat."""
    mine = {s.session.id for s in two_chats.list_sessions(chat_id="mine")}
    hits = two_chats.search("mine", query, limit=20)
    assert {hit.session_id for hit in hits} <= mine
    assert all("launch" not in hit.snippet and "extends" not in hit.snippet for hit in hits)


def test_a_chat_never_sees_another_chats_messages(two_chats: SessionStore) -> None:
    """The same word in three chats: each chat finds only its own messages."""
    found = {
        chat: sorted(hit.snippet for hit in two_chats.search(chat, "secret", limit=20))
        for chat in ("mine", "other", "mine:5", "nobody")
    }
    assert found == {
        "mine": ["noted, **secret** soup recipe", "we keep a **secret** recipe for soup"],
        "other": ["I will not repeat the **secret**", "the **secret** launch code is 0000"],
        "mine:5": ["**secret** of a chat whose id extends mine"],
        "nobody": [],
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=80))
def test_any_text_is_a_valid_query(two_chats: SessionStore, query: str) -> None:
    """Arbitrary Unicode query text never raises and never returns another chat's message."""
    hits = two_chats.search("mine", query, limit=20)
    assert all("launch" not in hit.snippet for hit in hits)


def test_messages_with_all_words_rank_before_partial_matches(store: SessionStore) -> None:
    """All-words matches come first, then messages with only some of the words fill the limit."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [
        user("the deploy failed again"),
        user("nginx config reload"),
        user("deploy nginx with the new config"),
        user("unrelated chatter"),
    ])
    hits = store.search("c", "deploy nginx", limit=5)
    assert [hit.seq for hit in hits][0] == 2
    assert sorted(hit.seq for hit in hits[1:]) == [0, 1]


def test_rarer_words_rank_higher(store: SessionStore) -> None:
    """bm25 ranking: a message about the rare word outranks one where it is buried in a long text."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    long_text = "word " * 200 + "kubernetes"
    store.append(session.id, [user(long_text), user("kubernetes kubernetes upgrade")])
    assert [hit.seq for hit in store.search("c", "kubernetes")] == [1, 0]


def test_hits_come_with_the_messages_around_them(store: SessionStore) -> None:
    """Each hit carries `context` messages before and after it from the same session."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [user(f"message {i}") for i in range(3)] + [user("the password rotation plan")]
                 + [user(f"later {i}") for i in range(3)])
    (hit,) = store.search("c", "rotation", context=2)
    assert hit.snippet == "the password **rotation** plan"
    assert [(line.seq, line.text) for line in hit.before] == [(1, "message 1"), (2, "message 2")]
    assert [(line.seq, line.text) for line in hit.after] == [(4, "later 0"), (5, "later 1")]


def test_context_stays_within_the_hits_archive_generation(store: SessionStore) -> None:
    """Context of an archived hit comes from the replaced transcript, not from the new summary."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [user("alpha"), user("the budget is 40k")])
    store.replace_active(session.id, [user("[summary] budget agreed")])
    hits = store.search("c", "40k")
    assert [(h.archived, [c.text for c in h.before], [c.text for c in h.after]) for h in hits] == [(True, ["alpha"], [])]


def test_search_folds_case_and_diacritics(store: SessionStore) -> None:
    """'cafe' finds 'Café' and 'CAFÉ'."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [user("Meet at the Café"), user("CAFÉ closed")])
    assert len(store.search("c", "cafe")) == 2


def test_limit_is_respected_and_capped(store: SessionStore) -> None:
    """At most `limit` hits, and never more than the store's cap of 20."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [user(f"ticket number {i}") for i in range(30)])
    assert (len(store.search("c", "ticket", limit=3)), len(store.search("c", "ticket", limit=500))) == (3, 20)


def test_an_old_message_with_every_word_is_found_past_a_common_words_cap(store: SessionStore) -> None:
    """A message holding all query words is found even when one word fills the per-word candidate cap."""
    session = store.ensure_session("k", platform="web", chat_id="c")
    store.append(session.id, [user("postgres migration deadline is friday")])
    store.append(session.id, [user(f"postgres note {i}") for i in range(CANDIDATES_PER_TERM + 5)])
    store.append(session.id, [user(f"deadline note {i}") for i in range(CANDIDATES_PER_TERM + 5)])
    hits = store.search("c", "postgres deadline", limit=1)
    assert [(h.seq, h.snippet) for h in hits] == [(0, "**postgres** migration **deadline** is friday")]
