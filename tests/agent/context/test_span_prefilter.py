"""The message prefilter (`may_hold_fact`) and the span shared within one compression (`read_span`)."""
from __future__ import annotations

import random

from agent.context import _span
from agent.context._span import read_span
from agent.context._statements import may_hold_fact
from agent.messages import assistant, user


def _gate(text: str) -> bool:
    return may_hold_fact(text, text.lower())


def test_the_prefilter_rules_out_chatter() -> None:
    texts = ["lol same here", "ok thanks", "see you tomorrow", "the door code is 4471", "nice one"]
    assert [_gate(text) for text in texts] == [False, False, False, True, False]


def test_the_prefilter_lets_through_values_rule_words_and_cased_shapes() -> None:
    texts = ["ann: never push to main", "the password is swordfish", "FooBar broke again", "我们决定用东京区域"]
    assert [_gate(text) for text in texts] == [True, True, True, True]


def test_a_word_inside_another_word_is_no_hit() -> None:
    # "pin" and "no" are prefilter words; "spinning" and "nothing" hold them only as parts.
    assert [_gate("spinning up"), _gate("nothing here")] == [False, False]


def test_an_addressee_is_no_value() -> None:
    assert _gate("DG19075: why?") is False
    assert _gate("DG19075: the port is 8443") is True


def test_the_span_is_read_once_for_the_same_messages() -> None:
    dropped = [user("the door code is 4471"), assistant("noted"), user("thanks")]
    first = read_span(dropped, None)
    assert read_span(list(dropped), None) is first
    changed = [*dropped[:2], user("thanks")]  # an equal message, but not the same one
    again = read_span(changed, None)
    assert again is not first and again == first
    assert read_span(changed, "previous handoff") is not again



def test_the_speaker_names_are_read_until_too_few_lines_can_have_one() -> None:
    """`_colon_names` stops early only where the full count falls short of the share a shared session needs."""
    rng = random.Random(31)
    pieces = ("ann: ", "bob: ", "cy: ", "[dan] ", "hi", " x", "eve:", ": ")
    stopped = 0
    for _ in range(3000):
        users = ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 3))) for _ in range(rng.randrange(0, 12))]
        named = [m.group(1) for text in users if (m := _span._COLON_NAME.match(text)) is not None]
        found = _span._colon_names(users)
        if found is None:
            stopped += 1
            assert len(named) < _span.SHARED_SHARE * len(users)
        else:
            assert found == named
    assert stopped > 500
