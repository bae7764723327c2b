"""Outbound calls through the real slack_sdk client to the fake Web API: send, split, 429, edit, delete, probe."""
from __future__ import annotations

import pytest

from adapters.base import AdapterError, ChatTarget, SentMessage
from adapters.slack import SLACK_MESSAGE_CHARS, SlackAdapter
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, Failure, FakeSlack

from .conftest import Harness

CHANNEL = ChatTarget("slack", "C1", "200.1")


async def test_send_posts_mrkdwn_into_the_thread(events: Harness) -> None:
    """send() converts Markdown to mrkdwn and posts with thread_ts = thread_id, with the bot token."""
    sent = await events.adapter.send(CHANNEL, "**done** see [docs](https://x.io) & <this>")
    call = events.fake.calls_to("chat.postMessage")[-1]
    assert (call.params["text"], call.params["thread_ts"], call.params["channel"], call.token) == (
        "*done* see <https://x.io|docs> &amp; &lt;this&gt;", "200.1", "C1", BOT_TOKEN)
    assert sent == [SentMessage(target=CHANNEL, message_id=call_ts(events, 0))]


def call_ts(events: Harness, index: int) -> str:
    return f"{1_700_000_000 + index + 1}.000100"


async def test_send_with_reply_to_and_no_thread_replies_in_that_thread(events: Harness) -> None:
    """A reply_to without a thread posts into the replied message's thread."""
    sent = await events.adapter.send(ChatTarget("slack", "C1"), "ok", reply_to="300.5")
    assert events.fake.calls_to("chat.postMessage")[-1].params["thread_ts"] == "300.5"
    assert sent[0].target.thread_id == "300.5"


async def test_long_reply_is_split_under_the_limit(events: Harness) -> None:
    """A reply longer than 4,000 characters goes out as several messages, each within the limit, nothing lost."""
    paragraphs = [f"paragraph {i} " + "word " * 150 for i in range(12)]
    sent = await events.adapter.send(CHANNEL, "\n\n".join(paragraphs))
    texts = [call.params["text"] for call in events.fake.calls_to("chat.postMessage")]
    assert len(sent) == len(texts) >= 3
    assert all(len(text) <= SLACK_MESSAGE_CHARS for text in texts)
    assert " ".join("".join(texts).split()) == " ".join("\n\n".join(paragraphs).split())


async def test_rate_limit_retry_after_is_honoured(events: Harness) -> None:
    """A 429 with Retry-After: 1 is retried once, no sooner than one second later, and succeeds."""
    events.fake.fail_next("chat.postMessage", Failure(status=429, headers={"Retry-After": "1"}))
    sent = await events.adapter.send(CHANNEL, "after the wait")
    first, second = events.fake.calls_to("chat.postMessage")
    assert len(sent) == 1
    assert second.at - first.at >= 1.0
    assert second.params["text"] == "after the wait"


async def test_rate_limit_longer_than_we_wait_surfaces_retry_after(events: Harness) -> None:
    """A 429 asking for longer than max_retry_after is raised as AdapterError with retry_after and status."""
    events.fake.fail_next("chat.postMessage", Failure(status=429, headers={"Retry-After": "30"}))
    with pytest.raises(AdapterError) as caught:
        await events.adapter.send(CHANNEL, "too soon")
    assert (caught.value.retry_after, caught.value.status, caught.value.platform) == (30.0, 429, "slack")
    assert len(events.fake.calls_to("chat.postMessage")) == 1


async def test_edits_in_one_channel_are_throttled(events: Harness) -> None:
    """Two quick edits in one channel reach Slack at least min_edit_interval apart, in order."""
    (sent,) = await events.adapter.send(CHANNEL, "draft")
    await events.adapter.edit(sent, "draft 2")
    await events.adapter.edit(sent, "**final**")
    first, second = events.fake.calls_to("chat.update")
    assert (first.params["text"], second.params["text"], second.params["ts"]) == ("draft 2", "*final*", sent.message_id)
    assert second.at - first.at >= 0.3


async def test_delete_calls_chat_delete_and_tolerates_missing(events: Harness) -> None:
    """delete() calls chat.delete; a message already gone counts as deleted; other errors raise."""
    sent = SentMessage(target=CHANNEL, message_id="400.1")
    await events.adapter.delete(sent)
    events.fake.fail_next("chat.delete", Failure(status=200, error="message_not_found"))
    await events.adapter.delete(sent)
    events.fake.fail_next("chat.delete", Failure(status=200, error="cant_delete_message"))
    with pytest.raises(AdapterError, match="cant_delete_message"):
        await events.adapter.delete(sent)
    assert [call.params["ts"] for call in events.fake.calls_to("chat.delete")] == ["400.1"] * 3


async def test_typing_is_a_no_op(events: Harness) -> None:
    """typing() makes no API call: Slack bots have no typing indicator here."""
    before = len(events.fake.calls)
    await events.adapter.typing(CHANNEL)
    assert len(events.fake.calls) == before


async def test_empty_text_is_refused(events: Harness) -> None:
    """Sending blank text raises a clear AdapterError instead of Slack's no_text."""
    with pytest.raises(AdapterError, match="empty"):
        await events.adapter.send(CHANNEL, "  \n")


async def test_probe_ok(fake_slack: FakeSlack) -> None:
    """probe() runs auth.test and reports the bot's identity."""
    adapter = SlackAdapter(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, api_base_url=fake_slack.api_base_url)
    result = await adapter.probe()
    assert (result.ok, result.platform) == (True, "slack")
    assert "@chorus (UBOT)" in result.detail


async def test_probe_invalid_auth_names_the_key_not_the_token(fake_slack: FakeSlack) -> None:
    """With a wrong token probe() says invalid_auth and which config key to fix, never the token."""
    adapter = SlackAdapter(bot_token="xoxb-wrong-secret", signing_secret=SIGNING_SECRET, api_base_url=fake_slack.api_base_url)
    result = await adapter.probe()
    assert (result.ok, result.detail) == (False, "slack auth.test failed: invalid_auth: check platforms.slack.bot_token")
    assert "xoxb" not in result.detail


async def test_probe_unreachable(fake_slack: FakeSlack) -> None:
    """An unreachable API is reported as such, not as a crash."""
    adapter = SlackAdapter(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, api_base_url="http://127.0.0.1:9/api/")
    result = await adapter.probe()
    assert (result.ok, "cannot reach the Slack API" in result.detail) == (False, True)


async def test_start_with_a_bad_token_fails_clearly(fake_slack: FakeSlack) -> None:
    """start() with an invalid token raises AdapterError naming the config key."""
    import asyncio

    adapter = SlackAdapter(bot_token="xoxb-wrong", signing_secret=SIGNING_SECRET, api_base_url=fake_slack.api_base_url)
    with pytest.raises(AdapterError, match="invalid_auth: check platforms.slack.bot_token"):
        await adapter.start(asyncio.Queue())


async def test_start_twice_is_refused(events: Harness) -> None:
    """A second start() without stop() raises a precise error."""
    import asyncio

    with pytest.raises(RuntimeError, match="already started"):
        await events.adapter.start(asyncio.Queue())


def test_constructor_refuses_missing_secrets() -> None:
    """Events mode without a signing secret, or socket mode without an app token, fails at once."""
    with pytest.raises(ValueError, match="signing secret"):
        SlackAdapter(bot_token=BOT_TOKEN)
    with pytest.raises(ValueError, match="app-level token"):
        SlackAdapter(bot_token=BOT_TOKEN, mode="socket")
