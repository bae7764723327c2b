"""The span-wide prefilter (`may_hold_facts`) and the span shared within one compression (`read_span`)."""
from __future__ import annotations

from agent.context._span import read_span
from agent.context._statements import may_hold_fact, may_hold_facts
from agent.messages import assistant, user

TEXTS = [
    "lol same here",
    "the door code is 4471",
    "ann: never push to main",
    "ok thanks",
    "the password is swordfish",
    "İstanbul is nice",  # lower() makes this longer: offsets no longer line up
    "FooBar broke again",
    "我们决定用东京区域",
    "",
    "don’t deploy on fridays",
    "see you tomorrow",
]


def test_span_prefilter_rules_out_only_what_the_message_prefilter_rules_out() -> None:
    hits = may_hold_facts(TEXTS)
    assert len(hits) == len(TEXTS)
    for text, hit in zip(TEXTS, hits, strict=True):
        if may_hold_fact(text, text.lower()):
            assert hit, text


def test_span_prefilter_rules_out_chatter() -> None:
    texts = ["lol same here", "ok thanks", "see you tomorrow", "the door code is 4471", "nice one"]
    assert may_hold_facts(texts) == [False, False, False, True, False]
    assert may_hold_facts([]) == []


def test_a_word_inside_another_word_is_no_hit() -> None:
    # "pin" and "no" are prefilter words; "spinning" and "nothing" hold them only as parts.
    assert may_hold_facts(["spinning up", "nothing here"]) == [False, False]


def test_the_span_is_read_once_for_the_same_messages() -> None:
    dropped = [user("the door code is 4471"), assistant("noted"), user("thanks")]
    first = read_span(dropped, None)
    assert read_span(list(dropped), None) is first
    changed = [*dropped[:2], user("thanks")]  # an equal message, but not the same one
    again = read_span(changed, None)
    assert again is not first and again == first
    assert read_span(changed, "previous handoff") is not again
