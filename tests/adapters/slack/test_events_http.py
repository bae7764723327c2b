"""Events API over HTTP: real slack-bolt behind our aiohttp route, signed requests from a fake Slack."""
from __future__ import annotations

import json
import time

from structlog.testing import capture_logs

from tests.fakes.slack_api import BOT_USER_ID, event_callback, signed_headers

from .conftest import Harness


def _msg(text: str, ts: str, *, channel: str = "C1", user: str = "U1", **extra: object) -> dict[str, object]:
    return {"type": "message", "channel": channel, "channel_type": "channel", "user": user, "text": text, "ts": ts, **extra}


async def test_dm_is_delivered_as_dm_with_display_name(events: Harness) -> None:
    """A DM arrives as chat_type dm, no thread, with the sender's display name from users.info."""
    status = await events.post_event(
        {"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "hi &amp; hello", "ts": "100.1"},
        event_id="Ev1",
    )
    message = await events.next_message()
    assert status == 200
    assert (message.chat_type, message.chat_id, message.thread_id) == ("dm", "D1", None)
    assert (message.user_id, message.user_name, message.text) == ("U1", "alice", "hi & hello")
    assert message.delivery_id == "slack:D1:100.1"


async def test_channel_message_without_mention_is_delivered_unmentioned(events: Harness) -> None:
    """A plain channel post is delivered with mentions_bot False and no thread: the gateway decides."""
    await events.post_event(_msg("just chatting", "100.2"), event_id="Ev2")
    message = await events.next_message()
    assert (message.chat_type, message.mentions_bot, message.thread_id, message.text) == (
        "group", False, None, "just chatting")


async def test_channel_mention_is_stripped_and_opens_a_thread(events: Harness) -> None:
    """A top-level `<@BOT>` post is mentions_bot, the mention is stripped, and its ts becomes the thread."""
    await events.post_event(_msg(f"<@{BOT_USER_ID}> what time is it?", "100.3"), event_id="Ev3")
    message = await events.next_message()
    assert (message.mentions_bot, message.text, message.thread_id) == (True, "what time is it?", "100.3")


async def test_app_mention_and_message_for_one_post_deliver_once(events: Harness) -> None:
    """Slack's app_mention + message pair for one post yields exactly one InboundMessage."""
    post = _msg(f"<@{BOT_USER_ID}> hello", "100.4")
    mention = {**post, "type": "app_mention"}
    del mention["channel_type"]
    assert await events.post_event(mention, event_id="EvA") == 200
    assert await events.post_event(post, event_id="EvB") == 200
    await events.post_event(_msg("sentinel", "100.5"), event_id="EvC")
    first, second = await events.next_message(), await events.next_message()
    assert (first.text, first.mentions_bot, first.chat_type, first.delivery_id) == ("hello", True, "group", "slack:C1:100.4")
    assert second.text == "sentinel"
    assert events.queue.empty()


async def test_reply_in_a_bot_thread_is_replies_to_bot(events: Harness) -> None:
    """A thread reply whose parent the bot posted is replies_to_bot, with thread_id = thread_ts."""
    await events.post_event(
        _msg("and tomorrow?", "100.7", thread_ts="100.6", parent_user_id=BOT_USER_ID), event_id="Ev7"
    )
    message = await events.next_message()
    assert (message.thread_id, message.replies_to_bot, message.mentions_bot, message.reply_to_message_id) == (
        "100.6", True, False, "100.6")


async def test_thread_the_bot_answered_in_counts_as_reply(events: Harness) -> None:
    """After the bot posts in a user's thread, later replies there are replies_to_bot."""
    await events.post_event(_msg("before", "101.1", thread_ts="101.0", parent_user_id="U2"), event_id="Ev8")
    before = await events.next_message()
    await events.adapter.send(before.target, "answer")
    await events.post_event(_msg("after", "101.2", thread_ts="101.0", parent_user_id="U2"), event_id="Ev9")
    after = await events.next_message()
    assert (before.replies_to_bot, after.replies_to_bot) == (False, True)


async def test_two_threads_have_two_thread_ids(events: Harness) -> None:
    """Replies in different threads of one channel carry different thread_ids."""
    await events.post_event(_msg("in A", "102.1", thread_ts="102.0"), event_id="EvT1")
    await events.post_event(_msg("in B", "103.1", thread_ts="103.0"), event_id="EvT2")
    first, second = await events.next_message(), await events.next_message()
    assert {(first.text, first.thread_id), (second.text, second.thread_id)} == {("in A", "102.0"), ("in B", "103.0")}


async def test_own_messages_and_unhandled_subtypes_are_ignored(events: Harness) -> None:
    """The bot's own post, an edit that is no edit, and a join are acked and not delivered; another bot's is, marked."""
    statuses = [
        await events.post_event(_msg("mine", "104.1", user=BOT_USER_ID), event_id="EvS1"),
        await events.post_event({**_msg("other bot", "104.2"), "subtype": "bot_message", "bot_id": "B9"}, event_id="EvS2"),
        await events.post_event({**_msg("edited", "104.3"), "subtype": "message_changed"}, event_id="EvS3"),
        await events.post_event({**_msg("joined", "104.4"), "subtype": "channel_join"}, event_id="EvS4"),
        await events.post_event({"type": "reaction_added", "user": "U1", "reaction": "+1"}, event_id="EvS5"),
    ]
    await events.post_event(_msg("sentinel", "104.9"), event_id="EvS9")
    assert statuses == [200, 200, 200, 200, 200]
    other = await events.next_message()
    assert (other.text, other.sender_is_bot) == ("other bot", True)
    assert (await events.next_message()).text == "sentinel"


async def test_a_thread_reply_quotes_the_thread_parent(events: Harness) -> None:
    """The first reply seen in a thread carries the thread's first post as its quote; later ones do not (the
    session holds it), and nothing is fetched again."""
    events.fake.threads["106.0"] = {"type": "message", "user": "U2", "text": "the plan: ship Friday", "ts": "106.0"}
    events.fake.users["U2"] = "Bob"
    await events.post_event(_msg("why Friday?", "106.1", thread_ts="106.0"), event_id="EvQ1")
    first = await events.next_message()
    await events.post_event(_msg("and then?", "106.2", thread_ts="106.0"), event_id="EvQ2")
    second = await events.next_message()
    assert first.quote is not None and second.quote is None
    assert (first.quote.author_name, first.quote.text, first.quote.message_id) == ("Bob", "the plan: ship Friday", "106.0")
    assert len(events.fake.calls_to("conversations.replies")) == 1


async def test_url_verification_is_answered(events: Harness) -> None:
    """Slack's url_verification handshake gets its challenge back."""
    status, body = await events.post({"type": "url_verification", "token": "t", "challenge": "abc123"})
    assert (status, json.loads(body)) == (200, {"challenge": "abc123"})


async def test_bad_signature_is_401_and_nothing_is_delivered(events: Harness) -> None:
    """A request signed with the wrong secret is refused with 401 and never reaches the queue."""
    body = json.dumps(event_callback(_msg("forged", "105.1"), event_id="EvX"))
    status, text = await events.post_raw(body, signed_headers(body, secret="wrong-secret"))
    missing_status, _ = await events.post_raw(body, {"Content-Type": "application/json"})
    await events.post_event(_msg("sentinel", "105.2"), event_id="EvY")
    assert (status, missing_status) == (401, 401)
    assert "signature" in json.loads(text)["error"]
    assert (await events.next_message()).text == "sentinel"


async def test_stale_timestamp_is_401(events: Harness) -> None:
    """A correctly signed request older than five minutes is refused with 401."""
    body = json.dumps(event_callback(_msg("replayed", "106.1"), event_id="EvZ"))
    status, _ = await events.post_raw(body, signed_headers(body, timestamp=int(time.time()) - 400))
    await events.post_event(_msg("sentinel", "106.2"), event_id="EvZ2")
    assert status == 401
    assert (await events.next_message()).text == "sentinel"


async def test_malformed_body_is_400_and_the_endpoint_keeps_working(events: Harness) -> None:
    """A signed non-JSON body gets 400 naming the problem; the next good request is delivered."""
    bad = '{"type": "event_callback", "event": '
    status, text = await events.post_raw(bad, signed_headers(bad))
    not_object = "[1, 2]"
    status2, _ = await events.post_raw(not_object, signed_headers(not_object))
    await events.post_event(_msg("still alive", "107.1"), event_id="EvM")
    assert (status, status2) == (400, 400)
    assert json.loads(text)["error"].startswith("malformed JSON body")
    assert (await events.next_message()).text == "still alive"


async def test_slack_retry_of_a_seen_event_is_acked_not_redelivered(events: Harness) -> None:
    """An X-Slack-Retry-Num redelivery of a seen event_id gets 200 and is not delivered again."""
    event = _msg("once only", "108.1")
    assert await events.post_event(event, event_id="EvR") == 200
    first = await events.next_message()
    with capture_logs() as logs:
        retry = await events.post_event(
            event, event_id="EvR", extra={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        )
    await events.post_event(_msg("sentinel", "108.2"), event_id="EvR2")
    assert (first.text, retry) == ("once only", 200)
    assert [entry["event"] for entry in logs] == ["slack.events.retry_acked"]  # acked before reaching Bolt
    assert (await events.next_message()).text == "sentinel"
    assert events.queue.empty()


async def test_stopped_adapter_answers_503(events: Harness) -> None:
    """After stop(), signed events get 503 instead of being dropped silently."""
    await events.adapter.stop()
    status = await events.post_event(_msg("late", "109.1"), event_id="EvL")
    assert status == 503
