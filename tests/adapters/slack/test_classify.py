"""`classify`: what a Slack event means, as a value (no network)."""
from __future__ import annotations

import pytest

from adapters.decisions import Accepted, Ignored, RecentKeys
from adapters.slack._events import classify, classify_edit


def _event(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1",
                               "text": "hi", "ts": "1.1"}
    return {**base, **fields}


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (_event(channel="D1", channel_type="im"), ("dm", None, False, False)),
        (_event(channel_type="mpim", channel="G1"), ("group", None, False, False)),
        (_event(text="<@UBOT> hi"), ("group", "1.1", True, False)),
        (_event(type="app_mention", channel_type=None, text="<@UBOT> hi"), ("group", "1.1", True, False)),
        (_event(channel="D1", channel_type="im", text="<@UBOT> hi"), ("dm", None, True, False)),
        (_event(thread_ts="0.5", parent_user_id="UBOT"), ("group", "0.5", False, True)),
        (_event(thread_ts="0.5", parent_user_id="U2"), ("group", "0.5", False, False)),
        (_event(thread_ts="0.7", parent_user_id="U2"), ("group", "0.7", False, True)),  # bot posted in 0.7
        (_event(subtype="thread_broadcast", thread_ts="0.5"), ("group", "0.5", False, False)),
    ],
)
def test_accepted_events(event: dict[str, object], expected: tuple[object, ...]) -> None:
    """chat type, thread id, mention and reply flags follow the documented rules."""
    decision = classify(event, bot_user_id="UBOT", bot_id="BBOT", bot_threads={"0.7"})
    assert isinstance(decision, Accepted)
    message = decision.message
    assert (message.chat_type, message.thread_id, message.mentions_bot, message.replies_to_bot) == expected


def test_thread_replies_off_keeps_mentions_top_level() -> None:
    """With thread_replies=False a top-level mention keeps thread_id None."""
    decision = classify(_event(text="<@UBOT> hi"), bot_user_id="UBOT", thread_replies=False)
    assert isinstance(decision, Accepted) and decision.message.thread_id is None


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (_event(user="UBOT"), "own message"),
        (_event(bot_id="BBOT", subtype="bot_message"), "own message"),
        (_event(subtype="message_changed"), "subtype message_changed not handled"),
        (_event(subtype="channel_join"), "subtype channel_join not handled"),
        (_event(user=None), "missing channel, ts or user"),
        (_event(ts="soon"), "ts 'soon' is not a Slack timestamp"),
    ],
)
def test_ignored_events(event: dict[str, object], reason: str) -> None:
    """Own, edited (through `classify`), join and malformed events are ignored with a reason."""
    assert classify(event, bot_user_id="UBOT", bot_id="BBOT") == Ignored(reason)


def test_recent_keys_forgets_the_oldest() -> None:
    """RecentKeys reports duplicates and stays bounded, forgetting the oldest key first."""
    keys = RecentKeys(2)
    assert [keys.add("a"), keys.add("a"), keys.add("b"), keys.add("c")] == [True, False, True, True]
    assert ("a" in keys, "b" in keys, "c" in keys, len(keys)) == (False, True, True, 2)


def test_another_bot_is_passed_on_marked() -> None:
    """Another bot's post (a `bot_message` without a user) arrives with `sender_is_bot` and its username."""
    decision = classify(_event(user=None, bot_id="B2", subtype="bot_message", username="deploybot"),
                        bot_user_id="UBOT", bot_id="BBOT")
    assert isinstance(decision, Accepted)
    assert (decision.message.sender_is_bot, decision.message.user_id, decision.message.user_name) == (
        True, "B2", "deploybot")


def test_an_edit_carries_the_new_and_the_earlier_text() -> None:
    """`message_changed` of a user's post: the new text, `edited`, the earlier text, an id of its own."""
    event = {"type": "message", "subtype": "message_changed", "channel": "C1", "channel_type": "channel",
             "ts": "9.9", "event_ts": "9.9",
             "message": {"type": "message", "user": "U1", "text": "meet at 6", "ts": "1.1", "edited": {"ts": "9.9"}},
             "previous_message": {"type": "message", "user": "U1", "text": "meet at 5", "ts": "1.1"}}
    decision = classify_edit(event, bot_user_id="UBOT", bot_id="BBOT")
    assert isinstance(decision, Accepted)
    message = decision.message
    assert (message.edited, message.text, message.previous_text, message.message_id, message.delivery_id) == (
        True, "meet at 6", "meet at 5", "1.1", "slack:C1:1.1:edit:9.9")


def test_an_unfurl_is_no_edit() -> None:
    """`message_changed` without `edited` (a link preview added) is ignored."""
    event = {"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "9.9",
             "message": {"type": "message", "user": "U1", "text": "see x", "ts": "1.1"},
             "previous_message": {"type": "message", "user": "U1", "text": "see x", "ts": "1.1"}}
    assert isinstance(classify_edit(event, bot_user_id="UBOT"), Ignored)
