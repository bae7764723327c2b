"""Preflight's size estimate is kept incrementally: it must follow any change to the history, not only appends."""
from __future__ import annotations

import dataclasses

import pytest

from agent.messages import Message
from tests.agent.context.compressor_helpers import chat, make

HUGE = "word " * 200_000  # far past a 128K window on its own


def test_an_appended_message_counts() -> None:
    engine = make()
    history = chat(10, words=50)
    assert not engine.should_compress_preflight(history, ())
    assert engine.should_compress_preflight([*history, Message(role="user", content=HUGE)], ())


def test_a_message_replaced_in_the_middle_counts_and_its_removal_too() -> None:
    engine = make()
    history = chat(10, words=50)
    assert not engine.should_compress_preflight(history, ())
    grown = [*history[:5], dataclasses.replace(history[5], content=HUGE), *history[6:]]
    assert engine.should_compress_preflight(grown, ())
    assert not engine.should_compress_preflight(history, ())  # back to the small history: the huge one is gone


def test_an_equal_copy_of_the_history_is_estimated_the_same() -> None:
    engine = make()
    history = [*chat(10, words=50), Message(role="user", content=HUGE)]
    assert engine.should_compress_preflight(history, ())
    copies = [dataclasses.replace(message) for message in history]
    assert engine.should_compress_preflight(copies, ())
    assert not engine.should_compress_preflight(copies[:-1], ())


def test_a_history_passed_as_another_sequence_type_is_recounted_the_same() -> None:
    """Prefixes are compared as slices of what is passed: a tuple after a list is recounted, never mis-added."""
    engine = make()
    history = [*chat(10, words=50), Message(role="user", content=HUGE)]
    assert engine.should_compress_preflight(history, ())
    assert engine.should_compress_preflight(tuple(history), ())
    assert not engine.should_compress_preflight(tuple(history[:10]), ())
    assert engine.should_compress_preflight(history, ())


def test_a_changed_system_prompt_is_estimated_again() -> None:
    """The system prompt's estimate is kept while its text stays the same, and redone when it changes."""
    engine = make()
    history = chat(10, words=50)
    small, huge = Message(role="system", content="be brief"), Message(role="system", content=HUGE)
    assert not engine.should_compress_preflight([small, *history], ())
    assert engine.should_compress_preflight([huge, *history], ())
    assert not engine.should_compress_preflight([Message(role="system", content="be brief"), *history], ())


def test_a_history_changed_in_place_after_a_call_is_recounted() -> None:
    """The estimate keeps its own copy of what it costed: a caller changing its list in place is seen."""
    engine = make()
    history = [Message(role="system", content="be brief"), *chat(10, words=50)]
    assert not engine.should_compress_preflight(history, ())
    history[4] = Message(role="user", content=HUGE)
    assert engine.should_compress_preflight(history, ())
    del history[4]
    assert not engine.should_compress_preflight(history, ())


def test_messages_are_not_ordered() -> None:
    """The prefix check relies on it: two unequal messages cannot be ordered, so a mismatch is never taken for a prefix."""
    first, second = Message(role="user", content="a"), Message(role="user", content="b")
    with pytest.raises(TypeError):
        assert first <= second
