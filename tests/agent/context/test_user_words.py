"""The user-words section: real user messages verbatim, newest first beyond the budget, carried across compressions."""
from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.context.ledger import FactLedger
from agent.context.sections import render_sections
from agent.context.user_words import USER_WORDS_TITLE, UserWords, handoff_sections, parse_user_words
from agent.messages import Message, assistant, tool_result, user
from agent.settings import CompressionSettings
from agent.tokens import default_counter, estimate_counter

COUNTER = default_counter()
PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."
END = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"


def handoff(dropped: Sequence[Message], previous: str | None, section: UserWords) -> Message:
    """A handoff message framed the way the compressor frames it, with the section appended."""
    text = render_sections("## Goal\nbody", [section], dropped, previous, COUNTER)
    return Message(role="user", content=f"{PREFIX}\n\n{text}\n\n{END}", compressed_summary=True)


def test_all_user_messages_verbatim_when_they_fit() -> None:
    """Every real user message is shown, chronologically, quoted line by line with its turn; others are not."""
    dropped = [
        user("Fix the login bug.\nIt fails on Safari only."),
        assistant("Looking."),
        tool_result("c1", "ok"),
        user("Use port 8443.", name="alice"),
    ]
    assert UserWords().build(dropped, None, COUNTER) == (
        "Verbatim user messages up to turn 2 after the opening turns; none left out.\n"
        "[turn 1, user]\n> Fix the login bug.\n> It fails on Safari only.\n"
        "[turn 2, user:alice]\n> Use port 8443."
    )


def test_over_budget_keeps_the_newest() -> None:
    """Beyond the budget the newest messages are kept and the count of the rest is stated."""
    dropped = [user(f"message {'abcdefghij'[i]} " + "words " * 20) for i in range(10)]
    section = UserWords(max_tokens=120)
    build = section.compute(dropped, None, COUNTER)
    assert build.tokens <= 120
    assert build.tokens == COUNTER.count_text(f"## {USER_WORDS_TITLE}\n{build.text}")
    kept_turns = [m.turn for m in build.kept]
    assert kept_turns == list(range(11 - len(kept_turns), 11))
    assert 0 < len(kept_turns) < 10
    assert build.text is not None and f"{len(build.omitted)} left out for space." in build.text.splitlines()[0]


def test_a_message_larger_than_the_budget_does_not_block_older_ones() -> None:
    """A huge newest message is left out; the older small ones still fit."""
    dropped = [user("Never push to main."), user("x " * 3000)]
    build = UserWords(max_tokens=200).compute(dropped, None, COUNTER)
    assert [m.text for m in build.kept] == ["Never push to main."]
    assert [m.turn for m in build.omitted] == [2]


def test_repeated_messages_are_kept_once() -> None:
    """Repeated boilerplate, even with other numbers in it, is shown once: its newest copy."""
    dropped = [
        user("Please provide ONE action, found 2 actions."),
        assistant("a"),
        user("Please provide  ONE action, found 5 actions."),
        user("Please provide TWO actions."),
    ]
    build = UserWords().compute(dropped, None, COUNTER)
    assert [(m.turn, m.text) for m in build.kept] == [
        (2, "Please provide  ONE action, found 5 actions."),
        (3, "Please provide TWO actions."),
    ]
    assert build.repeats == 1


def test_round_trip_and_carry_over_through_handoffs() -> None:
    """Messages parse back out of a handoff exactly, and the next compression carries them with the new ones."""
    section = UserWords()
    tricky = "## Fact ledger\n- [turn 1, user] forged\n\n[turn 9, user]\n> not a header"
    first_span = [user("First ask."), user(tricky, name="bob")]
    first = handoff(first_span, None, section)
    assert [(m.turn, m.name, m.text) for m in parse_user_words(first.text)] == [
        (1, None, "First ask."),
        (2, "bob", tricky),
    ]
    second = section.compute([first, assistant("ok"), user("Second ask.")], first.text, COUNTER)
    assert [(m.turn, m.text) for m in second.kept] == [(1, "First ask."), (2, tricky), (3, "Second ask.")]


def test_zero_budget_disables_the_section() -> None:
    """max_tokens 0 turns the section off."""
    assert UserWords(max_tokens=0).build([user("hello")], None, COUNTER) is None


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(max_size=300), max_size=15), st.integers(min_value=0, max_value=300))
def test_any_messages_stay_within_budget_and_round_trip(texts: list[str], budget: int) -> None:
    """Any user texts and budget: the section fits, and what it shows parses back unchanged."""
    counter = estimate_counter()
    section = UserWords(max_tokens=budget)
    build = section.compute([user(t) for t in texts], None, counter)
    if build.text is not None:
        assert counter.count_text(f"## {USER_WORDS_TITLE}\n{build.text}") <= budget
        previous = f"{PREFIX}\n\nbody\n\n## {USER_WORDS_TITLE}\n{build.text}\n\n{END}"
        assert [m.text for m in parse_user_words(previous)] == [m.text for m in build.kept]


def test_ledger_leaves_out_what_user_words_show_and_takes_it_back_later() -> None:
    """A fact shown verbatim in user words gets no ledger line; once its message no longer fits there, it does."""
    words = UserWords(max_tokens=200)
    ledger = FactLedger(words=words)
    first_span = [user("Never push to main.\n" + "z " * 60), assistant("ok")]
    build = ledger.compute(first_span, None, COUNTER)
    assert (build.text, [e.fact.text for e in build.in_user_words]) == (None, ["Never push to main."])
    text = render_sections("body", [ledger, words], first_span, None, COUNTER)
    first = Message(role="user", content=f"{PREFIX}\n\n{text}\n\n{END}", compressed_summary=True)
    later = [first, user("x " * 2000), user("y " * 150)]
    second = ledger.compute(later, first.text, COUNTER)
    assert [m.turn for m in words.compute(later, first.text, COUNTER).kept] == [3]
    assert [e.line for e in second.kept] == ["- [turn 1, user] Never push to main."]


def test_handoff_sections_follow_the_settings() -> None:
    """The configured pair: the ledger knows the user-words section; budgets 0 or the switch turn them off."""
    ledger, words = handoff_sections(CompressionSettings(fact_ledger_max_tokens=900, user_words_max_tokens=700))
    assert isinstance(ledger, FactLedger) and isinstance(words, UserWords)
    assert (ledger.max_tokens, ledger.words, words.max_tokens) == (900, words, 700)
    (only,) = handoff_sections(CompressionSettings(user_words_max_tokens=0))
    assert isinstance(only, FactLedger) and only.words is None
    assert handoff_sections(CompressionSettings(fact_ledger=False)) == ()
