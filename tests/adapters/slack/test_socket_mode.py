"""Socket Mode: real AsyncSocketModeHandler against the fake's websocket, including a dropped connection."""
from __future__ import annotations

import asyncio

import pytest

from adapters.base import AdapterError, InboundMessage
from adapters.slack import SlackAdapter
from tests.fakes.slack_api import APP_TOKEN, BOT_USER_ID, FakeSlack, event_callback

WAIT = 5.0


def _dm(text: str, ts: str) -> dict[str, object]:
    return {"type": "message", "channel": "D1", "channel_type": "im", "user": "U2", "text": text, "ts": ts}


async def test_socket_events_are_delivered_and_acked(
    fake_slack: FakeSlack, socket_adapter: tuple[SlackAdapter, asyncio.Queue[InboundMessage]]
) -> None:
    """An events_api envelope is acked by envelope_id and its message delivered; routes() is empty."""
    adapter, queue = socket_adapter
    envelope = await fake_slack.socket_event(event_callback(_dm("over the socket", "500.1"), event_id="EvW1"))
    message = await asyncio.wait_for(queue.get(), WAIT)
    await fake_slack.wait_until(lambda: envelope in fake_slack.acks)
    assert (message.text, message.chat_type, message.user_name) == ("over the socket", "dm", "bob")
    assert fake_slack.acks[envelope] == {"envelope_id": envelope}
    assert fake_slack.calls_to("apps.connections.open")[0].token == APP_TOKEN
    assert adapter.routes() == []


async def test_socket_mode_answers_one_post_once(
    fake_slack: FakeSlack, socket_adapter: tuple[SlackAdapter, asyncio.Queue[InboundMessage]]
) -> None:
    """app_mention + message for one post over Socket Mode deliver one message; both envelopes are acked."""
    _, queue = socket_adapter
    post = {"type": "message", "channel": "C9", "channel_type": "channel", "user": "U1",
            "text": f"<@{BOT_USER_ID}> hi", "ts": "501.1"}
    mention = {key: value for key, value in post.items() if key != "channel_type"} | {"type": "app_mention"}
    first = await fake_slack.socket_event(event_callback(mention, event_id="EvW2"))
    second = await fake_slack.socket_event(event_callback(post, event_id="EvW3"))
    await fake_slack.socket_event(event_callback(_dm("sentinel", "501.2"), event_id="EvW4"))
    got = [await asyncio.wait_for(queue.get(), WAIT) for _ in range(2)]
    await fake_slack.wait_until(lambda: {first, second} <= fake_slack.acks.keys())
    assert [(m.text, m.mentions_bot) for m in got] == [("hi", True), ("sentinel", False)]


async def test_socket_mode_reconnects_after_the_server_drops_it(
    fake_slack: FakeSlack, socket_adapter: tuple[SlackAdapter, asyncio.Queue[InboundMessage]]
) -> None:
    """When the fake closes the websocket the client opens a new connection and later events still arrive."""
    _, queue = socket_adapter
    await fake_slack.socket_event(event_callback(_dm("before", "502.1"), event_id="EvD1"))
    assert (await asyncio.wait_for(queue.get(), WAIT)).text == "before"
    await fake_slack.drop_socket()
    await fake_slack.wait_until(lambda: fake_slack.connections == 2)
    await fake_slack.socket_event(event_callback(_dm("after", "502.2"), event_id="EvD2"))
    assert (await asyncio.wait_for(queue.get(), WAIT)).text == "after"
    assert len(fake_slack.calls_to("apps.connections.open")) == 2


async def test_socket_adapter_stop_and_start_again(fake_slack: FakeSlack) -> None:
    """stop() closes the socket; a second start() connects anew and delivers again."""
    adapter = SlackAdapter(bot_token="xoxb-fake-bot-token", app_token=APP_TOKEN, mode="socket",
                           api_base_url=fake_slack.api_base_url)
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(queue)
    await adapter.stop()
    await adapter.start(queue)
    try:
        await fake_slack.wait_until(lambda: fake_slack.connections == 2)
        await fake_slack.socket_event(event_callback(_dm("again", "503.1"), event_id="EvR1"))
        assert (await asyncio.wait_for(queue.get(), WAIT)).text == "again"
    finally:
        await adapter.stop()


async def test_bad_app_token_fails_start_and_probe_clearly(fake_slack: FakeSlack) -> None:
    """A wrong app token makes start() raise and probe() report invalid_auth naming platforms.slack.app_token."""
    adapter = SlackAdapter(bot_token="xoxb-fake-bot-token", app_token="xapp-wrong", mode="socket",
                           api_base_url=fake_slack.api_base_url)
    with pytest.raises(AdapterError) as caught:
        await adapter.start(asyncio.Queue())
    result = await adapter.probe()
    expected = "slack apps.connections.open failed: invalid_auth: check platforms.slack.app_token"
    assert (str(caught.value), result.ok, result.detail) == (expected, False, expected)
    assert fake_slack.connections == 0


async def test_event_sent_right_after_hello_is_not_lost(fake_slack: FakeSlack) -> None:
    """An envelope Slack pushes the instant the socket opens (during start()) is still delivered."""
    fake_slack.on_connect.append(event_callback(_dm("queued while offline", "504.1"), event_id="EvQ1"))
    adapter = SlackAdapter(bot_token="xoxb-fake-bot-token", app_token=APP_TOKEN, mode="socket",
                           api_base_url=fake_slack.api_base_url)
    queue: asyncio.Queue[InboundMessage] = asyncio.Queue()
    await adapter.start(queue)
    try:
        assert (await asyncio.wait_for(queue.get(), WAIT)).text == "queued while offline"
    finally:
        await adapter.stop()
